"""The telemetry summary: power, energy, heat and throttling over LoadGen's measured window."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class TelemetrySpan:
    """The window telemetry covered: LoadGen's timed window, on the monotonic clock."""

    start_ns: int
    end_ns: int
    duration_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Violation:
    """Time a power or thermal violation counter advanced within the window."""

    time_s: float
    share: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceSummary:
    """One power source over the window; a null value has its reason in ``null_reasons``.

    ``throttle`` maps each throttle reason to the share of the window it was active.
    """

    kind: str
    method: str | None
    energy_counter: str | None
    power_method: str | None
    power_samples: int
    sample_rate_hz: float | None
    avg_power_w: float | None
    energy_j: float | None
    energy_per_inference_mj: float | None
    samples_per_second_per_watt: float | None
    peak_temp_c: float | None
    throttle: Mapping[str, float] | None
    violation_counters: Mapping[str, Violation] | None
    notes: tuple[str, ...]
    null_reasons: Mapping[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class MlperfComparable:
    """Which source (if any) is wall power, the figure MLPerf Power compares."""

    source: str | None
    note: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceUnavailable:
    """A power source that could not be read on this machine, and why."""

    source: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceError:
    """A power source that failed during the window."""

    source: str
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TelemetrySummary:
    """Power, energy, heat and throttling over LoadGen's measured window, per source."""

    window: TelemetrySpan
    interval_s: float
    sources: Mapping[str, SourceSummary]
    mlperf_comparable: MlperfComparable
    unavailable: tuple[SourceUnavailable, ...]
    errors: tuple[SourceError, ...]
