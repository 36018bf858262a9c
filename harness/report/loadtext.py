"""A load sweep as text: a row per arrival rate, the knee, why it stopped (bench and show)."""

from __future__ import annotations

from harness.records.loadsweep import LoadSweep

_STOPPED = {
    "rates": "every requested rate ran",
    "over_bound": "two rates in a row broke the bound: higher ones only queue longer",
    "error": "a run failed",
}
LOAD_HEADER = ("target qps", "completed qps", "p50 ms", "p90 ms", "p99 ms", "bound met")


def render_load(sweep: LoadSweep, where: str) -> str:
    """The sweep's table and verdict, as `harness sweep --server-rates` and `show` print it."""
    lines = [f"{where}: load sweep, {sweep.scenario_name}: Server, {bound_text(sweep)}"]
    rows = [LOAD_HEADER, *load_rows(sweep)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(LOAD_HEADER))]
    lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join([*lines, *(f"  {line}" for line in load_verdict(sweep))])


def bound_text(sweep: LoadSweep) -> str:
    """The bound in words (p99 bound 15 ms), or that it is unknown."""
    bound = sweep.latency_bound_ns
    return f"p99 bound {bound / 1e6:g} ms" if bound else "p99 bound unknown"


def load_rows(sweep: LoadSweep) -> list[tuple[str, ...]]:
    """A row per rate run, in LOAD_HEADER's order."""
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


def load_verdict(sweep: LoadSweep) -> list[str]:
    """The knee, where the rates came from, why the sweep stopped, the profile."""
    if sweep.knee_qps is None:
        lines = ["knee: none: no rate met the bound in every trial"]
    else:
        lines = [
            f"knee: {sweep.knee_qps:g} qps, the highest rate that met the bound in every trial"
        ]
    if sweep.peak_qps is not None:
        lines.append(f"rates from LoadGen's peak search: {sweep.peak_qps:g} qps")
    ran = {p.target_qps for p in sweep.points}
    skipped = [f"{r:g}" for r in sweep.requested_qps if r not in ran]
    stopped = sweep.failure if sweep.failure else _STOPPED[sweep.stopped]
    lines.append(f"stopped: {stopped}" + (f"; not run: {', '.join(skipped)}" if skipped else ""))
    if sweep.profile == "quick":
        lines.append("quick profile: shortened LoadGen runs, NOT valid for an MLPerf submission")
    return lines


def _number(value: float | None, decimals: int) -> str:
    return "n/a" if value is None else f"{value:,.{decimals}f}"
