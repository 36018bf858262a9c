"""`harness reproduce` on real tiny-model runs: reproduced, refused, changed jobs, bundles."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from harness.cli import main
from harness.errors import ERROR_CODES, BundleError
from harness.models.registry import zoo_model_path
from harness.models.validate import file_sha256
from harness.reproduce.rerun import checked_model, load_recorded
from harness.results.runfile import load_result
from tests.conftest import REPO, harness_dir, write_scenario

pytestmark = pytest.mark.slow
SCHEMA = REPO / "harness" / "schemas" / "reproduction.schema.json"
# Offline, about a second of LoadGen per test: throughput is steadier than a tail latency on a
# shared 2-core VM, and the reproduction is judged with a generous tolerance.
OFFLINE = """
name: tiny-reproduce
scenario: Offline
model: {zoo: tiny}
batch_size: 8
trials: 1
data: {total_sample_count: 64}
warmup: {min_queries: 5, min_duration_ms: 200}
quick: {min_duration_ms: 600, min_query_count: 200, performance_sample_count: 32,
        accuracy_sample_count: 16}
"""
GENEROUS = "offline=50%"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[Path]:
    """One real run, shared by the tests below (which never write into it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        root = tmp_path_factory.mktemp("recorded")
        scenario = write_scenario(root / "tiny-reproduce.yaml", OFFLINE)
        yield harness_dir(["run", str(scenario), "--out", str(root / "runs")])


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def _reproduce(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["reproduce", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _verdict(out: str) -> dict[str, Any]:
    path = Path(out.strip().splitlines()[-1])
    assert path.name == "reproduction.json"
    data: dict[str, Any] = json.loads(path.read_text())
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    return data


def test_a_run_reproduces_in_a_new_group_with_the_recorded_job(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _tree(recorded)
    out_root = tmp_path / "repro"
    args = [str(recorded), "--trials", "2", "--tolerance", GENEROUS, "--out", str(out_root)]
    code, out, _ = _reproduce(args, capsys)
    assert code == 0, out
    data = _verdict(out)
    assert data["verdict"] == "REPRODUCED" and data["reasons"] == []
    assert (data["metric"], data["tolerance"]) == ("samples_per_second", 0.5)
    assert data["recorded_values"] == [load_result(recorded).samples_per_second]
    assert len(data["reproduced"]["values"]) == 2 and data["reproduced_requested"] == 2
    assert data["welch"] is None
    assert "reproduce tiny-reproduce (Offline, throughput): REPRODUCED" in out
    assert "over 2 of 2 trials" in out and "CoV" in out
    # a new trials group under --out, beside the verdict; the record is untouched
    (group,) = out_root.iterdir()
    assert "-tiny-Offline-reproduce-" in group.name
    assert sorted(p.name for p in group.iterdir()) == [
        "reproduction.json",
        "trial-1",
        "trial-2",
        "trials.json",
    ]
    assert _tree(recorded) == before
    # exactly the recorded job: the same resolved scenario, profile, target and model
    old = json.loads((recorded / "job.json").read_text())
    for trial in ("trial-1", "trial-2"):
        new = json.loads((group / trial / "job.json").read_text())
        for key in ("scenario", "profile", "hw", "strict", "model_override", "scenario_path"):
            assert new[key] == old[key], key
        assert load_result(group / trial).model.sha256 == load_result(recorded).model.sha256


def test_a_bundle_with_a_swapped_model_is_not_comparable(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, bundle = tmp_path / "key", tmp_path / "run.tar"
    assert main(["keygen", "--out", str(key)]) == 0
    assert main(["bundle", str(recorded), "--key", str(key), "--out", str(bundle)]) == 0
    other = zoo_model_path("tiny", seed=1, root=tmp_path / "other")  # other weights
    want = load_result(recorded).precision.source_sha256
    got = file_sha256(other)
    assert got != want
    args = [str(bundle), "--trust", f"{key}.pub", "--model", str(other), "--trials", "1"]
    capsys.readouterr()
    code, out, _ = _reproduce(
        [*args, "--tolerance", GENEROUS, "--out", str(tmp_path / "r")], capsys
    )
    assert code == 31, out
    data = _verdict(out)
    assert data["verdict"] == "NOT COMPARABLE" and data["ratio"] is not None
    assert f"source model sha256: {want!r} != {got!r}" in data["reasons"]


def test_a_missing_model_file_is_refused_before_anything_runs(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing, out_root = tmp_path / "gone.onnx", tmp_path / "repro"
    code, _, err = _reproduce(
        [str(recorded), "--model", str(missing), "--out", str(out_root)], capsys
    )
    assert code == 3  # ModelError
    assert err.startswith(f"error: --model {missing}: no such file; pass the file")
    assert not out_root.exists()


def test_the_recorded_models_file_is_found_by_its_sha256(recorded: Path, tmp_path: Path) -> None:
    record = load_recorded(recorded)
    assert (record.is_group, record.requested, record.run_dirs) == (False, 1, (recorded,))
    assert checked_model(record, None) == record.run_request  # the zoo model, built again or cached
    copy = tmp_path / "mine.onnx"
    shutil.copyfile(zoo_model_path("tiny"), copy)
    assert checked_model(record, copy).model_override == copy


def test_a_job_that_no_longer_matches_its_logs_is_not_comparable(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The job file says 700 ms, LoadGen's log of the recorded run says 600 ms: the
    # reproduction runs the job as it stands, and its log then differs from the record's.
    changed = tmp_path / "changed"
    shutil.copytree(recorded, changed)
    job = json.loads((changed / "job.json").read_text())
    job["scenario"]["quick"]["min_duration_ms"] = 700
    (changed / "job.json").write_text(json.dumps(job))
    out_root = tmp_path / "repro"
    args = [str(changed), "--trials", "1", "--tolerance", GENEROUS, "--out", str(out_root)]
    code, out, _ = _reproduce(args, capsys)
    assert code == 31, out
    data = _verdict(out)
    assert data["verdict"] == "NOT COMPARABLE"
    assert "LoadGen setting min_duration_ms: 600 != 700" in data["reasons"]
    assert data["ratio"] is not None  # still shown
    assert "  reason       LoadGen setting min_duration_ms: 600 != 700" in out


def test_a_signed_bundle_reproduces_and_a_tampered_one_is_refused(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, bundle = tmp_path / "key", tmp_path / "run.tar"
    assert main(["keygen", "--out", str(key)]) == 0
    assert main(["bundle", str(recorded), "--key", str(key), "--out", str(bundle)]) == 0
    capsys.readouterr()
    out_root = tmp_path / "repro"
    trust = ["--trust", f"{key}.pub"]
    args = [str(bundle), *trust, "--trials", "1", "--tolerance", GENEROUS, "--out", str(out_root)]
    code, out, _ = _reproduce(args, capsys)
    # the same job on the same model: comparable; reproduced or not is the noise of a shared VM
    data = _verdict(out)
    assert data["verdict"] != "NOT COMPARABLE" and code in (0, 30), out
    assert data["bundle"]["verified"] is True and data["bundle"]["trusted"] is True
    group = Path(data["reproduced_path"])
    assert (group / "recorded" / "MANIFEST.json").is_file()
    # One byte changed in the bundle: the verification error propagates, nothing is run.
    tampered = tmp_path / "tampered.tar"
    raw = bytearray(bundle.read_bytes())
    at = raw.index(b'"min_duration_ms"')
    raw[at + 1] = ord("M")
    tampered.write_bytes(bytes(raw))
    out_root = tmp_path / "refused"
    code, _, err = _reproduce([str(tampered), *trust, "--out", str(out_root)], capsys)
    bundle_codes = {e.code for cls, e in ERROR_CODES.items() if issubclass(cls, BundleError)}
    assert code in bundle_codes, err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert not out_root.exists() or not any(out_root.iterdir())
