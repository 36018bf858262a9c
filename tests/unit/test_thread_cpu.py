"""benchmarks/thread_cpu.py: a worker's busy thread told from the threads beside it, from /proc."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from thread_cpu import ThreadMonitor

# One thread spins for the whole run, one wakes 100 times a second doing a little work:
# the shape of inference beside a telemetry sampler. The last argument names it a worker.
PROGRAM = """
import threading, time
end = time.monotonic() + 4.0
def light():
    while time.monotonic() < end:
        sum(range(2000)); time.sleep(0.01)
threading.Thread(target=light).start()
while time.monotonic() < end:
    pass
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads Linux's /proc")
def test_the_busy_thread_is_inference_and_the_sampler_is_beside_it() -> None:
    with ThreadMonitor(interval_s=0.1) as monitor:
        child = subprocess.Popen([sys.executable, "-c", PROGRAM, "harness.execution.worker"])
        child.wait(timeout=30)
        time.sleep(0.3)
    found = monitor.busiest_worker(trim_s=0.5)
    assert found is not None
    assert len(found.inference_s) == 1  # the spinning thread, not the sampler
    # busy for a good part of the window (on a machine loaded 5x over its cores, as a test
    # run beside other work may be, a spinning thread gets a fifth of a core or less); the
    # sampler's share is a few % of a core at most (/proc counts in 10 ms ticks, so on a busy
    # machine its ~0.2 % of a core over a shortened window may read as none)
    assert found.inference_s[0] > found.window_s / 10
    assert 0 <= found.beside_s < found.inference_s[0] / 10


def test_no_worker_seen_reads_as_none() -> None:
    with ThreadMonitor(interval_s=0.05):
        time.sleep(0.2)
    assert ThreadMonitor().busiest_worker() is None
