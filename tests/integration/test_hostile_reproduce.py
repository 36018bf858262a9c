"""Issue #23: what `reproduce` is given (an INCOMPLETE run, a non-bundle), and --model paths.

Every case meets the contract of tests/integration/hostile.py: one `error: ` line with its
fragment, its exit code, no traceback, nothing written outside an empty --out, and no hang
(a FIFO or a device runs as a child process with a deadline). A model path that is a link
loop, a FIFO, /dev/zero or a directory is one ModelError for `reproduce` and `run` alike.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import TINY_SS, write_scenario
from tests.integration.hostile import (
    DEADLINE_S,
    MODEL,
    RESULT,
    RUN_FIXTURE,
    Case,
    Setup,
    check_error_case,
    error_lines,
    run_harness,
    snapshot,
)
from tests.integration.test_bad_input_corpus import OUT, _call


def _reproduce_dir(make: Callable[[Path], Path], *extra: str) -> Setup:
    return lambda tmp: ["reproduce", str(make(tmp)), *extra, "--out", str(tmp / OUT)]


def _incomplete_run(tmp: Path) -> Path:
    run = tmp / "run"
    shutil.copytree(RUN_FIXTURE, run)
    (run / "result.json").unlink()
    (run / "INCOMPLETE").write_text("stopped by SIGTERM in loadgen\nexit_code: 143\n")
    return run


def _incomplete_fifo(tmp: Path) -> Path:
    run = tmp / "run"
    run.mkdir()
    os.mkfifo(run / "INCOMPLETE")
    return run


def _nothing(tmp: Path) -> Path:
    (tmp / "empty").mkdir()
    return tmp / "empty"


def _not_a_bundle(tmp: Path) -> Path:
    (tmp / "b.tar").write_bytes(b"not a tar at all\n" * 64)
    return tmp / "b.tar"


def _result_1e999(tmp: Path) -> Path:
    run = tmp / "run"
    shutil.copytree(RUN_FIXTURE, run)
    text = (run / "result.json").read_text()
    (run / "result.json").write_text(text.replace('"p90": 507432', '"p90": 1e999', 1))
    return run


REPRODUCE_CASES = [
    Case(
        "reproduce-incomplete-run",
        _reproduce_dir(_incomplete_run),
        RESULT,
        "INCOMPLETE (stopped by SIGTERM in loadgen); a run must be finished to be reproduced",
    ),
    Case(
        "reproduce-incomplete-marker-is-a-fifo",
        _reproduce_dir(_incomplete_fifo),
        RESULT,
        "INCOMPLETE (its cause is unreadable: ",
        isolated=True,
    ),
    Case(
        "reproduce-nothing-it-accepts",
        _reproduce_dir(_nothing),
        RESULT,
        "not a run directory, a trials group, a bundle or a published record",
    ),
    Case(
        "reproduce-a-file-that-is-no-bundle",
        _reproduce_dir(_not_a_bundle),
        RESULT,
        "b.tar: not a bundle (a tar that `harness bundle` wrote)",
    ),
    Case(
        "reproduce-result-1e999",
        _reproduce_dir(_result_1e999),
        RESULT,
        "result.json: latency_ns.p90 is Infinity",
    ),
]


def test_the_reproduce_cases_are_many_and_their_names_unique() -> None:
    names = [c.name for c in REPRODUCE_CASES] + list(MODEL_CASES)
    assert len(names) >= 12
    assert len(set(names)) == len(names)


@pytest.mark.timeout(DEADLINE_S + 60)
@pytest.mark.parametrize("case", REPRODUCE_CASES, ids=[case.name for case in REPRODUCE_CASES])
def test_a_hostile_source_is_one_error_line(
    case: Case, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    check_error_case(case, tmp_path, capfd, monkeypatch)


# --- --model: a loop, a FIFO, a device or a directory (a real run to reproduce) ------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Path:
    """One real tiny SingleStream run, to reproduce with hostile --model paths."""
    tmp = tmp_path_factory.mktemp("recorded")
    scenario = write_scenario(tmp / "s.yaml", TINY_SS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        assert _call(["run", str(scenario), "--out", str(tmp / "runs")]) == 0
    (run,) = (tmp / "runs").iterdir()
    return run


def _model_loop(tmp: Path) -> str:
    (tmp / "loop.onnx").symlink_to("loop.onnx")
    return str(tmp / "loop.onnx")


def _model_fifo(tmp: Path) -> str:
    os.mkfifo(tmp / "model.onnx")
    return str(tmp / "model.onnx")


def _model_dir(tmp: Path) -> str:
    (tmp / "model.onnx").mkdir()
    return str(tmp / "model.onnx")


MODEL_PATHS: dict[str, tuple[Callable[[Path], str], str]] = {
    "loop": (_model_loop, "cannot be read (a symbolic link loop)"),
    "fifo": (_model_fifo, "is a FIFO, not a regular file"),
    "dev-zero": (lambda tmp: "/dev/zero", "/dev/zero: is a device, not a regular file"),
    "directory": (_model_dir, "model.onnx: is a directory, not a regular file"),
}
MODEL_CASES = [f"{verb}-model-{kind}" for verb in ("reproduce", "run") for kind in MODEL_PATHS]


@pytest.mark.slow
@pytest.mark.timeout(DEADLINE_S + 120)
@pytest.mark.parametrize("verb", ["reproduce", "run"])
@pytest.mark.parametrize("kind", list(MODEL_PATHS))
def test_a_model_path_that_is_no_file_is_one_model_error(
    verb: str,
    kind: str,
    recorded: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    make, fragment = MODEL_PATHS[kind]
    model = make(tmp_path)
    source = (
        str(recorded) if verb == "reproduce" else str(write_scenario(tmp_path / "s.yaml", TINY_SS))
    )
    argv = [verb, source, "--model", model, "--out", str(tmp_path / OUT)]
    before = snapshot(tmp_path)
    code, err = run_harness(argv, kind in ("fifo", "dev-zero"), tmp_path, capfd)
    after = snapshot(tmp_path)

    assert "Traceback" not in err, err
    assert code == MODEL, err
    lines = error_lines(err)
    assert len(lines) == 1 and fragment in lines[0], err
    assert set(after) - set(before) <= {OUT}
    assert not (tmp_path / OUT).exists() or not any((tmp_path / OUT).iterdir())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("file", "old", "new", "fragment"),
    [
        ("job.json", '"attempt": 1', '"attempt": 1e999', "job.json: attempt is Infinity"),
        ("job.json", '"strict": false', '"strict": NaN', "job.json: strict is NaN"),
        ("result.json", '"batch_size": 1', f'"batch_size": {10**29}', "is 1e+29, out of"),
    ],
    ids=["job-1e999", "job-nan", "result-int-beyond-64-bits"],
)
def test_a_recorded_run_with_a_number_json_has_not_is_refused_by_key(
    file: str,
    old: str,
    new: str,
    fragment: str,
    recorded: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    run = tmp_path / "run"
    shutil.copytree(recorded, run)
    text = (run / file).read_text()
    assert old in text
    (run / file).write_text(text.replace(old, new, 1))
    code, err = run_harness(
        ["reproduce", str(run), "--out", str(tmp_path / OUT)], False, tmp_path, capfd
    )
    assert "Traceback" not in err and code == RESULT, err
    (line,) = error_lines(err)
    assert fragment in line, line
    assert not (tmp_path / OUT).exists() or not any((tmp_path / OUT).iterdir())
