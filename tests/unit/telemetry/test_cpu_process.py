"""harness/telemetry/cpuproc.py: the host CPU sampler in its own process, against a real child."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_cpu_sampler import _bare_vm, _laptop

from harness.errors import RunError
from harness.telemetry.cpu import CpuSampler, discover_cpu
from harness.telemetry.cpuproc import CpuSamplerProcess, record_from_json, record_to_json

INTERVAL_S = 0.05


def _hold_the_gil(seconds: float) -> float:
    """One C call that keeps the interpreter lock (no bytecode runs inside sum over a range)."""
    t = time.perf_counter()
    sum(range(1_000_000))
    count = int(1_000_000 * seconds / (time.perf_counter() - t))
    t = time.perf_counter()
    sum(range(count))
    return time.perf_counter() - t


def test_the_child_samples_the_tree_it_is_given_over_the_window(tmp_path: Path) -> None:
    sampler = CpuSamplerProcess(_laptop(tmp_path), interval_s=INTERVAL_S)
    before = time.monotonic_ns()
    sampler.start()
    time.sleep(0.3)
    record = sampler.stop()
    after = time.monotonic_ns()
    assert before <= record.window_start_ns < record.window_end_ns <= after
    assert record.window_start_ns == record.rows[0].t_ns  # the first row marks the start
    assert len(record.rows) >= 3
    columns = [s.column for s in record.series]
    temps = {row.values[columns.index("temp_coretemp_package_id_0_c")] for row in record.rows}
    assert temps == {61.0}
    assert sampler._child.returncode == 0


def test_it_keeps_its_schedule_while_the_worker_holds_the_gil(tmp_path: Path) -> None:
    """The reason it is a process: a thread here takes no row while the lock is held."""
    root = _bare_vm(tmp_path)
    probe, missing = discover_cpu(root)
    thread = CpuSampler(probe, interval_s=INTERVAL_S, unavailable=missing)
    child = CpuSamplerProcess(root, interval_s=INTERVAL_S)
    thread.start()
    child.start()
    held_s = _hold_the_gil(1.0)
    in_process, separate = thread.stop(), child.stop()
    # ~20 ticks while the lock was held: the thread takes a row at each end and at most one
    # woken late; the child takes most of them, even on a loaded machine
    ticks = held_s / INTERVAL_S
    assert len(in_process.rows) <= 4
    assert len(separate.rows) >= ticks * 0.4


def test_a_sampling_process_that_dies_fails_the_window_with_its_reason(tmp_path: Path) -> None:
    sampler = CpuSamplerProcess(_bare_vm(tmp_path), interval_s=INTERVAL_S)
    sampler.start()
    sampler._child.kill()
    sampler._child.wait()
    with pytest.raises(RunError, match="CPU telemetry: the sampling process"):
        sampler.stop()


def test_a_window_that_never_opened_leaves_no_process_behind(tmp_path: Path) -> None:
    sampler = CpuSamplerProcess(_bare_vm(tmp_path), interval_s=INTERVAL_S)
    sampler.kill()
    sampler.kill()  # idempotent: release() may follow a close() that failed
    assert sampler._child.poll() is not None
    with pytest.raises(RuntimeError, match="before start"):
        sampler.stop()


def test_the_record_crosses_the_pipe_unchanged(tmp_path: Path) -> None:
    probe, missing = discover_cpu(_laptop(tmp_path))
    sampler = CpuSampler(probe, interval_s=INTERVAL_S, unavailable=missing)
    sampler.start()
    time.sleep(0.12)
    record = sampler.stop()
    assert record_from_json(record_to_json(record)) == record
