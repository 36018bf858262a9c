"""Issue #23: stop signals at hostile moments, verb by verb, as one table of cases.

Each case runs `harness` in this process and raises a real SIGTERM, SIGINT or SIGHUP at one
moment of it: just after (or before) the Nth call of a named function, such as the one that
makes the run directory, forks the worker, writes a job file, fsyncs a file being written
atomically or hashes a file. The handler the CLI installed takes the signal there, as it
would take one from `kill`. Every case must end with the signal's exit code, no traceback,
and one `error:` line giving the cause, and then either naming each directory it marked
(each one's INCOMPLETE holding that cause, no result.json beside it) or saying that none
was marked; no temp file may be left, and nothing may be written outside --out.

tests/integration/test_signals_any_moment.py sends the signals from outside, to real
processes, at the phases of a run; this file covers the moments inside a process.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import harness.cli.measure
import harness.execution.campaign
import harness.execution.pipeline
import harness.published.importer
from harness.errors import STOP_SIGNALS, interrupted_cause
from harness.files import read_incomplete
from harness.records.layout import RESULT_FILE
from harness.stopping import PAUSE_AT_ENV, PAUSE_FILE_ENV
from tests.conftest import TINY_OFFLINE, harness_dir, write_scenario
from tests.integration.test_bad_input_corpus import GROUPS, _call, _error_lines, _snapshot

pytestmark = pytest.mark.slow

OUT = "o"  # every case's output, under its tmp_path
PUBLISHED = Path(__file__).resolve().parents[1] / "fixtures" / "published"
NONE_MARKED = "no run directory was marked INCOMPLETE"
MARKED = "; marked INCOMPLETE: "

Setup = Callable[[Path, Path], list[str]]  # (the case's tmp_path, a finished run) -> argv


@dataclass(frozen=True)
class Moment:
    """Just after (or before) the `nth` call of `owner.name` whose arguments `when` accepts."""

    owner: Any
    name: str
    nth: int = 1
    before: bool = False
    when: Callable[[tuple[Any, ...]], bool] = lambda args: True


@dataclass(frozen=True)
class Case:
    name: str
    setup: Setup
    moment: Moment
    signum: int
    fragment: str  # in the error line, after the signal's own `interrupted (...)`
    marked: int = 0  # directories the line names, each marked INCOMPLETE
    out: str = OUT  # where it may write: its --out (compliance writes into the run it tests)


# --- inputs ----------------------------------------------------------------------------------


def _scenario(tmp: Path, trials: int = 1) -> Path:
    return write_scenario(tmp / "s.yaml", TINY_OFFLINE.replace("trials: 1", f"trials: {trials}"))


def _run(trials: int = 1) -> Setup:
    return lambda tmp, _: ["run", str(_scenario(tmp, trials)), "--out", str(tmp / OUT)]


def _bench(tmp: Path, _: Path) -> list[str]:
    _scenario(tmp, trials=2)
    suite = write_scenario(tmp / "suite.yaml", "name: two\nprofile: quick\nscenarios: [s.yaml]\n")
    return ["bench", str(suite), "--out", str(tmp / OUT)]


def _sweep(tmp: Path, _: Path) -> list[str]:
    return ["sweep", str(_scenario(tmp)), "--batches", "1,2", "--out", str(tmp / OUT)]


def _copy(run: Path, tmp: Path) -> Path:
    """The finished run, copied into the case's own directory (cases share nothing)."""
    copy = tmp / "runs" / run.name
    shutil.copytree(run, copy)
    return copy


def _compliance(tmp: Path, run: Path) -> list[str]:
    return ["compliance", "TEST04", str(_copy(run, tmp))]


def _import(tmp: Path, _: Path) -> list[str]:
    return ["import", "mlperf", str(PUBLISHED / "inference_results_v4.1"), "--out", str(tmp / OUT)]


def _reproduce(tmp: Path, run: Path) -> list[str]:
    return ["reproduce", str(_copy(run, tmp)), "--trials", "1", "--out", str(tmp / OUT)]


def _bundle(tmp: Path, run: Path) -> list[str]:
    key = _key(tmp)
    (tmp / OUT).mkdir()
    return ["bundle", str(_copy(run, tmp)), "--key", str(key), "--out", str(tmp / OUT / "r.tar")]


def _verify(tmp: Path, run: Path) -> list[str]:
    key = _key(tmp)
    bundle = tmp / "r.tar"
    assert _call(["bundle", str(_copy(run, tmp)), "--key", str(key), "--out", str(bundle)]) == 0
    return ["verify", str(bundle), "--trust", f"{key}.pub"]


def _key(tmp: Path) -> Path:
    key = tmp / "keys" / "signer"
    key.parent.mkdir()
    assert _call(["keygen", "--out", str(key)]) == 0
    return key


def _show(tmp: Path, run: Path) -> list[str]:
    return ["show", str(_copy(run, tmp))]


def _compare(tmp: Path, _: Path) -> list[str]:
    return ["compare", *map(str, GROUPS), "--out", str(tmp / OUT)]


def _report(tmp: Path, run: Path) -> list[str]:
    return ["report", str(_copy(run, tmp)), "--out", str(tmp / OUT)]


def _site(tmp: Path, run: Path) -> list[str]:
    return ["site", str(_copy(run, tmp)), "--out", str(tmp / OUT)]


def _worker(args: tuple[Any, ...]) -> bool:
    """A Popen of a worker, not of a tool the parent asks something of (git, nvidia-smi)."""
    return bool(args) and "harness.execution.worker" in args[0]


# --- the cases -------------------------------------------------------------------------------

TERM, INT, HUP = signal.SIGTERM, signal.SIGINT, signal.SIGHUP
BEFORE_ACCURACY = "before the accuracy test's worker started"
CASES = [
    Case(
        "run-while-its-scenario-is-read",
        _run(),
        Moment(harness.cli.measure, "load_scenario"),
        TERM,
        NONE_MARKED,
    ),
    Case(
        "run-while-its-directory-is-made",
        _run(),
        Moment(harness.execution.pipeline, "new_run_dir"),
        INT,
        BEFORE_ACCURACY,
        marked=1,
    ),
    Case(
        "run-while-its-first-marker-is-written",
        _run(),
        Moment(harness.execution.pipeline, "mark_incomplete", before=True),
        HUP,
        BEFORE_ACCURACY,
        marked=1,
    ),
    Case(
        "run-while-the-accuracy-job-file-is-written",
        _run(),
        Moment(harness.execution.pipeline, "write_job"),
        TERM,
        BEFORE_ACCURACY,
        marked=1,
    ),
    Case(
        "run-mid-fsync-of-the-accuracy-job-file",
        _run(),
        Moment(os, "fsync", nth=3),  # after the run's INCOMPLETE marker and its directory
        INT,
        BEFORE_ACCURACY,
        marked=1,
    ),
    Case(
        "run-while-its-worker-is-forked",
        _run(),
        Moment(subprocess, "Popen", when=_worker),
        TERM,
        "in the accuracy test, while its worker started",
        marked=1,
    ),
    Case(
        "run-while-the-performance-job-file-is-written",
        _run(),
        Moment(harness.execution.pipeline, "write_job", nth=2),
        HUP,
        "before the performance test's worker started",
        marked=1,
    ),
    Case(
        "run-after-its-result-was-written",
        _run(),
        Moment(harness.execution.pipeline, "read_retry"),
        INT,
        "after the performance test's worker ended",
        marked=1,
    ),
    Case(
        "run-while-its-summary-is-printed",
        _run(),
        Moment(harness.execution.campaign, "render_summary"),
        TERM,
        NONE_MARKED,
    ),
    Case(
        "trials-while-the-second-trial-is-made",
        _run(trials=2),
        Moment(harness.execution.pipeline, "new_run_dir", nth=2),
        HUP,
        BEFORE_ACCURACY,
        marked=2,
    ),
    Case(
        "bench-while-its-second-trial-worker-is-forked",
        _bench,
        Moment(subprocess, "Popen", nth=3, when=_worker),
        TERM,
        "in the accuracy test, while its worker started",
        marked=2,
    ),
    Case(
        "sweep-while-its-second-batch-is-made",
        _sweep,
        Moment(harness.execution.pipeline, "new_run_dir", nth=2),
        INT,
        BEFORE_ACCURACY,
        marked=3,
    ),
    Case(
        "compliance-while-its-directory-is-made",
        _compliance,
        Moment(harness.execution.pipeline, "_fresh_compliance_dir"),
        INT,
        "before the compliance test TEST04's worker started",
        marked=1,
        out="runs",
    ),
    Case(
        "import-after-its-first-record",
        _import,
        Moment(harness.published.importer, "store"),
        TERM,
        NONE_MARKED,
    ),
    Case(
        "import-mid-fsync-of-a-record-file",
        _import,
        Moment(os, "fsync"),
        INT,
        NONE_MARKED,
    ),
    Case(
        "reproduce-while-the-model-is-hashed",
        _reproduce,
        Moment(hashlib, "sha256"),
        HUP,
        NONE_MARKED,
    ),
    Case(
        "reproduce-while-its-trial-is-made",
        _reproduce,
        Moment(harness.execution.pipeline, "new_run_dir"),
        TERM,
        BEFORE_ACCURACY,
        marked=2,
    ),
    Case("bundle-mid-fsync-of-the-tar", _bundle, Moment(os, "fsync"), HUP, NONE_MARKED),
    Case("verify-while-a-member-is-hashed", _verify, Moment(hashlib, "sha256"), INT, NONE_MARKED),
    Case("show-while-the-result-is-read", _show, Moment(json, "loads"), TERM, NONE_MARKED),
    Case("compare-while-the-second-is-read", _compare, Moment(json, "loads", 2), HUP, NONE_MARKED),
    Case("report-mid-fsync-of-a-page", _report, Moment(os, "fsync"), INT, NONE_MARKED),
    Case("site-once-its-first-page-is-in-place", _site, Moment(os, "fsync", 2), TERM, NONE_MARKED),
]


# --- the contract ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[Path]:
    """One finished run for the verbs that read one; each case works on a copy of it."""
    root = tmp_path_factory.mktemp("finished")
    scenario = write_scenario(root / "s.yaml", TINY_OFFLINE)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        yield harness_dir(["run", str(scenario), "--out", str(root / "runs")])


class _Signalling:
    """Wraps the moment's function: raises the case's signal at the moment, once."""

    def __init__(self, case: Case, real: Callable[..., Any]) -> None:
        self.case, self.real, self.calls = case, real, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        moment = self.case.moment
        if moment.when(args):
            self.calls += 1
        now = self.calls == moment.nth and moment.when(args)
        if now and moment.before:
            signal.raise_signal(self.case.signum)
        result = self.real(*args, **kwargs)
        if now and not moment.before:
            signal.raise_signal(self.case.signum)
        return result


def test_the_table_is_large_and_its_names_unique() -> None:
    assert len(CASES) >= 18
    assert len({case.name for case in CASES}) == len(CASES)
    assert {case.signum for case in CASES} == set(STOP_SIGNALS)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_stop_at_a_hostile_moment(
    case: Case,
    tmp_path: Path,
    finished_run: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(PAUSE_AT_ENV, raising=False)
    monkeypatch.delenv(PAUSE_FILE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # a relative default output would land here, and show
    argv = case.setup(tmp_path, finished_run)
    before = _snapshot(tmp_path)
    moment = case.moment
    wrapper = _Signalling(case, getattr(moment.owner, moment.name))
    monkeypatch.setattr(moment.owner, moment.name, wrapper)
    capfd.readouterr()
    code = _call(argv)
    monkeypatch.undo()  # before anything below reads a file
    _, err = capfd.readouterr()  # fd-level: a worker's lines count as the user sees them
    assert wrapper.calls >= moment.nth, f"the moment never came: {wrapper.calls} calls"

    assert code == STOP_SIGNALS[case.signum].code == 128 + case.signum, err
    assert "Traceback" not in err, err
    lines = _error_lines(err)
    assert len(lines) == 1, err
    cause = f"{interrupted_cause(case.signum)}"
    assert lines[0].startswith(f"error: {cause}"), lines[0]
    assert case.fragment in lines[0], lines[0]
    _assert_marked(lines[0], case, tmp_path / OUT)
    after = _snapshot(tmp_path)
    assert {k: after.get(k, b"<gone>") for k in before} == before, "a file changed or was lost"
    out = case.out
    new = [k for k in after if k not in before and k != out and not k.startswith(f"{out}/")]
    assert not new, f"written outside --out: {new}"
    assert not fnmatch.filter(after, "*.tmp"), fnmatch.filter(after, "*.tmp")


def _assert_marked(line: str, case: Case, out: Path) -> None:
    """Each directory the line names is marked with the line's cause and holds no result.

    With none named, every run directory left (one that holds a job.json) is a finished
    one: the stop came after its result was complete, and that result is kept.
    """
    if not case.marked:
        assert MARKED not in line, line
        for job in out.glob("**/job.json"):
            run_dir = job.parent
            if run_dir.name != "accuracy":
                assert read_incomplete(run_dir) is None, f"{run_dir}: INCOMPLETE, not named"
                assert json.loads((run_dir / RESULT_FILE).read_text())["schema_version"] >= 1
        return
    cause, _, names = line.removeprefix("error: ").partition(MARKED)
    marked = [Path(name) for name in names.split(", ")]
    assert len(marked) == case.marked, line
    for directory in marked:
        recorded = read_incomplete(directory)
        assert recorded is not None, f"{directory}: named but not marked"
        assert recorded.cause.endswith(cause), (recorded.cause, cause)
        assert recorded.exit_code == STOP_SIGNALS[case.signum].code, recorded
        assert not (directory / RESULT_FILE).exists(), f"{directory}: a result beside INCOMPLETE"


def test_a_malformed_pause_hook_is_one_line_before_anything_is_made(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PAUSE_AT_ENV, "performance:nap")
    monkeypatch.setenv(PAUSE_FILE_ENV, str(tmp_path / "paused"))
    argv = _run()(tmp_path, tmp_path)
    assert _call(argv) == 2
    lines = _error_lines(capfd.readouterr().err)
    assert len(lines) == 1 and PAUSE_AT_ENV in lines[0] and "'performance:nap'" in lines[0]
    assert not (tmp_path / OUT).exists() or not any((tmp_path / OUT).iterdir())
