"""A load sweep as text: a row per arrival rate, the knee, why it stopped (bench and show)."""

from __future__ import annotations

from harness.analysis.loadsweep import KEPT_UP_SHARE, queue_grew
from harness.records.loadsweep import LoadPoint, LoadSweep

_STOPPED = {
    "rates": "every requested rate ran",
    "over_bound": "two rates in a row broke the bound: higher ones only queue longer",
    "error": "a run failed",
}
LOAD_HEADER = ("target qps", "completed qps", "p50 ms", "p90 ms", "p99 ms", "bound met")
TOKEN_HEADER = (
    "target qps",
    "completed qps",
    "tokens/s",
    "goodput qps",
    "TTFT p50 ms",
    "TTFT p99 ms",
    "TPOT p50 ms",
    "TPOT p99 ms",
    "queue p99 ms",
    "limits met",
)


def render_load(sweep: LoadSweep, where: str) -> str:
    """The sweep's table and verdict, as `harness sweep --server-rates` and `show` print it."""
    lines = [f"{where}: load sweep, {sweep.scenario_name}: {sweep.mode}, {bound_text(sweep)}"]
    header = load_header(sweep)
    rows = [header, *load_rows(sweep)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join([*lines, *(f"  {line}" for line in load_verdict(sweep))])


def is_generative(sweep: LoadSweep) -> bool:
    """Whether the sweep's runs were a generative model's (token figures per rate)."""
    return any(p.tokens is not None for p in sweep.points)


def load_header(sweep: LoadSweep) -> tuple[str, ...]:
    """The table's columns: a generative sweep's token figures, else the latencies."""
    return TOKEN_HEADER if is_generative(sweep) else LOAD_HEADER


def bound_text(sweep: LoadSweep) -> str:
    """The bound in words (p99 bound 15 ms; p99 TTFT limit 200 ms, TPOT 50 ms), or unknown."""
    if sweep.ttft_limit_ns is not None and sweep.tpot_limit_ns is not None:
        return (
            f"p99 TTFT limit {sweep.ttft_limit_ns / 1e6:g} ms, "
            f"TPOT limit {sweep.tpot_limit_ns / 1e6:g} ms"
        )
    bound = sweep.latency_bound_ns
    return f"p99 bound {bound / 1e6:g} ms" if bound else "p99 bound unknown"


def load_rows(sweep: LoadSweep) -> list[tuple[str, ...]]:
    """A row per rate run, in `load_header`'s order."""
    if is_generative(sweep):
        return [_token_row(p) for p in sweep.points]
    return [
        (
            f"{p.target_qps:g}",
            _number(p.completed_qps, 1),
            _number(None if p.p50_ns is None else p.p50_ns / 1e6, 3),
            _number(None if p.p90_ns is None else p.p90_ns / 1e6, 3),
            _number(None if p.p99_ns is None else p.p99_ns / 1e6, 3),
            f"{p.valid_trials} of {p.trials}",
        )
        for p in sweep.points
    ]


def _token_row(p: LoadPoint) -> tuple[str, ...]:
    t = p.tokens
    return (
        f"{p.target_qps:g}",
        _number(p.completed_qps, 1),
        _number(None if t is None else t.tokens_per_second, 1),
        _number(None if t is None else t.goodput_qps, 2),
        *(
            _number(None if t is None or (v := getattr(t, name)) is None else v / 1e6, 3)
            for name in ("ttft_p50_ns", "ttft_p99_ns", "tpot_p50_ns", "tpot_p99_ns", "queue_p99_ns")
        ),
        f"{p.valid_trials} of {p.trials}",
    )


def load_verdict(sweep: LoadSweep) -> list[str]:
    """The knee, where the rates came from, why the sweep stopped, the profile."""
    met = "both limits" if is_generative(sweep) else "the bound"
    kept = " with its queue kept up" if is_generative(sweep) else ""
    if sweep.knee_qps is None:
        lines = [f"knee: none: no rate met {met} in every trial{kept}"]
    else:
        lines = [
            f"knee: {sweep.knee_qps:g} qps, the highest rate that met {met} in every trial{kept}"
        ]
    grew = [p for p in sweep.points if queue_grew(p)]
    if grew:
        rates = ", ".join(f"{p.target_qps:g} ({p.completed_qps or 0:,.1f} completed)" for p in grew)
        lines.append(
            f"queue grew (completed under {KEPT_UP_SHARE:.0%} of the offered rate): {rates}"
        )
    if sweep.peak_qps is not None:
        lines.append(f"rates from the capacity search: {sweep.peak_qps:g} qps")
    ran = {p.target_qps for p in sweep.points}
    skipped = [f"{r:g}" for r in sweep.requested_qps if r not in ran]
    stopped = sweep.failure if sweep.failure else _STOPPED[sweep.stopped]
    if is_generative(sweep):
        stopped = stopped.replace("broke the bound", "broke a limit")
    lines.append(f"stopped: {stopped}" + (f"; not run: {', '.join(skipped)}" if skipped else ""))
    if sweep.profile == "quick":
        lines.append("quick profile: shortened LoadGen runs, NOT valid for an MLPerf submission")
    return lines


def _number(value: float | None, decimals: int) -> str:
    return "n/a" if value is None else f"{value:,.{decimals}f}"
