"""Background sampling of power sources across one measured window (start() ... stop())."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from harness.errors import ConfigError, HarnessError, RunError
from harness.telemetry.base import (
    LoggedRows,
    LoggedSource,
    PowerSource,
    Reading,
    Sample,
    SourceCounters,
    Telemetry,
    ViolationCounters,
    energy_method,
    power_method,
)
from harness.telemetry.energy import NS_PER_S

# Bad rows of a meter log named one by one in the result's errors; the rest are counted.
NAMED_SKIPPED_ROWS = 5


def skipped_note(skipped: Sequence[str]) -> str:
    """The error a meter log's unreadable rows leave: their count, then each (up to a few)."""
    count = len(skipped)
    named = "; ".join(skipped[:NAMED_SKIPPED_ROWS])
    more = f"; and {count - NAMED_SKIPPED_ROWS} more" if count > NAMED_SKIPPED_ROWS else ""
    return f"skipped {count} bad row{'s' if count > 1 else ''}: {named}{more}"


def next_tick(tick: int, elapsed_ns: int, interval_ns: int) -> int:
    """The next tick of the schedule not already past: slow reads skip ticks, never drift."""
    return max(tick + 1, -(-elapsed_ns // interval_ns))


class TelemetryRecorder:
    """Samples every source on one background thread between start() and stop().

    Energy and violation counters are read at the window's edges; meter logs are read after
    the window. A source that fails to read leaves a gap and an entry in `errors`; it does
    not stop the others, nor the benchmark.
    """

    def __init__(
        self,
        sources: Sequence[PowerSource],
        *,
        interval_s: float = 0.1,
        clock: Callable[[], int] = time.monotonic_ns,
        wall_clock: Callable[[], int] = time.time_ns,
        unavailable: Sequence[tuple[str, str]] = (),
        join_timeout_s: float = 5.0,
    ) -> None:
        if not interval_s > 0:
            raise ConfigError(f"telemetry interval_s must be > 0, not {interval_s}")
        names = [s.name for s in sources]
        if len(set(names)) != len(names):
            raise ConfigError(f"telemetry sources need unique names, got {names}")
        self._sources = tuple(sources)
        self._live = tuple(s for s in self._sources if not isinstance(s, LoggedSource))
        self._interval_ns = max(1, round(interval_s * NS_PER_S))
        self._interval_s, self._clock, self._wall_clock = interval_s, clock, wall_clock
        self._unavailable = tuple(unavailable)
        self._join_timeout_s = join_timeout_s
        self._reading: str | None = None  # the source being read on the sampling thread
        self._abandoned: tuple[str, ...] = ()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._samples: list[Sample] = []
        self._errors: dict[tuple[str, str], None] = {}
        self._failure: Exception | None = None
        self._start: dict[str, tuple[float | None, dict[str, int]]] = {}
        self._start_ns = self._start_unix_ns = 0

    def start(self) -> None:
        """Read the counters, mark the window's start and start sampling."""
        if self._thread is not None:
            raise RuntimeError("TelemetryRecorder.start() called twice")
        self._start = {s.name: self._counters(s) for s in self._sources}
        self._start_unix_ns = self._wall_clock()
        self._start_ns = self._clock()
        self._thread = threading.Thread(target=self._run, name="telemetry", daemon=True)
        self._thread.start()

    def stop(self) -> Telemetry:
        """Stop sampling, mark the window's end, read the counters; the window's record."""
        if self._thread is None:
            raise RuntimeError("TelemetryRecorder.stop() called before start()")
        self.request_stop()
        self._thread.join(self._join_timeout_s)
        samples = list(self._samples)  # a hung thread may still append once it returns
        end_ns, end_unix_ns = self._clock(), self._wall_clock()
        if self._thread.is_alive():
            self._abandon()
        elif self._failure is not None:
            raise RunError(f"telemetry sampling failed: {self._failure!r}") from self._failure
        counters = tuple(self._window_counters(s) for s in self._sources)
        logged = [s for s in self._sources if isinstance(s, LoggedSource)]
        for source in logged:
            samples += self._logged_samples(source.name, source, end_unix_ns)
        return Telemetry(
            window_start_ns=self._start_ns,
            window_end_ns=end_ns,
            interval_s=self._interval_s,
            samples=tuple(sorted(samples, key=lambda s: s.t_ns)),
            counters=counters,
            unavailable=self._unavailable,
            errors=tuple(self._errors),
            window_start_unix_ns=self._start_unix_ns,
        )

    @property
    def abandoned(self) -> tuple[str, ...]:
        """Sources whose read never returned by the end of the window: do not touch them."""
        return self._abandoned

    def _abandon(self) -> None:
        """Leave the (daemon) sampling thread in a hung read, and note which source hung."""
        name = self._reading or "telemetry"
        self._abandoned = (name,)
        self._errors[
            (
                name,
                f"a read did not return within {self._join_timeout_s:g} s of the window's "
                "end; its sampling was abandoned",
            )
        ] = None

    def request_stop(self) -> None:
        """Ask the sampling thread to finish after its current sample (stop() waits for it)."""
        self._stop.set()

    def _run(self) -> None:
        if not self._live:  # nothing to sample: do not wake up during the benchmark
            self._stop.wait()
            return
        tick = 0
        try:
            while not self._stop.is_set():
                for source in self._live:
                    self._sample(source)
                tick = next_tick(tick, self._clock() - self._start_ns, self._interval_ns)
                delay_ns = self._start_ns + tick * self._interval_ns - self._clock()
                self._stop.wait(max(delay_ns, 0) / NS_PER_S)
        except Exception as exc:  # a bug, not a device error: re-raised by stop()
            self._failure = exc

    def _sample(self, source: PowerSource) -> None:
        t_ns = self._clock()
        self._reading = source.name
        try:
            reading = source.read()
        except HarnessError as exc:
            self._errors[(source.name, str(exc))] = None
            reading = Reading()
        finally:
            self._reading = None
        self._samples.append(Sample.of(t_ns, source.name, reading))

    def _counters(self, source: PowerSource) -> tuple[float | None, dict[str, int]]:
        try:
            energy = source.energy_mj()
        except HarnessError as exc:
            self._errors[(source.name, str(exc))] = None
            energy = None
        violations: dict[str, int] = {}
        if isinstance(source, ViolationCounters):
            try:
                violations = dict(source.violation_ns())
            except HarnessError as exc:
                self._errors[(source.name, str(exc))] = None
        return energy, violations

    def _window_counters(self, source: PowerSource) -> SourceCounters:
        start_mj, start_viol = self._start[source.name]
        hung = source.name in self._abandoned
        end_mj, end_viol = (None, {}) if hung else self._counters(source)
        causes = sorted(set(start_viol) & set(end_viol))
        return SourceCounters(
            name=source.name,
            kind=source.kind,
            power_method=power_method(source),
            energy_method=energy_method(source),
            energy_start_mj=start_mj,
            energy_end_mj=end_mj,
            violations_ns=tuple((c, start_viol[c], end_viol[c]) for c in causes),
            logged=isinstance(source, LoggedSource),
        )

    def _logged_samples(self, name: str, source: LoggedSource, end_unix_ns: int) -> list[Sample]:
        try:
            log: LoggedRows = source.readings_between(self._start_unix_ns, end_unix_ns)
        except HarnessError as exc:
            self._errors[(name, str(exc))] = None
            return []
        if log.skipped:
            self._errors[(name, skipped_note(log.skipped))] = None
        # The log's wall-clock times mapped onto the monotonic clock of the window.
        offset = self._start_ns - self._start_unix_ns
        return [Sample(t_ns=t + offset, source=name, power_w=w) for t, w in log.rows]
