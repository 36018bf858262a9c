"""Issue #27: `harness reproduce` of real llm-tiny runs and of published LLM records.

A local generative run is rerun from its job (the zoo's generator built again, its model.onnx
checked by sha256) and judged by the catalogue's headline for generated results: tokens/s.
A published LLM record (the v4.1 llama2-70b and mixtral-8x7b fixtures, imported) cannot be
rerun here: one `error:` line names its model, says why, and what to do instead.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import ModelError
from harness.models.registry import zoo_model_path
from harness.published.importer import import_mlperf
from harness.reproduce.codes import VERDICT_CODES
from tests.integration.llm_runs import llm_run
from tests.unit.test_published_import import FIXTURES, fixed_now

GENEROUS = "throughput=90%"  # the machine is shared: the verdict's metric is under test, not speed


@pytest.fixture
def llm_records(tmp_path: Path) -> list[Path]:
    """The imported fixtures that are LLM records (a generation block)."""
    written = import_mlperf(FIXTURES, tmp_path / "imports", now=fixed_now).written
    found = [p for p in written if json.loads((p / "published.json").read_text()).get("generation")]
    assert len(found) == 4
    return found


@pytest.mark.parametrize("with_model", [False, True])
def test_a_published_llm_record_is_refused_naming_its_model(
    with_model: bool,
    llm_records: list[Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for record in llm_records:
        data = json.loads((record / "published.json").read_text())
        model = ["--model", str(zoo_model_path("tiny"))] if with_model else []
        out = tmp_path / "runs"
        code = main(["reproduce", str(record), *model, "--out", str(out)])
        err = capsys.readouterr().err
        assert code == ModelError.exit_code
        (line,) = err.strip().splitlines()
        assert line.startswith(f"error: {record}: benchmark {data['benchmark']!r} is an LLM ")
        assert f"(LoadGen model {data['model']!r}), which is not in the zoo" in line
        assert "llm-tiny" in line and "cannot be rerun here; `harness compare`" in line
        assert not out.exists()  # refused before anything ran


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Path:
    """One real quick llm-tiny Offline run."""
    pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        return llm_run(tmp_path_factory.mktemp("recorded"), "Offline")


@pytest.mark.slow
def test_a_generative_run_is_rerun_and_judged_by_tokens_per_second(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    out = tmp_path / "repro"
    args = [str(recorded), "--trials", "1", "--tolerance", GENEROUS, "--out", str(out)]
    code = main(["reproduce", *args])
    printed = capsys.readouterr().out
    data = json.loads(Path(printed.strip().splitlines()[-1]).read_text())
    assert code == VERDICT_CODES[data["verdict"]].code
    assert data["verdict"] != "NOT COMPARABLE", printed
    assert (data["metric"], data["unit"]) == ("generation.tokens_per_second", "tokens/s")
    recorded_rate = json.loads((recorded / "result.json").read_text())["generation"]
    assert data["recorded_values"] == [recorded_rate["tokens_per_second"]]
    assert "reproduce llm-tiny-offline (Offline, token throughput): " in printed
    (group,) = out.iterdir()
    rerun = json.loads((group / "trial-1" / "result.json").read_text())
    assert rerun["generation"]["tokens_per_second"] == data["reproduced"]["values"][0]
    assert (
        rerun["model"]["sha256"]
        == json.loads((recorded / "result.json").read_text())["model"]["sha256"]
    )


@pytest.mark.slow
def test_a_generative_run_refuses_model(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--model is for ONNX files of non-generative runs; a generative run rebuilds its model."""
    capsys.readouterr()
    tiny = zoo_model_path("tiny")
    code = main(["reproduce", str(recorded), "--model", str(tiny), "--out", str(tmp_path / "r")])
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert code == ModelError.exit_code
    assert line.startswith(f"error: --model {tiny}: {recorded} is a generative run of the zoo's")
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_a_bundled_generative_run_is_verified_and_rerun(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, bundle = tmp_path / "key", tmp_path / "run.tar"
    assert main(["keygen", "--out", str(key)]) == 0
    assert main(["bundle", str(recorded), "--key", str(key), "--out", str(bundle)]) == 0
    capsys.readouterr()
    out = tmp_path / "repro"
    args = [str(bundle), "--trust", f"{key}.pub", "--trials", "1", "--tolerance", GENEROUS]
    code = main(["reproduce", *args, "--out", str(out)])
    printed = capsys.readouterr().out
    data = json.loads(Path(printed.strip().splitlines()[-1]).read_text())
    assert code == VERDICT_CODES[data["verdict"]].code and data["verdict"] != "NOT COMPARABLE"
    assert data["metric"] == "generation.tokens_per_second"
    assert data["bundle"]["verified"] is True and data["bundle"]["trusted"] is True


@pytest.mark.slow
def test_a_generative_server_run_is_judged_by_tokens_per_second_with_ttft_and_tpot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed")
    server = llm_run(tmp_path, "Server")
    capsys.readouterr()
    out = tmp_path / "repro"
    args = [str(server), "--trials", "1", "--tolerance", GENEROUS, "--out", str(out)]
    code = main(["reproduce", *args])
    printed = capsys.readouterr().out
    data = json.loads(Path(printed.strip().splitlines()[-1]).read_text())
    assert code == VERDICT_CODES[data["verdict"]].code and data["verdict"] != "NOT COMPARABLE"
    assert data["metric"] == "generation.tokens_per_second"
    lines = [e for e in data["explanations"] if e.startswith(("TTFT p99: ", "TPOT p99: "))]
    assert len(lines) == 2, data["explanations"]
    assert re.fullmatch(
        r"TTFT p99: recorded [\d.]+ ms, reproduced median [\d.]+ ms "
        r"\(limit 500\.0+ ms\)",
        lines[0],
    ), lines
    assert lines[1].startswith("TPOT p99: recorded ") and "(limit 100" in lines[1]
    assert f"    {lines[0]}" in printed
