"""Every bad input gets one clear line, a documented non-zero exit code, and writes nothing."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from harness.cli import main
from harness.models.registry import zoo_model_path
from harness.models.validate import runtime_max_opset
from tests.conftest import TINY_SS, write_scenario


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    _, err = capsys.readouterr()
    return code, err


def assert_one_line_error(err: str, *fragments: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def assert_nothing_written(out: Path) -> None:
    assert not out.exists() or not any(out.iterdir())


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    return write_scenario(tmp_path / "tiny.yaml", TINY_SS)


def test_missing_scenario_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_cli(["run", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o")], capsys)
    assert code == 2
    assert_one_line_error(err, "nope.yaml", "no such file")
    assert_nothing_written(tmp_path / "o")


def test_unknown_yaml_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write_scenario(tmp_path / "bad.yaml", TINY_SS.replace("batch_size: 1", "batchsize: 1"))
    code, err = run_cli(["run", str(bad), "--out", str(tmp_path / "o")], capsys)
    assert code == 2
    assert_one_line_error(err, "bad.yaml", "unknown key 'batchsize'", "allowed:", "batch_size")
    assert_nothing_written(tmp_path / "o")


def test_negative_batch_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write_scenario(tmp_path / "bad.yaml", TINY_SS.replace("batch_size: 1", "batch_size: -4"))
    code, err = run_cli(["run", str(bad), "--out", str(tmp_path / "o")], capsys)
    assert code == 2
    assert_one_line_error(err, "bad.yaml", "batch_size", ">= 1", "-4")
    assert_nothing_written(tmp_path / "o")


def _model_error(
    scenario: Path, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> str:
    out = tmp_path / "o"
    code, err = run_cli(["run", str(scenario), "--model", str(model), "--out", str(out)], capsys)
    assert code == 3
    assert_nothing_written(out)
    return err


def test_missing_model_file(
    scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _model_error(scenario, tmp_path / "absent.onnx", tmp_path, capsys)
    assert_one_line_error(err, "absent.onnx", "no such model file")


def test_truncated_onnx(scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = zoo_model_path("tiny").read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    err = _model_error(scenario, cut, tmp_path, capsys)
    assert_one_line_error(err, "cut.onnx", "truncated")


def test_file_that_is_not_onnx(
    scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "notes.onnx"
    text.write_text("these are my notes, not a model\n" * 20)
    err = _model_error(scenario, text, tmp_path, capsys)
    assert_one_line_error(err, "notes.onnx", "not")


def test_opset_newer_than_runtime(
    scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = onnx.load(str(zoo_model_path("tiny")))
    too_new = runtime_max_opset() + 1
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = too_new
    path = tmp_path / "future.onnx"
    onnx.save(model, str(path))
    err = _model_error(scenario, path, tmp_path, capsys)
    assert_one_line_error(err, "future.onnx", f"opset {too_new}", "newer than this onnxruntime")


def test_symbolic_dim_without_a_value(
    scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _model_error(scenario, zoo_model_path("mobilenet_v2"), tmp_path, capsys)
    assert_one_line_error(err, "dim 'height' is symbolic", "model.dims.height")


def test_results_directory_not_writable(
    scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    code, err = run_cli(["run", str(scenario), "--out", str(blocker / "runs")], capsys)
    assert code == 6
    assert_one_line_error(err, "a-file", "writable --out")
    assert blocker.read_text() == "not a directory"


def test_unknown_hardware_target(
    scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_cli(["run", str(scenario), "--hw", "tpu", "--out", str(tmp_path / "o")], capsys)
    assert code == 4
    assert_one_line_error(err, "HW=tpu", "unknown hardware target", "cpu")
    assert_nothing_written(tmp_path / "o")


def test_show_refuses_an_incomplete_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "20260101T000000Z-tiny-Offline-abcdef"
    run_dir.mkdir()
    (run_dir / "INCOMPLETE").write_text("interrupted (Ctrl-C)\n")
    code, err = run_cli(["show", str(run_dir)], capsys)
    assert code == 6
    assert_one_line_error(err, "incomplete", "interrupted (Ctrl-C)")


def test_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    out, _ = capsys.readouterr()
    assert exit_info.value.code == 0
    for code in ("0 ", "2 ", "3 ", "4 ", "5 ", "6 ", "130"):
        assert f"\n  {code}" in out


@pytest.mark.parametrize(
    ("providers", "fragment"),
    [
        ("ROCMExecutionProvider", "not in HW=nvidia's chain"),
        ("CUDAExecutionProvider,TensorrtExecutionProvider", "must keep HW=nvidia's order"),
    ],
)
def test_providers_outside_the_targets_chain(
    scenario: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    providers: str,
    fragment: str,
) -> None:
    out = tmp_path / "o"
    args = ["run", str(scenario), "--hw", "nvidia", "--providers", providers, "--out", str(out)]
    code, err = run_cli(args, capsys)
    assert code == 2
    assert_one_line_error(err, "--providers", fragment)
    assert_nothing_written(out)


def test_runtime_providers_in_a_scenario_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = TINY_SS + "runtime:\n  providers: [MIGraphXExecutionProvider]\n"
    bad = write_scenario(tmp_path / "bad.yaml", text)
    out = tmp_path / "o"
    code, err = run_cli(["run", str(bad), "--hw", "nvidia", "--out", str(out)], capsys)
    assert code == 2
    assert_one_line_error(err, "runtime.providers", "MIGraphXExecutionProvider", "HW=nvidia")
    assert_nothing_written(out)


# --- issue #11: every option checked before any model work; one line, never a traceback ------

TINY_OFFLINE_FILE = Path(__file__).resolve().parents[2] / "scenarios" / "tiny-offline.yaml"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN_FIXTURE = FIXTURES / "results" / "tiny-singlestream"
GROUPS = [FIXTURES / "reports" / "trials-epyc", FIXTURES / "reports" / "trials-xeon"]


@pytest.mark.parametrize(
    ("batches", "fragment"),
    [
        ("0", "must be 1..65536, got 0"),
        ("-2", "must be 1..65536, got -2"),
        ("1,100000", "must be 1..65536, got 100000"),
        ("a", "'a' is not a whole number"),
        ("1,,2", "'' is not a whole number"),
        ("2,2", "increasing order, each once"),
        ("4,2", "increasing order, each once"),
    ],
)
def test_bad_sweep_batches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], batches: str, fragment: str
) -> None:
    out = tmp_path / "o"
    args = ["sweep", str(TINY_OFFLINE_FILE), "--batches", batches, "--out", str(out)]
    code, err = run_cli(args, capsys)
    assert code == 2
    assert_one_line_error(err, "--batches", fragment)
    assert_nothing_written(out)


@pytest.mark.parametrize("verb", ["run", "sweep", "bench"])
@pytest.mark.parametrize("trials", ["0", "-3", "101"])
def test_bad_trials(
    scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], verb: str, trials: str
) -> None:
    out = tmp_path / "o"
    target = {"run": scenario, "sweep": TINY_OFFLINE_FILE, "bench": "smoke"}[verb]
    code, err = run_cli([verb, str(target), "--trials", trials, "--out", str(out)], capsys)
    assert code == 2
    assert_one_line_error(err, "--trials", f"must be 1..100, got {trials}")
    assert_nothing_written(out)


@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_peak_tflops_not_a_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    bad = write_scenario(tmp_path / "bad.yaml", TINY_SS + f"peak_tflops: {value}\n")
    out = tmp_path / "o"
    code, err = run_cli(["run", str(bad), "--out", str(out)], capsys)
    assert code == 2
    assert_one_line_error(err, "bad.yaml", "peak_tflops", "finite")
    assert_nothing_written(out)


def test_duplicate_yaml_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = TINY_SS + "scenario: Offline\n"
    bad = write_scenario(tmp_path / "bad.yaml", text)
    out = tmp_path / "o"
    code, err = run_cli(["run", str(bad), "--out", str(out)], capsys)
    assert code == 2
    line = text.splitlines().index("scenario: Offline") + 1
    assert_one_line_error(err, "bad.yaml", f"line {line}", "duplicate key 'scenario'")
    assert_nothing_written(out)


def test_huge_batch_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    args = ["run", str(TINY_OFFLINE_FILE), "--batch-size", str(10**12), "--out", str(out)]
    code, err = run_cli(args, capsys)
    assert code == 2
    assert_one_line_error(err, "--batch-size", "batch_size: must be 1..65536")
    assert_nothing_written(out)


def test_report_out_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "report.md"
    blocker.write_text("mine\n")
    code, err = run_cli(["report", str(GROUPS[0]), "--out", str(blocker)], capsys)
    assert code == 6
    assert_one_line_error(err, "report.md", "not a directory", "--out")
    assert blocker.read_text() == "mine\n"


def test_report_out_under_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("mine\n")
    code, err = run_cli(["report", str(GROUPS[0]), "--out", str(blocker / "r")], capsys)
    assert code == 6
    assert_one_line_error(err, "a-file", "not a directory")
    assert blocker.read_text() == "mine\n"


def test_compare_out_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "compare.md"
    blocker.write_text("mine\n")
    args = ["compare", *map(str, GROUPS), "--out", str(blocker)]
    code, err = run_cli(args, capsys)
    assert code == 6
    assert_one_line_error(err, "compare.md", "not a directory", "--out")
    assert blocker.read_text() == "mine\n"


class _ClosedPipe(io.StringIO):
    """stdout whose reader went away, as `harness show RUN | head` leaves it."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_show_into_a_closed_pipe_exits_quietly(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    code = main(["show", str(RUN_FIXTURE)])
    assert code == 141
    assert capsys.readouterr().err == ""


def test_a_broken_pipe_that_is_not_stdout_keeps_its_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object) -> str:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("harness.cli.inspection.render_summary", broken)
    with pytest.raises(BrokenPipeError):
        main(["show", str(RUN_FIXTURE)])


def test_out_of_memory_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def exhausted(*args: object) -> str:
        raise MemoryError

    monkeypatch.setattr("harness.cli.inspection.render_summary", exhausted)
    code, err = run_cli(["show", str(RUN_FIXTURE)], capsys)
    assert code == 9  # HarnessError's: "any other harness error (the message says why)"
    assert_one_line_error(err, "out of memory", "`harness show`")
    assert "Traceback" not in err


def test_help_documents_the_broken_pipe_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "\n  141  stdout closed early" in capsys.readouterr().out


def test_show_piped_into_head_exits_141_without_a_traceback() -> None:
    # More output than a pipe buffers, so the writer is still writing when the reader leaves.
    args = [sys.executable, "-m", "harness.cli", "show", *[str(RUN_FIXTURE)] * 300]
    child = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.readline()
    child.stdout.close()
    with child.stderr:
        err = child.stderr.read().decode()
    assert child.wait(timeout=60) == 141
    assert err == ""


def test_a_scenario_meter_command_needs_the_users_opt_in_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BEYOND_TOPS_ALLOW_METER_COMMAND", raising=False)
    text = TINY_SS + "telemetry:\n  external_command: [cat, /etc/hostname]\n"
    path = write_scenario(tmp_path / "meter.yaml", text)
    out = tmp_path / "o"
    code, err = run_cli(["run", str(path), "--out", str(out)], capsys)
    assert code == 2
    assert_one_line_error(
        err, "telemetry.external_command", "'cat'", "BEYOND_TOPS_ALLOW_METER_COMMAND=1"
    )
    assert_nothing_written(out)
