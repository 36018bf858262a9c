"""Telemetry data: one reading, one sample row, the window's record and the source protocols."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, kw_only=True)
class Reading:
    """One instantaneous sample from a source; None means the source does not report it."""

    power_w: float | None = None
    temp_c: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    util_pct: float | None = None
    # Active clock-event (throttle) reasons: () when none is active, None when not reported.
    throttle: tuple[str, ...] | None = None


class PowerSource(Protocol):
    """One device or power domain, e.g. "gpu0", "cpu-package-0", "dram-0", "wall"."""

    @property
    def name(self) -> str:
        """Unique name of the source; also its label in telemetry.csv and result.json."""
        ...

    @property
    def kind(self) -> str:
        """What it measures: "gpu", "cpu", "dram" or "wall"."""
        ...

    def read(self) -> Reading:
        """Take one sample; raises DeviceError when the device cannot be read."""
        ...

    def energy_mj(self) -> float | None:
        """Cumulative energy counter (wraparound handled inside); None when there is none."""
        ...


@runtime_checkable
class ViolationCounters(Protocol):
    """A source with cumulative throttle time counters, read at the window's edges."""

    def violation_ns(self) -> Mapping[str, int]:
        """Cumulative time (ns) clocks were held down, per cause ("power", "thermal")."""
        ...


@runtime_checkable
class DeviceMemoryReader(Protocol):
    """A source that reports its device's memory in use, read at the window's close."""

    def memory_bytes(self) -> tuple[int, int | None] | None:
        """(used, total) bytes of the whole device; None when it does not report them."""
        ...

    @property
    def memory_method(self) -> str:
        """The vendor call that reads it, for the record."""
        ...


@dataclass(frozen=True, kw_only=True)
class LoggedRows:
    """(unix time ns, watts) rows of a log, oldest first, and why each bad row was skipped."""

    rows: tuple[tuple[int, float], ...]
    skipped: tuple[str, ...] = ()


@runtime_checkable
class LoggedSource(Protocol):
    """A source whose samples come from its own log, read once after the window."""

    def readings_between(self, start_unix_ns: int, end_unix_ns: int) -> LoggedRows:
        """The rows logged inside the window; a bad row is skipped and noted, never fatal."""
        ...


@runtime_checkable
class Closable(Protocol):
    """A source holding a vendor library session that must be released."""

    def close(self) -> None:
        """Release the session; the source cannot be read afterwards."""
        ...


class SharedSession:
    """A vendor library session shared by the sources of one discovery.

    The library is shut down when the last source releases its share.
    """

    def __init__(self, users: int, shutdown: Callable[[], None]) -> None:
        self._users, self._shutdown, self._lock = users, shutdown, threading.Lock()

    def release(self) -> None:
        """Give back one share; the last one shuts the library down."""
        with self._lock:
            self._users -= 1
            last = self._users == 0
        if last:
            self._shutdown()


def power_method(source: object) -> str:
    """How a source's power_w is obtained, from its optional `power_method` attribute."""
    text = getattr(source, "power_method", "")
    return text if isinstance(text, str) else ""


def energy_method(source: object) -> str:
    """Which counter a source's energy_mj reads, from its optional `energy_method` attribute."""
    text = getattr(source, "energy_method", "")
    return text if isinstance(text, str) else ""


@dataclass(frozen=True, kw_only=True)
class Sample:
    """One row of the time series: when, which source, what it read."""

    t_ns: int
    source: str
    power_w: float | None = None
    temp_c: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    util_pct: float | None = None
    throttle: tuple[str, ...] | None = None

    @classmethod
    def of(cls, t_ns: int, source: str, reading: Reading) -> Sample:
        """A row from a reading taken at t_ns."""
        return cls(
            t_ns=t_ns,
            source=source,
            power_w=reading.power_w,
            temp_c=reading.temp_c,
            sm_clock_mhz=reading.sm_clock_mhz,
            mem_clock_mhz=reading.mem_clock_mhz,
            util_pct=reading.util_pct,
            throttle=reading.throttle,
        )


@dataclass(frozen=True, kw_only=True)
class SourceCounters:
    """A source's description and its cumulative counters at the window's start and end."""

    name: str
    kind: str
    power_method: str = ""
    energy_method: str = ""
    energy_start_mj: float | None = None
    energy_end_mj: float | None = None
    # (cause, counter at start ns, counter at end ns), for sources with violation counters.
    violations_ns: tuple[tuple[str, int, int], ...] = ()
    logged: bool = False


@dataclass(frozen=True, kw_only=True)
class Telemetry:
    """Everything sampled during one measured window; immutable, written by separate writers."""

    window_start_ns: int
    window_end_ns: int
    interval_s: float
    samples: tuple[Sample, ...]
    counters: tuple[SourceCounters, ...]
    unavailable: tuple[tuple[str, str], ...] = ()
    errors: tuple[tuple[str, str], ...] = ()
    window_start_unix_ns: int | None = None

    @property
    def duration_ns(self) -> int:
        """Length of the window."""
        return self.window_end_ns - self.window_start_ns

    def samples_of(self, source: str) -> tuple[Sample, ...]:
        """The rows of one source, in time order."""
        return tuple(s for s in self.samples if s.source == source)
