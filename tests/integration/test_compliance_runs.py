"""Real compliance runs: LoadGen under TEST01's and TEST04's audit.config, real and rigged SUTs.

A rigged SUT is the test's subject, so it runs for real: a compliance worker whose executor
(the timed path's boundary) is wrapped, started as its own process like any worker.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.cli import main
from harness.compliance.rules import AUDIT_SETTINGS
from harness.config import load_scenario
from harness.execution.pipeline import launch_worker, run_compliance, run_one
from harness.loadgen.plan import Audit, render_audit_config
from harness.records.job import request_of_run
from harness.records.loadgen_log import parse_detail_log
from harness.records.request import RunRequest
from tests.conftest import REPO, write_scenario

pytestmark = pytest.mark.slow

# One thread, so that a second busy core matters less; Offline, whose throughput averages
# over the run, for the comparisons that must pass; SingleStream where the rigged SUTs fail.
TINY_OFFLINE_1T = """
name: tiny-offline-compliance
scenario: Offline
model: {zoo: tiny}
batch_size: 8
trials: 1
runtime: {intra_op_threads: 1}
data: {total_sample_count: 64}
warmup: {min_queries: 5, min_duration_ms: 300}
quick: {min_duration_ms: 2000, min_query_count: 200, performance_sample_count: 32}
"""
TINY_SS_1T = """
name: tiny-ss-compliance
scenario: SingleStream
model: {zoo: tiny}
batch_size: 1
trials: 1
runtime: {intra_op_threads: 1}
data: {total_sample_count: 64}
warmup: {min_queries: 20, min_duration_ms: 300}
quick: {min_duration_ms: 1000, min_query_count: 100, performance_sample_count: 32}
"""
AUDIT_FOUND = "Found Audit Config file"
# The performance check compares timings of two runs; on a machine shared with other work a
# round can differ by more than MLPerf's 10 % from load alone. A normal SUT must pass both
# tests in one of these rounds (and their accuracy check in every round).
ROUNDS = 4


# ---- rigged SUTs, at the executor boundary ----


def _copy(address: int, size: int) -> np.ndarray:
    return np.frombuffer(ctypes.string_at(address, size), dtype=np.uint8).copy()


class CachingExecutor:
    """Answers a sample it has seen from a cache, without inference (MLPerf forbids this)."""

    def __init__(self, inner: Any) -> None:
        self._inner, self.batch_size, self.data_path = inner, inner.batch_size, inner.data_path
        self._cache: dict[int, np.ndarray] = {}

    def attach(self, arrays: Mapping[str, np.ndarray]) -> None:
        self._cache = {}  # new samples under the same rows: a correct cache, just a cache
        self._inner.attach(arrays)

    def run_single(self, row: int) -> tuple[int, int]:
        if row not in self._cache:
            self._cache[row] = _copy(*self._inner.run_single(row))
        out = self._cache[row]
        return out.ctypes.data, out.nbytes

    def run_batch(self, rows: Sequence[int]) -> tuple[int, int]:
        return self._inner.run_batch(rows)  # type: ignore[no-any-return]


class NegatingExecutor:
    """Infers, then answers something else: the scores negated, so the top class changes."""

    def __init__(self, inner: Any) -> None:
        self._inner, self.batch_size, self.data_path = inner, inner.batch_size, inner.data_path
        self._keep = np.empty(0, dtype=np.float32)

    def attach(self, arrays: Mapping[str, np.ndarray]) -> None:
        self._inner.attach(arrays)

    def run_single(self, row: int) -> tuple[int, int]:
        self._keep = -_copy(*self._inner.run_single(row)).view(np.float32)
        return self._keep.ctypes.data, self._keep.nbytes

    def run_batch(self, rows: Sequence[int]) -> tuple[int, int]:
        return self._inner.run_batch(rows)  # type: ignore[no-any-return]


RIGGED: dict[str, Callable[[Any], Any]] = {"caching": CachingExecutor, "negating": NegatingExecutor}


def rigged_worker(kind: str, job_file: str) -> int:
    """`python -m harness.execution.worker JOB`, its executor wrapped by a rigged one."""
    import harness.execution.runner
    from harness.execution.worker import main as worker_main

    real = harness.execution.runner.executor_for
    harness.execution.runner.executor_for = lambda *a, **k: RIGGED[kind](real(*a, **k))  # type: ignore[assignment]
    return worker_main([job_file])


def rigged(kind: str) -> Callable[[Path], int]:
    """A launcher: each job in a process of its own, as launch_worker, with a rigged executor."""

    def launch(job_path: Path) -> int:
        code = (
            "import sys; from tests.integration.test_compliance_runs import rigged_worker; "
            f"sys.exit(rigged_worker({kind!r}, sys.argv[1]))"
        )
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        command = [sys.executable, "-c", code, str(job_path)]
        return subprocess.run(command, env=env, check=False).returncode

    return launch


# ---- helpers ----


def measure(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> Path:
    tmp_path.mkdir(exist_ok=True)
    scenario = write_scenario(tmp_path / "s.yaml", text)
    code = main(["run", str(scenario), "--out", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return Path(out.strip().splitlines()[-1])


def compliance(run_dir: Path, test: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["compliance", test, str(run_dir)])
    return code, capsys.readouterr().out


def verdict(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "verdict.json").read_text())  # type: ignore[no-any-return]


def audit_text(test: str) -> str:
    return render_audit_config(Audit(name=test, settings=AUDIT_SETTINGS[test]))  # type: ignore[index]


def effective(directory: Path, key: str) -> Any:
    return parse_detail_log(directory / "mlperf_log_detail.txt").get(f"effective_{key}")


def found_audit(directory: Path) -> bool:
    return any(
        AUDIT_FOUND in w for w in parse_detail_log(directory / "mlperf_log_detail.txt").warnings
    )


# ---- a normal SUT passes ----


def test_a_normal_sut_passes_test01_and_test04(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # LoadGen's own default: an audit.config in the working directory. This one (TEST01's,
    # where TEST04 runs) must reach no run: each compliance worker works in its own directory.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "audit.config").write_text(audit_text("TEST01"))
    ratios: list[str] = []
    for attempt in range(ROUNDS):
        run_dir = measure(tmp_path / f"round-{attempt}", TINY_OFFLINE_1T, capsys)
        results = {test: compliance(run_dir, test, capsys) for test in ("TEST01", "TEST04")}
        test01 = verdict(run_dir / "compliance" / "TEST01")
        assert test01["accuracy"]["passed"], test01  # every round: responses are exact
        ratios.append(" | ".join(out.splitlines()[-2].strip() for _, out in results.values()))
        if all(code == 0 for code, _ in results.values()):
            break
    else:
        pytest.fail("no round passed both tests:\n" + "\n".join(ratios))
    for test in ("TEST01", "TEST04"):
        directory = run_dir / "compliance" / test
        assert verdict(directory)["passed"] is True
        lines = [
            line.strip() for line in (directory / "verify_performance.txt").read_text().splitlines()
        ]
        assert lines[-1] == "TEST PASS"
        outcome = json.loads((directory / "outcome.json").read_text())
        assert outcome["cwd"] == str(directory.resolve())  # the worker's working directory
        assert found_audit(directory) and effective(directory, "test_mode") == "PerformanceOnly"
    accuracy = (run_dir / "compliance" / "TEST01" / "verify_accuracy.txt").read_text()
    assert accuracy.splitlines()[-1] == "TEST PASS" and "num_perf_log_data_mismatch = 0" in accuracy
    t01, t04 = run_dir / "compliance" / "TEST01", run_dir / "compliance" / "TEST04"
    assert effective(t01, "accuracy_log_sampling_target") == 4096
    assert effective(t04, "performance_issue_same") is True
    assert effective(t04, "accuracy_log_sampling_target") == 0  # not the cwd's TEST01 file
    # The normal tests read no audit.config, and the file lies only where each test ran.
    assert not found_audit(run_dir) and not found_audit(run_dir / "accuracy")
    assert sorted(p.relative_to(run_dir) for p in run_dir.rglob("audit.config")) == [
        Path("compliance/TEST01/audit.config"),
        Path("compliance/TEST04/audit.config"),
    ]


# ---- rigged SUTs fail ----


@pytest.fixture
def singlestream_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[RunRequest, Path]:
    run_dir = measure(tmp_path, TINY_SS_1T, capsys)
    return request_of_run(run_dir), run_dir


def test_a_caching_sut_fails_test01_and_test04(singlestream_run: tuple[RunRequest, Path]) -> None:
    run_request, run_dir = singlestream_run
    for test in ("TEST01", "TEST04"):
        found = run_compliance(run_request, run_dir, test, launch=rigged("caching"))  # type: ignore[arg-type]
        assert not found.passed, found.performance.text
        assert not found.performance.passed
        text = found.performance.text
        assert text.endswith("TEST FAIL\n") and "TEST PASS" not in text
        # the cache answers at once: far faster than the run it is compared with
        ratio = float(text.split("test / reference = ")[1].split(";")[0])
        assert ratio > 3 if test == "TEST04" else ratio < 1 / 3, text
    accuracy = (run_dir / "compliance" / "TEST01" / "verify_accuracy.txt").read_text()
    assert accuracy.splitlines()[-1] == "TEST PASS", accuracy  # cached answers are right ones


def test_a_sut_answering_otherwise_in_performance_mode_fails_test01(
    singlestream_run: tuple[RunRequest, Path],
) -> None:
    run_request, run_dir = singlestream_run
    found = run_compliance(run_request, run_dir, "TEST01", launch=rigged("negating"))
    assert found.accuracy is not None and not found.accuracy.passed and not found.passed
    text = found.accuracy.text
    assert text.endswith("TEST FAIL\n") and "num_perf_log_data_mismatch = 0" not in text
    assert "non-deterministic check: top-1 agreement with the accuracy run's responses" in text
    files = run_dir / "compliance" / "TEST01"
    assert (files / "baseline_accuracy.txt").read_text().startswith("accuracy=100.000%")
    compliance_top1 = float(
        (files / "compliance_accuracy.txt").read_text().split("%")[0].split("=")[1]
    )
    assert compliance_top1 < 99.0


# ---- no other run reads an audit.config ----


def test_normal_runs_ignore_an_audit_config_in_their_directory_and_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # the workers' working directory: they inherit it
    run_dir = tmp_path / "run"
    for directory in (cwd, run_dir, run_dir / "accuracy"):
        directory.mkdir(exist_ok=True)
        (directory / "audit.config").write_text(audit_text("TEST04"))
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS_1T))
    run_request = RunRequest(scenario=scenario, scenario_path=None, profile="quick", hw="cpu")
    run_one(run_request, run_dir, launch=launch_worker)
    for directory in (run_dir, run_dir / "accuracy"):
        assert not found_audit(directory)
        assert effective(directory, "performance_issue_same") is False
    assert effective(run_dir, "test_mode") == "PerformanceOnly"
    assert effective(run_dir / "accuracy", "test_mode") == "AccuracyOnly"
    assert json.loads((run_dir / "result.json").read_text())["valid"] is True
