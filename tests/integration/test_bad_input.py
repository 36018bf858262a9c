"""Bad input beyond the table in test_bad_input_corpus.py: --model dims, --help, pipes, memory."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.models.registry import zoo_model_path
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


def _model_error(
    scenario: Path, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> str:
    out = tmp_path / "o"
    code, err = run_cli(["run", str(scenario), "--model", str(model), "--out", str(out)], capsys)
    assert code == 3
    assert_nothing_written(out)
    return err


def test_symbolic_dim_without_a_value(
    scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _model_error(scenario, zoo_model_path("mobilenet_v2"), tmp_path, capsys)
    assert_one_line_error(err, "dim 'height' is symbolic", "model.dims.height")


def test_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    out, _ = capsys.readouterr()
    assert exit_info.value.code == 0
    for code in ("0 ", "2 ", "3 ", "4 ", "5 ", "6 ", "130"):
        assert f"\n  {code}" in out


# --- issue #11: every option checked before any model work; one line, never a traceback ------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN_FIXTURE = FIXTURES / "results" / "tiny-singlestream"


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
