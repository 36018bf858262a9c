"""Synthetic weights stated by the export: decided by what ran, through the real CLI.

Two real quick runs of the same tiny CNN under LoadGen's resnet50 key: one as the zoo builds
it, one from a model file (`--model`) holding the very same graph. The zoo run's export says
"Synthetic weights: accuracy not measurable" in its README.md, accuracy.txt and sw_notes; the
file's export claims nothing, though its bytes are the zoo's: provenance decides, never the
content or the path. A zoo entry marked as trained (``synthetic=False``) claims nothing either.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import MappingProxyType

import onnx
import pytest

from harness.cli import main
from harness.models import zoo
from harness.submission.documents import SYNTHETIC_WEIGHTS
from tests.conftest import REPO, harness_dir, write_scenario

pytestmark = pytest.mark.slow
EXAMPLE = REPO / "scenarios" / "system-description.example.yaml"
SCENARIO = """
name: tiny-as-resnet50
scenario: SingleStream
model: {zoo: tiny, loadgen_name: resnet50}
batch_size: 1
trials: 1
data: {total_sample_count: 16}
warmup: {min_queries: 5, min_duration_ms: 100}
quick: {min_duration_ms: 200, min_query_count: 64, performance_sample_count: 16,
        accuracy_sample_count: 16}
"""
RESULT = "open/Org/systems/vm1.json", "open/Org/results/vm1/resnet/SingleStream"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> dict[str, Path]:
    """A zoo run and a `--model` run of the same tiny graph (its file written from the zoo)."""
    base = tmp_path_factory.mktemp("weights")
    scenario = write_scenario(base / "tiny.yaml", SCENARIO)
    model = base / "mine.onnx"
    onnx.save(zoo.ZOO["tiny"].builder(0), model)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        zoo_run = harness_dir(["run", str(scenario), "--out", str(base / "zoo")])
        file_run = harness_dir(
            ["run", str(scenario), "--model", str(model), "--out", str(base / "file")]
        )
    return {"zoo": zoo_run, "file": file_run}


def _export(run: Path, out: Path) -> tuple[dict[str, str], str, list[str], dict[str, str]]:
    """(system JSON, README.md, accuracy.txt's lines, measurements.json) of a CLI export."""
    names = ["--org", "Org", "--system", "vm1", "--division", "open", "--force-quick"]
    described = ["--system-description", str(EXAMPLE)]
    assert main(["submission", str(run), *names, *described, "--out", str(out)]) == 0
    system, result = (out / part for part in RESULT)
    return (
        json.loads(system.read_text()),
        (result / "README.md").read_text(),
        (result / "accuracy/accuracy.txt").read_text().splitlines(),
        json.loads((result / "measurements.json").read_text()),
    )


def test_a_zoo_model_states_its_synthetic_weights_everywhere(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    system, readme, accuracy, measured = _export(runs["zoo"], tmp_path / "tree")
    statement = accuracy[0]
    assert statement.startswith(f"{SYNTHETIC_WEIGHTS} (the beyond-tops zoo model 'tiny' is ")
    assert accuracy[2].startswith("hash=")  # MLPerf's hash line follows (no labels: no accuracy=)
    title, _, bold = readme.split("\n")[:3]  # bold, under the title
    assert title.startswith("# resnet SingleStream: vm1")
    assert bold.startswith(f"**{SYNTHETIC_WEIGHTS}**")
    assert f"resnet SingleStream: {statement}." in system["sw_notes"]
    assert SYNTHETIC_WEIGHTS in measured["starting_weights_filename"]


def test_a_model_file_makes_no_claim_though_its_bytes_are_the_zoos(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    system, readme, accuracy, measured = _export(runs["file"], tmp_path / "tree")
    assert measured["starting_weights_filename"] == "mine.onnx"
    results = [json.loads((run / "result.json").read_text()) for run in runs.values()]
    assert len({r["model"]["sha256"] for r in results}) == 1  # the same graph, byte for byte
    for text in (system["sw_notes"], readme, "\n".join(accuracy), json.dumps(measured)):
        assert SYNTHETIC_WEIGHTS not in text and "not trained" not in text
    assert accuracy[0].startswith("no accuracy= line")


def test_a_zoo_entry_with_trained_weights_makes_no_claim(
    runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trained = dataclasses.replace(zoo.ZOO["tiny"], synthetic=False)
    monkeypatch.setattr(zoo, "ZOO", MappingProxyType({**zoo.ZOO, "tiny": trained}))
    system, readme, accuracy, measured = _export(runs["zoo"], tmp_path / "tree")
    for text in (system["sw_notes"], readme, "\n".join(accuracy)):
        assert SYNTHETIC_WEIGHTS not in text
    assert measured["starting_weights_filename"].endswith("), with trained weights")
