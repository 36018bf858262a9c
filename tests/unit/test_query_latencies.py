"""Per-query latencies: the SUTs' stamps, query_latencies.npz and the figures drawn from them."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import mlperf_loadgen as lg
import numpy as np
import pytest

from harness.errors import ResultError
from harness.loadgen import sut as sut_module
from harness.loadgen.querytimes import MIN_ROWS, QueryTimes, expected_rows
from harness.loadgen.sut import OfflineSUT, SampleStore, SingleStreamSUT
from harness.report import latency_plots
from harness.telemetry.latencies import (
    MIN_COMPLETIONS_PER_BIN,
    QueryLatencies,
    default_bin_s,
    percentile_curve,
    read_query_latencies,
    throughput_over_time,
    write_query_latencies,
)


class _Executor:
    """A stand-in executor: no model, answers at once (the SUT's bookkeeping is under test)."""

    batch_size = 4

    def attach(self, arrays: Any) -> None:
        del arrays

    def run_single(self, row: int) -> tuple[int, int]:
        return 0, 0

    def run_batch(self, rows: Sequence[int]) -> tuple[int, int]:
        return 0, 0


def _store() -> SampleStore:
    store = SampleStore(mock.Mock(), [], _Executor())
    store.row_of = {i: i for i in range(64)}
    return store


def _ticking(step_ns: int = 1000) -> Iterator[int]:
    return itertools.count(1_000_000, step_ns)


@pytest.fixture
def complete(monkeypatch: pytest.MonkeyPatch) -> mock.Mock:
    """LoadGen's completion call, faked at the vendor boundary."""
    fake = mock.create_autospec(lg.QuerySamplesComplete)
    monkeypatch.setattr(sut_module.lg, "QuerySamplesComplete", fake)
    return fake


def test_single_stream_stamps_each_query_issue_and_completion(complete: mock.Mock) -> None:
    clock = _ticking()
    sut = SingleStreamSUT(_Executor(), _store(), clock=lambda: next(clock))
    for n in range(3):
        sut.issue([100 + n], [n])
    columns = sut.times.columns()
    assert complete.call_count == 3
    assert columns["query"].tolist() == [0, 1, 2]
    # issue at entry, completion just before LoadGen is told: two ticks of the fake clock
    assert columns["issue_ns"].tolist() == [1_000_000, 1_002_000, 1_004_000]
    assert columns["complete_ns"].tolist() == [1_001_000, 1_003_000, 1_005_000]
    assert columns["samples"].tolist() == [1, 1, 1]


def test_offline_stamps_each_batch_of_its_one_query(complete: mock.Mock) -> None:
    clock = _ticking()
    sut = OfflineSUT(_Executor(), _store(), clock=lambda: next(clock))
    sut.issue(list(range(10)), list(range(10)))  # batches of 4, 4 and 2
    columns = sut.times.columns()
    assert columns["query"].tolist() == [0, 0, 0]
    assert columns["issue_ns"].tolist() == [1_000_000] * 3
    assert columns["complete_ns"].tolist() == [1_001_000, 1_002_000, 1_003_000]
    assert columns["samples"].tolist() == [4, 4, 2]
    assert sut.completed == 10


def test_query_times_grow_past_their_reservation() -> None:
    times = QueryTimes(2)
    for n in range(5):
        times.record(n, 10 * n, 10 * n + 3, 1)
    assert times.count == 5 and times.grown == 2
    assert times.columns()["complete_ns"].tolist() == [3, 13, 23, 33, 43]


def test_reserve_allocates_before_the_test() -> None:
    times = QueryTimes()
    times.reserve(50_000)
    assert times.capacity == 50_000
    for n in range(50_000):
        times.record(n, n, n + 1, 1)
    assert times.grown == 0


def test_expected_rows_follow_the_settings() -> None:
    settings = lg.TestSettings()
    settings.min_duration_ms = 10_000
    settings.min_query_count = 100
    settings.single_stream_expected_latency_ns = 1_000_000  # 1 ms: 10,000 queries in 10 s
    assert expected_rows(settings, "SingleStream", 1) == 15_000
    settings.offline_expected_qps = 800.0  # 8,000 samples in batches of 8
    assert expected_rows(settings, "Offline", 8) == 1_500
    settings.min_query_count = 1
    settings.offline_expected_qps = 1.0
    assert expected_rows(settings, "Offline", 8) == MIN_ROWS


def _record(latencies_ms: Sequence[float]) -> QueryLatencies:
    n = len(latencies_ms)
    issue = np.arange(n, dtype=np.int64) * 10_000_000
    done = issue + (np.asarray(latencies_ms) * 1e6).astype(np.int64)
    return QueryLatencies(
        scenario="SingleStream",
        query=np.arange(n, dtype=np.int64),
        issue_ns=issue,
        complete_ns=done,
        samples=np.ones(n, dtype=np.int64),
    )


def test_a_query_latency_is_its_last_completion_minus_its_issue() -> None:
    record = QueryLatencies(
        scenario="MultiStream",
        query=np.array([0, 0, 1, 1]),
        issue_ns=np.array([100, 100, 500, 500]),
        complete_ns=np.array([150, 180, 520, 560]),
        samples=np.array([4, 4, 4, 4]),
    )
    assert record.latencies_ns().tolist() == [80, 60]


def test_percentile_curve_keeps_every_query_and_stays_finite_on_the_tail_axis() -> None:
    shares, ms = percentile_curve(np.array([3_000_000, 1_000_000, 2_000_000, 4_000_000]))
    assert ms.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert shares.tolist() == [0.0, 0.25, 0.5, 0.75]
    assert (1 / (1 - shares)).tolist() == [1.0, 4 / 3, 2.0, 4.0]


def test_throughput_bins_count_samples_by_completion_time() -> None:
    record = QueryLatencies(
        scenario="Offline",
        query=np.zeros(4, dtype=np.int64),
        issue_ns=np.zeros(4, dtype=np.int64),
        complete_ns=np.array([0.2e9, 0.7e9, 1.2e9, 1.5e9], dtype=np.int64),
        samples=np.array([8, 8, 8, 4], dtype=np.int64),
    )
    mids, rate = throughput_over_time(record, 1.0)
    assert mids.tolist() == [0.5, 1.25]
    assert rate.tolist() == [16.0, 24.0]  # the last bin ends at the last completion (0.5 s)
    mids, rate = throughput_over_time(record, 0.7)  # 0.1 s left over joins the bin before
    assert mids.tolist() == pytest.approx([0.35, 1.1])
    assert rate.tolist() == pytest.approx([8 / 0.7, 20 / 0.8])
    assert default_bin_s(record) == 10.0  # 4 completions: one bin, the run's average


def test_default_bins_hold_enough_batches_to_draw_no_square_wave() -> None:
    # batch 8 every 0.23 s for 23 s, as ResNet-50 Offline on 2 cores: ~35 samples/s steady
    done_ns = (np.arange(1, 101) * 0.23e9).astype(np.int64)
    record = QueryLatencies(
        scenario="Offline",
        query=np.zeros(100, dtype=np.int64),
        issue_ns=np.zeros(100, dtype=np.int64),
        complete_ns=done_ns,
        samples=np.full(100, 8, dtype=np.int64),
    )
    steady = 8 / 0.23
    _, narrow = throughput_over_time(record, 0.5)  # 50 bins: 2 or 3 batches each
    assert max(abs(narrow / steady - 1)) > 0.2  # the square wave that read as jitter
    width = default_bin_s(record)
    assert width * 100 / 23 >= MIN_COMPLETIONS_PER_BIN
    _, rate = throughput_over_time(record, width)
    assert max(abs(rate / steady - 1)) < 1.5 / MIN_COMPLETIONS_PER_BIN  # a batch more or less


def test_npz_round_trip(tmp_path: Path) -> None:
    record = _record([1.0, 2.5, 40.0])
    path = tmp_path / "query_latencies.npz"
    write_query_latencies(record, path)
    back = read_query_latencies(path)
    assert back.scenario == "SingleStream"
    assert back.latencies_ns().tolist() == record.latencies_ns().tolist()
    assert back.issue_ns.dtype == np.int64


def test_a_file_that_is_not_ours_names_itself(tmp_path: Path) -> None:
    path = tmp_path / "query_latencies.npz"
    path.write_bytes(b"not a zip")
    with pytest.raises(ResultError, match=r"query_latencies.npz: not a beyond-tops"):
        read_query_latencies(path)


def _tick_labels(fig: Any, axis: str) -> list[str]:
    fig.canvas.draw()
    (ax,) = fig.axes
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in labels if t.get_text()]


def _long_tail() -> QueryLatencies:
    rng = np.random.default_rng(7)
    body = rng.uniform(0.28, 0.35, 9_990)
    return _record([*body, *np.linspace(3.0, 30.0, 10)])  # p99.9 about 100x p50


def test_percentile_plot_uses_the_tail_axis_and_plain_tick_labels() -> None:
    pytest.importorskip("matplotlib")
    from harness.report.latency_plots import render  # noqa: F401 (matplotlib present)

    fig = latency_plots.percentile_figure([("tiny", _long_tail())], title="SingleStream latency")
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert _tick_labels(fig, "x") == ["0 %", "50 %", "90 %", "99 %", "99.9 %", "99.99 %"]
    y_labels = _tick_labels(fig, "y")
    # plain numbers ("0.5", "2", "20"), never mathtext such as "3x10^1"
    assert y_labels and all(re.fullmatch(r"[\d,.]+", t) for t in y_labels), y_labels
    assert ax.get_title() == "SingleStream latency"
    assert ax.get_ylabel() == "latency (ms)" and "percentile" in ax.get_xlabel()
    # every query is drawn (not 8 percentiles): the curve ends at the slowest one
    (line,) = ax.get_lines()
    assert line.get_ydata()[-1] == pytest.approx(30.0)
    assert len(line.get_xdata()) > 1000
    assert fig.legends and ax.get_legend() is None  # the legend sits outside the axes


def test_a_narrow_latency_range_stays_linear_with_plain_labels() -> None:
    pytest.importorskip("matplotlib")
    fig = latency_plots.percentile_figure([("resnet", _record(list(np.linspace(29, 59, 500))))])
    (ax,) = fig.axes
    assert ax.get_yscale() == "linear"
    assert all(re.fullmatch(r"[\d,.]+", t) for t in _tick_labels(fig, "y"))


def test_figures_render_as_svg_and_hidpi_png() -> None:
    pytest.importorskip("matplotlib")
    svg = latency_plots.percentile_plot([("a", _long_tail())], fmt="svg")
    assert ET.fromstring(svg).tag.endswith("svg")
    png = latency_plots.percentile_plot([("a", _long_tail())], fmt="png")
    width = int.from_bytes(png[16:20], "big")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and width == 1280  # 6.4 in at 200 dpi


def test_throughput_figure_has_title_units_and_an_average_line() -> None:
    pytest.importorskip("matplotlib")
    record = _record([1.0] * 200)
    fig = latency_plots.throughput_figure([("offline", record)], title="Offline throughput")
    (ax,) = fig.axes
    assert ax.get_title() == "Offline throughput"
    assert ax.get_ylabel() == "samples/s" and "(s" in ax.get_xlabel()
    lines = ax.get_lines()
    assert len(lines) == 2 and lines[1].get_linestyle() == "--"
    assert lines[1].get_ydata()[0] == pytest.approx(200 / 1.991, rel=1e-3)
