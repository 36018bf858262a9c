"""The load sweep's plot: latency percentiles against achieved rate, the knee and bound marked."""

from __future__ import annotations

from harness.records.loadsweep import LoadPoint, LoadSweep
from harness.report.blocks import Image, Table
from harness.report.loadreport import load_blocks
from harness.report.plots import load_figure


def _point(target: float, achieved: float, p99_ms: float, valid: bool) -> LoadPoint:
    return LoadPoint(
        target_qps=target,
        dir=f"qps-{target:g}",
        trials=1,
        valid_trials=int(valid),
        completed_qps=achieved,
        p50_ns=p99_ms * 0.3e6,
        p90_ns=p99_ms * 0.6e6,
        p99_ns=p99_ms * 1e6,
    )


SWEEP = LoadSweep(
    scenario_name="tiny-load",
    profile="quick",
    latency_bound_ns=15_000_000,
    requested_qps=(100.0, 300.0, 600.0, 900.0),
    points=(
        _point(100, 101.0, 4.0, True),
        _point(300, 298.0, 6.0, True),
        _point(600, 590.0, 40.0, False),
        _point(900, 700.0, 300.0, False),
    ),
    knee_qps=300.0,
    stopped="over_bound",
)


def test_the_knee_is_a_line_at_its_achieved_rate_and_broken_points_are_hollow() -> None:
    ax = load_figure(SWEEP).axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert labels[:3] == ["p50", "p90", "p99"]
    assert "p99 bound 15 ms" in labels
    assert "knee: 298.0 qps achieved (target 300)" in labels
    knee = next(line for line in ax.get_lines() if line.get_label().startswith("knee"))
    assert list(knee.get_xdata()) == [298.0, 298.0]
    markers = [
        line for line in ax.get_lines() if line.get_marker() == "o" and len(line.get_xdata())
    ]
    hollow = [line for line in markers if line.get_fillstyle() == "none"]
    assert len(markers) == 12 and len(hollow) == 6  # 3 percentiles x 2 rates over the bound
    assert ax.get_xlabel() == "achieved rate (completed queries/s)"
    assert ax.get_yscale() == "log"


def test_the_report_section_holds_the_plot_and_the_rates() -> None:
    blocks = load_blocks(SWEEP, "runs/load")
    images = [b for b in blocks if isinstance(b, Image)]
    assert len(images) == 1 and images[0].png.startswith(b"\x89PNG")
    table = next(b for b in blocks if isinstance(b, Table))
    assert [row[0] for row in table.rows] == ["100", "300", "600", "900"]
