"""Shared by the hostile-input tests of issue #23: one error line, nothing written, no hang.

`check_error_case` holds the contract every error case meets: one `error: ` line with its
fragment, its exit code, no traceback, every file under tmp_path as it was and nothing new
but an empty --out (nor anything left in the temporary directory). A case that may block
(a FIFO, a device) runs as a child process group with a deadline and a memory cap.
"""

from __future__ import annotations

import hashlib
import os
import resource
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.errors import (
    ERROR_CODES,
    BundleError,
    ModelError,
    ResultError,
    TamperedFileError,
    UntrustedKeyError,
)
from tests.conftest import REPO
from tests.integration.test_bad_input_corpus import OUT, _call, _error_lines

RESULT = ERROR_CODES[ResultError].code
MODEL = ERROR_CODES[ModelError].code
BUNDLE = ERROR_CODES[BundleError].code
TAMPERED = ERROR_CODES[TamperedFileError].code
UNTRUSTED = ERROR_CODES[UntrustedKeyError].code
DEADLINE_S = 120  # a child process that passes it is a hang: the case fails
MEMORY_CAP_BYTES = 6 * 1024**3  # a child reading /dev/zero into memory dies, the host does not
SECRET = "TOPSECRET-do-not-copy"  # beside every tree: it must never reach a record or a line
RUN_FIXTURE = REPO / "tests" / "fixtures" / "results" / "tiny-singlestream-v3"

Setup = Callable[[Path], list[str]]  # makes the hostile input under tmp_path, returns argv
Snapshot = dict[str, object]


@dataclass(frozen=True)
class Case:
    """One hostile input: how to make it, the exit code and the fragment its error holds."""

    name: str
    setup: Setup
    code: int
    fragment: str
    isolated: bool = False  # a FIFO or device: run as a child with a deadline


def snapshot(root: Path) -> Snapshot:
    """Every entry under root, never following a link nor opening a FIFO or device."""
    found: Snapshot = {}
    for top, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(top) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                found[str(path.relative_to(root))] = ("link", os.readlink(path))
            elif stat.S_ISREG(mode):
                digest = hashlib.sha256()
                with path.open("rb") as handle:
                    while chunk := handle.read(1 << 22):
                        digest.update(chunk)
                found[str(path.relative_to(root))] = digest.hexdigest()
            else:
                found[str(path.relative_to(root))] = stat.S_IFMT(mode)
    return found


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))


def _child(argv: list[str], cwd: Path) -> tuple[int, str]:
    """`harness ARGV` as a child process group with a deadline and a memory cap.

    Past the deadline the whole group (the CLI and any worker it started) is killed, and the
    case fails as a hang.
    """
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    with subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *argv],
        cwd=cwd,  # a relative default would land in the case's directory
        env={**os.environ, "PYTHONPATH": path},  # this checkout's harness, wherever cwd is
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_cap_memory,
    ) as child:
        try:
            _, err = child.communicate(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            pytest.fail(f"harness {' '.join(argv)}: still running after {DEADLINE_S} s (a hang)")
    return child.returncode, err


def run_harness(
    argv: list[str], isolated: bool, tmp: Path, capfd: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    if isolated:
        return _child(argv, tmp)
    capfd.readouterr()
    code = _call(argv)
    return code, capfd.readouterr().err


@contextmanager
def watched_tmp(tmp_path: Path) -> Iterator[Path]:
    """The temporary directory verify unpacks into, watched: it must be left empty.

    Python's tempfile (and a child's TMPDIR) point into it while the case runs.
    """
    watched = tmp_path.parent / f"{tmp_path.name}-systmp"
    watched.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(watched))
        patch.setenv("TMPDIR", str(watched))
        yield watched


def check_error_case(
    case: Case, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run one error case and assert the contract of the module docstring."""
    monkeypatch.chdir(tmp_path)  # a relative default would land here, and show
    with watched_tmp(tmp_path) as system_tmp:
        argv = case.setup(tmp_path)
        before = snapshot(tmp_path)
        code, err = run_harness(argv, case.isolated, tmp_path, capfd)
        after = snapshot(tmp_path)
        assert list(system_tmp.iterdir()) == [], "left behind in the temporary directory"

    assert "Traceback" not in err, err
    assert code == case.code, err
    lines = _error_lines(err)
    assert len(lines) == 1, err
    assert case.fragment in lines[0], lines[0]
    assert SECRET not in err
    assert {k: after.get(k, "<gone>") for k in before} == before, "a file changed or was lost"
    new = set(after) - set(before)
    assert new <= {OUT}, f"left behind: {sorted(new)}"
    assert not (tmp_path / OUT).is_dir() or not any((tmp_path / OUT).iterdir())


def error_lines(err: str) -> list[str]:
    """The `error: ` lines of what harness printed."""
    return _error_lines(err)
