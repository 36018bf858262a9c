"""Plot helpers: the CDF's points, PNG output, and no matplotlib state at import."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

from golden import REPO

from harness.records.result import Latencies
from harness.report.plots import cdf_points, has_plottable
from harness.telemetry.base import Sample, Telemetry


def test_cdf_runs_through_the_recorded_percentiles() -> None:
    latency_ns = Latencies(
        min=1_000_000,
        p50=2_000_000,
        p90=3_000_000,
        p95=4_000_000,
        p97=5_000_000,
        p99=6_000_000,
        p999=7_000_000,
        max=8_000_000,
        mean=2_500_000,
        early_stopping_p90=None,
        early_stopping_p99=None,
    )
    assert cdf_points(latency_ns) == [
        (1.0, 0.0),
        (2.0, 0.5),
        (3.0, 0.9),
        (4.0, 0.95),
        (5.0, 0.97),
        (6.0, 0.99),
        (7.0, 0.999),
        (8.0, 1.0),
    ]
    gaps = dataclasses.replace(latency_ns, min=None, p90=None, p95=None, p97=None, p99=None)
    assert cdf_points(dataclasses.replace(gaps, p999=None, max=None)) == [(2.0, 0.5)]


def test_only_power_temperature_or_clocks_are_plottable() -> None:
    def telemetry(*samples: Sample) -> Telemetry:
        return Telemetry(
            window_start_ns=0, window_end_ns=1, interval_s=0.1, samples=samples, counters=()
        )

    assert not has_plottable(telemetry(Sample(t_ns=0, source="gpu0", util_pct=90.0)))
    assert has_plottable(telemetry(Sample(t_ns=0, source="gpu0", temp_c=50.0)))


def test_importing_does_not_load_matplotlib_and_plotting_does_not_use_pyplot() -> None:
    code = (
        "import sys\n"
        "import harness.report.html, harness.report.compare_render, harness.analysis.compare\n"
        "print('matplotlib' in sys.modules, 'scipy' in sys.modules)\n"
        "from harness.report.plots import UtilizationBar, utilization_png\n"
        "png = utilization_png([UtilizationBar(label='a', achieved_tflops=1.0, peak_tflops=2.0)])\n"
        "print(png[:4] == b'\\x89PNG', 'matplotlib.pyplot' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split("\n")[:2] == ["False False", "True False"]
