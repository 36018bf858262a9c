"""CPU time per thread of the harness's worker over LoadGen's timed window, read from /proc.

Throughput ratios on a shared machine swing by more than the overhead they look for; CPU
seconds per thread do not. The inference threads (onnxruntime's pool and the thread that calls
it) are the ones busy for most of the window; every other thread (telemetry, LoadGen's own,
progress) takes its CPU from them, since inference fills every core. Linux only.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

PROC = Path("/proc")
TICKS_PER_S = os.sysconf("SC_CLK_TCK")
WORKER = b"harness.execution.worker"


@dataclass(frozen=True, kw_only=True)
class WindowCpu:
    """CPU seconds of the worker's threads over its busiest span (the timed window, trimmed)."""

    window_s: float
    inference_s: tuple[float, ...]  # the threads busy for most of the window
    beside_s: float  # every other thread of the worker together

    @property
    def beside_pct_of_core(self) -> float:
        return 100 * self.beside_s / self.window_s if self.window_s else 0.0


class ThreadMonitor:
    """Polls the threads' CPU time of this process's harness workers while `with` runs.

    Only workers whose parent is this process count: another benchmark's are not ours.
    """

    def __init__(self, interval_s: float = 0.2) -> None:
        self._interval_s = interval_s
        self._parent = os.getpid()
        self._stop = threading.Event()
        self._rows: list[tuple[float, int, int, float]] = []  # (time, pid, tid, cpu s)
        self._thread = threading.Thread(target=self._run, name="thread-cpu", daemon=True)

    def __enter__(self) -> ThreadMonitor:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            clock = time.monotonic()
            for pid in _workers(self._parent):
                for tid, cpu_s in _threads(pid).items():
                    self._rows.append((clock, pid, tid, cpu_s))

    def busiest_worker(self, trim_s: float = 1.0) -> WindowCpu | None:
        """The worker that used most CPU (the performance test), over its trimmed busy span."""
        last: dict[tuple[int, int], float] = {}
        for _, pid, tid, cpu_s in self._rows:
            last[(pid, tid)] = cpu_s
        if not last:
            return None
        totals: dict[int, float] = {}
        for (pid, _), cpu_s in last.items():
            totals[pid] = totals.get(pid, 0.0) + cpu_s
        pid = max(totals, key=lambda p: totals[p])
        rows = [(t, tid, c) for t, p, tid, c in self._rows if p == pid]
        # The timed window is the span of the busy thread that started last: LoadGen's issue
        # thread, which calls onnxruntime; the warm-up before it runs on the main thread.
        # Only threads busy for a good part of the run: a light thread (a sampler) gains a 10 ms
        # tick now and then, and two late ticks would read as a short span that started last.
        ranked = sorted({tid for _, tid, _ in rows}, key=lambda tid: -last[(pid, tid)])
        top_s = last[(pid, ranked[0])]
        busiest = [tid for tid in ranked[:3] if last[(pid, tid)] >= top_s / 4]
        spans = [s for s in (_span(rows, tid) for tid in busiest) if s is not None]
        if not spans:
            return None
        first, final = max(spans)
        lo, hi = first + trim_s, final - trim_s
        if hi <= lo:
            return None
        used = {tid: _at(rows, tid, hi) - _at(rows, tid, lo) for tid in {tid for _, tid, _ in rows}}
        # Busy beside the busiest, not against a whole core: on a loaded machine the inference
        # thread may get a fifth of a core, and it is still the one that works.
        half_s = max(used.values()) / 2
        busy = tuple(sorted((c for c in used.values() if c > half_s), reverse=True))
        beside = sum(c for c in used.values() if c <= half_s)
        return WindowCpu(window_s=hi - lo, inference_s=busy, beside_s=beside)


def _span(rows: list[tuple[float, int, float]], tid: int) -> tuple[float, float] | None:
    """When a thread first and last gained CPU time; None if it did not, twice."""
    mine = [r for r in rows if r[1] == tid]
    grew = [t for (t, _, c), (_, _, before) in zip(mine[1:], mine, strict=False) if c > before]
    return (grew[0], grew[-1]) if len(grew) >= 2 else None


def _at(rows: list[tuple[float, int, float]], tid: int, when: float) -> float:
    found = 0.0
    for t, x, c in rows:
        if x == tid and t <= when:
            found = c
    return found


def _workers(parent: int) -> list[int]:
    """The parent's harness-worker children, from its threads' `children` lists.

    Cheap on purpose: this polls during the harness's timed window only, so a scan of every
    process's cmdline (about 1 ms of CPU a poll) would be a cost the plain rounds do not pay.
    """
    found = []
    for children in (PROC / str(parent) / "task").glob("*/children"):
        try:
            pids = children.read_text().split()
        except OSError:
            continue
        for pid in pids:
            try:
                if WORKER in (PROC / pid / "cmdline").read_bytes():
                    found.append(int(pid))
            except OSError:
                continue
    return found


def _threads(pid: int) -> dict[int, float]:
    """Each thread's user + system CPU seconds (fields 14 and 15 of its stat line)."""
    out: dict[int, float] = {}
    try:
        tids = [int(t.name) for t in (PROC / str(pid) / "task").iterdir()]
    except OSError:
        return out
    for tid in tids:
        try:
            stat = (PROC / str(pid) / "task" / str(tid) / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        out[tid] = (int(fields[11]) + int(fields[12])) / TICKS_PER_S
    return out
