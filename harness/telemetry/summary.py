"""The result.json "telemetry" record: per-source power, energy, efficiency, heat, throttling."""

from __future__ import annotations

import math
from dataclasses import fields, replace

from harness.records.telemetry import (
    MlperfComparable,
    SourceError,
    SourceSummary,
    SourceUnavailable,
    TelemetrySpan,
    TelemetrySummary,
    Violation,
)
from harness.telemetry.base import Sample, SourceCounters, Telemetry
from harness.telemetry.energy import (
    MAX_SOURCE_W,
    NS_PER_S,
    average_power_w,
    counter_delta,
    plausible_w,
    sample_rate_hz,
    throttle_shares,
    window_energy_j,
)
from harness.telemetry.pertoken import TokenSpan, missed, per_token, token_window

NOT_REPORTED = "not reported by this source"


def summarize(
    t: Telemetry, *, samples_processed: int, scenario: str, tokens: TokenSpan | None = None
) -> TelemetrySummary:
    """The summary over the window; a value that could not be measured is None with its reason.

    ``tokens``, a generative run's, adds each source's energy per output token and the
    window's alignment with LoadGen's first issue and last completion.
    """
    sources = {
        c.name: _source(t, c, samples_processed=samples_processed, scenario=scenario, tokens=tokens)
        for c in t.counters
    }
    unavailable = tuple(SourceUnavailable(source=s, reason=r) for s, r in t.unavailable)
    window = None
    if tokens is not None:
        window = token_window(
            tokens,
            window_start_ns=t.window_start_ns,
            window_end_ns=t.window_end_ns,
            per_source_mj={n: s.energy_per_token_mj for n, s in sources.items()},
            unavailable=unavailable,
            source_reasons={
                n: why
                for n, s in sources.items()
                if (why := s.null_reasons.get("energy_per_token_mj")) is not None
            },
        )
    return TelemetrySummary(
        window=TelemetrySpan(
            start_ns=t.window_start_ns,
            end_ns=t.window_end_ns,
            duration_s=t.duration_ns / NS_PER_S,
        ),
        interval_s=t.interval_s,
        sources=sources,
        mlperf_comparable=_mlperf_comparable(t.counters),
        unavailable=unavailable,
        errors=tuple(SourceError(source=s, error=e) for s, e in t.errors),
        tokens=window,
    )


def _source(
    t: Telemetry,
    counters: SourceCounters,
    *,
    samples_processed: int,
    scenario: str,
    tokens: TokenSpan | None,
) -> SourceSummary:
    rows = t.samples_of(counters.name)
    reasons: dict[str, str] = {}
    notes: list[str] = []
    points = _power_points(rows, notes)
    rate = sample_rate_hz([p[0] for p in points])
    energy_j, method = _energy(t, counters, points, rate, notes, reasons)
    if energy_j is None and not points and any(s.power_w is not None for s in rows):
        reasons["energy_j"] = f"every power reading was implausible (0..{MAX_SOURCE_W:g} W)"
    avg_w = None if energy_j is None else average_power_w(energy_j, t.duration_ns)
    reasons["avg_power_w"] = reasons.get("energy_j", "the window has no duration")
    per_token_mj, per_joule = None, None
    if tokens is not None:
        outside = missed(tokens, t.window_start_ns, t.window_end_ns)
        per_token_mj, per_joule = per_token(energy_j, tokens.output_tokens, reasons, outside)
    summary = SourceSummary(
        kind=counters.kind,
        method=method,
        energy_counter=counters.energy_method or None,
        power_method=counters.power_method or None,
        power_samples=len(points),
        sample_rate_hz=_r(rate, 3),
        avg_power_w=_r(avg_w, 3),
        energy_j=_r(energy_j, 6),
        energy_per_inference_mj=_per_inference(energy_j, samples_processed, reasons),
        samples_per_second_per_watt=_efficiency(
            avg_w, samples_processed, t.duration_ns, scenario, reasons
        ),
        energy_per_token_mj=per_token_mj,
        tokens_per_joule=per_joule,
        peak_temp_c=_peak_temp(rows, reasons),
        throttle=_throttle(t, rows, reasons),
        violation_counters=_violations(t, counters, reasons),
        notes=tuple(notes),
        null_reasons={},
    )
    # Each value that is None keeps its reason, in the record's field order.
    nulls = [f.name for f in fields(summary) if getattr(summary, f.name) is None]
    return replace(summary, null_reasons={k: reasons[k] for k in nulls if k in reasons})


def _power_points(rows: tuple[Sample, ...], notes: list[str]) -> list[tuple[int, float]]:
    """(t_ns, W) of the plausible power readings; a fault's inf or 1e308 W would swamp them."""
    readings = [(s.t_ns, s.power_w) for s in rows if s.power_w is not None]
    points = [(t, w) for t, w in readings if plausible_w(w)]
    if len(points) < len(readings):
        dropped = len(readings) - len(points)
        notes.append(f"{dropped} power reading(s) outside 0..{MAX_SOURCE_W:g} W ignored")
    return points


def _energy(
    t: Telemetry,
    counters: SourceCounters,
    points: list[tuple[int, float]],
    rate: float | None,
    notes: list[str],
    reasons: dict[str, str],
) -> tuple[float | None, str | None]:
    """Energy (J) over the window and how: the counter's delta, else integrated samples."""
    start, end = counters.energy_start_mj, counters.energy_end_mj
    if start is not None and end is not None:
        delta = counter_delta(start, end, None)
        if delta is not None and math.isfinite(delta):
            return delta / 1000, "energy counter"
        why = "went backwards" if delta is None else "is not finite"
        notes.append(f"energy counter {why} ({start} -> {end} mJ); ignored")
    energy_j = window_energy_j(points, t.window_start_ns, t.window_end_ns)
    if energy_j is None:
        reasons["energy_j"] = "no energy counter and no power readings inside the window"
        return None, None
    return energy_j, f"integrated samples @ {rate:.3g} Hz" if rate else "integrated samples"


def _per_inference(
    energy_j: float | None, samples_processed: int, reasons: dict[str, str]
) -> float | None:
    if energy_j is None:
        reasons["energy_per_inference_mj"] = "no energy measured"
        return None
    if samples_processed <= 0:
        reasons["energy_per_inference_mj"] = "no samples processed"
        return None
    return _r(energy_j * 1000 / samples_processed, 6)


def _efficiency(
    avg_w: float | None,
    samples_processed: int,
    duration_ns: int,
    scenario: str,
    reasons: dict[str, str],
) -> float | None:
    key = "samples_per_second_per_watt"
    if scenario != "Offline":
        reasons[key] = f"reported for Offline only (this run is {scenario})"
    elif avg_w is None or avg_w <= 0:
        reasons[key] = "no average power measured" if avg_w is None else "average power is 0 W"
    elif samples_processed <= 0 or duration_ns <= 0:
        reasons[key] = "no samples processed"
    else:
        return _r(samples_processed * NS_PER_S / duration_ns / avg_w, 6)
    return None


def _peak_temp(rows: tuple[Sample, ...], reasons: dict[str, str]) -> float | None:
    temps = [s.temp_c for s in rows if s.temp_c is not None and math.isfinite(s.temp_c)]
    if not temps:
        reasons["peak_temp_c"] = NOT_REPORTED
        return None
    return max(temps)


def _throttle(
    t: Telemetry, rows: tuple[Sample, ...], reasons: dict[str, str]
) -> dict[str, float] | None:
    shares = throttle_shares(
        [(s.t_ns, s.throttle) for s in rows], t.window_start_ns, t.window_end_ns
    )
    if shares is None:
        reasons["throttle"] = NOT_REPORTED
        return None
    return {reason: round(share, 6) for reason, share in shares.items()}


def _violations(
    t: Telemetry, counters: SourceCounters, reasons: dict[str, str]
) -> dict[str, Violation] | None:
    if not counters.violations_ns:
        reasons["violation_counters"] = NOT_REPORTED
        return None
    duration = max(t.duration_ns, 1)
    return {
        cause: Violation(time_s=(end - start) / NS_PER_S, share=round((end - start) / duration, 6))
        for cause, start, end in counters.violations_ns
    }


def _mlperf_comparable(counters: tuple[SourceCounters, ...]) -> MlperfComparable:
    wall = [c.name for c in counters if c.kind == "wall"]
    if wall:
        return MlperfComparable(source=wall[0], note="wall power: what MLPerf Power measures")
    return MlperfComparable(
        source=None,
        note="no wall meter: these are component figures (GPU, CPU, DRAM), below the "
        "wall (AC) power MLPerf Power measures; pass a meter command or CSV to compare",
    )


def _r(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
