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
    # A generative run's energy per output token (the SUT's own count): null for other models.
    energy_per_token_mj: float | None = None
    tokens_per_joule: float | None = None
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
class TokenWindow:
    """A generative run's output tokens over the window, and how the window meets LoadGen's.

    ``output_tokens`` is what the SUT generated and counted (never what it told LoadGen): the
    divisor of every source's energy per token. The window opens at LoadGen's sample load and
    closes at its unload; ``issue_gap_ms`` is from the window's start to LoadGen's first
    issue, ``completion_gap_ms`` from the last completion to the window's end, both on the
    monotonic clock the SUT stamped queries with. ``not_measured`` says why no source gave an
    energy per token ("not measured: <reason>"); null where one did.
    """

    output_tokens: int
    first_issue_ns: int
    last_completion_ns: int
    issue_gap_ms: float
    completion_gap_ms: float
    not_measured: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TelemetrySummary:
    """Power, energy, heat and throttling over LoadGen's measured window, per source."""

    window: TelemetrySpan
    interval_s: float
    sources: Mapping[str, SourceSummary]
    mlperf_comparable: MlperfComparable
    unavailable: tuple[SourceUnavailable, ...]
    errors: tuple[SourceError, ...]
    tokens: TokenWindow | None = None  # a generative run's (null for other models)
