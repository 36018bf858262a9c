"""A generative run's token plots and a generative load sweep's figure, table and verdict.

The stamps here are written as harness.execution.genrunner writes token_times.npz; the real
runs that produce them are in tests/integration/test_llm_load_sweep.py.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from harness.analysis.loadsweep import holds, knee_qps, over_in_a_row, queue_grew
from harness.errors import ResultError
from harness.records.loadsweep import LoadPoint, LoadSweep, TokenPoint
from harness.report.blocks import Bullets, Image, Table
from harness.report.genloadplot import token_load_figure
from harness.report.genplots import TokenRun, tokens_figure, tpot_figure, ttft_figure, ttft_plot
from harness.report.loadreport import load_blocks
from harness.report.loadtext import TOKEN_HEADER, render_load
from harness.telemetry import tokentimes
from harness.telemetry.tokentimes import TokenTimes, read_token_times, tokens_over_time

HOSTILE = r"run $\notacommand$ 2"
# three queries: issued at 0, 1 and 2 ms; first tokens 5, 7 and 30 ms; ends 15, 27 and 30 ms
COLUMNS = {
    "issue_ns": [0, 1_000_000, 2_000_000],
    "first_ns": [5_000_000, 7_000_000, 30_000_000],
    "end_ns": [15_000_000, 27_000_000, 30_000_000],
    "tokens": [11, 5, 1],
    "start_ns": [0, 1_500_000, 29_000_000],
}


def _write(path: Path, fmt: int = 1, **columns: object) -> Path:
    data = {**COLUMNS, **columns}
    with path.open("wb") as handle:
        np.savez(handle, format=np.asarray(fmt), **{k: np.asarray(v) for k, v in data.items()})
    return path


def _times() -> TokenTimes:
    return TokenTimes(**{k: np.asarray(v, dtype=np.int64) for k, v in COLUMNS.items()})


def test_stamps_read_back_give_ttft_and_tpot_per_query(tmp_path: Path) -> None:
    times = read_token_times(_write(tmp_path / "t.npz"))
    assert times.queries == 3 and times.start_ns is not None
    assert list(times.ttft_ns()) == [5_000_000, 6_000_000, 28_000_000]
    # (end - first) / (tokens - 1); the one-token query has no TPOT, as in LoadGen
    assert list(times.tpot_ns()) == [1_000_000.0, 5_000_000.0]


def test_tokens_over_time_counts_each_query_s_tokens_when_it_completes() -> None:
    mids, rate = tokens_over_time(_times(), 0.01)
    assert len(mids) == len(rate) == 3
    assert list(mids) == pytest.approx([0.005, 0.015, 0.025])  # bins of 10 ms to the last end
    # 11 tokens end at 15 ms, 5 at 27 ms and 1 at 30 ms: 17 tokens in all
    assert list(rate) == pytest.approx([0.0, 1100.0, 600.0])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"fmt": 2}, "token times format 2, this beyond-tops reads formats 1 to 1; upgrade"),
        ({"fmt": 0}, "token times format 0"),
        ({"tokens": [1, 2]}, "token time columns differ in length"),
        ({"end_ns": np.array(["x"], dtype=object)}, "not a beyond-tops token_times.npz"),
        ({"first_ns": [5e6, float("nan"), 3e7]}, "first_ns holds float64, not integers"),
    ],
)
def test_a_hostile_token_times_file_is_refused_naming_it(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    path = _write(tmp_path / "t.npz", **change)  # type: ignore[arg-type]
    with pytest.raises(ResultError, match=message) as caught:
        read_token_times(path)
    assert str(path) in str(caught.value)


def test_an_oversized_token_times_file_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "t.npz")
    monkeypatch.setattr(tokentimes, "MAX_TOKEN_TIMES_BYTES", path.stat().st_size - 1)
    with pytest.raises(ResultError, match="larger than"):
        read_token_times(path)
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(ResultError, match=r"junk\.npz"):
        read_token_times(tmp_path / "junk.npz")


def _legend_texts(fig: object) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]  # type: ignore[attr-defined]


def test_percentile_plots_draw_the_limits_and_escape_a_hostile_label() -> None:
    run = TokenRun(label=HOSTILE, times=_times(), ttft_limit_ns=20_000_000, tpot_limit_ns=4_000_000)
    fig = ttft_figure([run])
    texts = _legend_texts(fig)
    assert r"run \$\notacommand\$ 2 (3 queries)" in texts  # drawn as written, not as math
    assert "p99 TTFT limit 20 ms" in texts
    (ax,) = fig.axes
    limit = next(line for line in ax.get_lines() if line.get_linestyle() == ":")
    assert list(limit.get_ydata()) == [20.0, 20.0]
    assert "p99 TPOT limit 4 ms" in _legend_texts(tpot_figure([run]))
    assert ttft_plot([run])[:8] == b"\x89PNG\r\n\x1a\n"  # the hostile label renders
    assert tokens_figure([run]).axes[0].get_ylabel() == "completed output tokens/s"
    unlimited = ttft_figure([TokenRun(label="plain", times=_times())])
    assert not any(line.get_linestyle() == ":" for line in unlimited.axes[0].get_lines())


def _point(target: float, valid: bool, ttft_p99_ms: float, goodput: float) -> LoadPoint:
    tokens = TokenPoint(
        tokens_per_second=target * 12,
        ttft_p50_ns=ttft_p99_ms * 0.2e6,
        ttft_p90_ns=ttft_p99_ms * 0.5e6,
        ttft_p99_ns=ttft_p99_ms * 1e6,
        tpot_p50_ns=0.2e6,
        tpot_p90_ns=1e6,
        tpot_p99_ns=2e6,
        goodput_qps=goodput,
        queue_p99_ns=ttft_p99_ms * 0.9e6,
    )
    return LoadPoint(
        target_qps=target,
        dir=f"qps-{target:g}",
        trials=1,
        valid_trials=int(valid),
        completed_qps=min(target, 280.0),
        p50_ns=1e6,
        p90_ns=2e6,
        p99_ns=3e6,
        tokens=tokens,
    )


SWEEP = LoadSweep(
    scenario_name="llm $\\bad$",
    profile="quick",
    latency_bound_ns=0,
    requested_qps=(50.0, 100.0, 800.0, 1600.0),
    points=(
        _point(50, True, 20, 50),
        _point(100, True, 45, 100),
        _point(800, False, 2000, 9),
        _point(1600, False, 9000, 3),
    ),
    knee_qps=100.0,
    stopped="over_bound",
    ttft_limit_ns=200_000_000,
    tpot_limit_ns=50_000_000,
)


def test_the_sweep_figure_marks_the_limits_and_the_knee_in_every_panel() -> None:
    fig = token_load_figure(SWEEP)
    ttft, tpot, throughput = fig.axes[:3]
    assert "\\$\\bad\\$" in fig.get_suptitle()  # a hostile scenario name drawn as written
    for ax, limit in ((ttft, 200.0), (tpot, 50.0)):
        labels = ax.get_legend_handles_labels()[1]
        assert labels[:3] == [f"{ax.get_ylabel()[:4]} {p}" for p in ("p50", "p90", "p99")]
        assert f"p99 limit {limit:g} ms" in labels and "knee: 100 qps" in labels
        knee = next(line for line in ax.get_lines() if line.get_label() == "knee: 100 qps")
        assert list(knee.get_xdata()) == [100.0, 100.0]
        markers = [line for line in ax.get_lines() if line.get_marker() == "o"]
        assert sum(line.get_fillstyle() == "none" for line in markers) == 6  # 2 rates x 3
    assert ttft.get_yscale() == "log"  # 4 ms to 9 s: the queue's growth in orders of magnitude
    assert "knee: 100 qps" in throughput.get_legend_handles_labels()[1]
    goodput_axis = fig.axes[3]
    assert goodput_axis.get_ylabel() == "goodput (queries/s)"
    assert list(goodput_axis.get_lines()[0].get_ydata()) == [50, 100, 9, 3]


def test_the_sweep_s_report_section_and_text_name_tokens_goodput_and_the_limits() -> None:
    blocks = load_blocks(SWEEP, "runs/load")
    images = [b for b in blocks if isinstance(b, Image)]
    assert len(images) == 1 and images[0].png.startswith(b"\x89PNG") and len(images[0].png) > 1000
    (table,) = [b for b in blocks if isinstance(b, Table)]
    assert table.header == TOKEN_HEADER and len(table.rows) == 4
    assert table.rows[2][3] == "9.00" and table.rows[2][-1] == "0 of 1"
    (verdict,) = [b for b in blocks if isinstance(b, Bullets)]
    assert verdict.items[0] == (
        "knee: 100 qps, the highest rate that met both limits in every trial with its queue kept up"
    )
    assert any("two rates in a row broke a limit" in item for item in verdict.items)
    text = render_load(SWEEP, "DIR")
    assert "p99 TTFT limit 200 ms, TPOT limit 50 ms" in text.splitlines()[0]
    assert ": Server, " in text.splitlines()[0]
    interactive = dataclasses.replace(SWEEP, interactive=True)
    assert ": Interactive, p99 TTFT" in render_load(interactive, "DIR").splitlines()[0]
    assert "not run: 1600" not in text  # every requested rate ran


def test_a_valid_rate_whose_queue_grew_is_not_the_knee_and_ends_the_sweep() -> None:
    """A short run can pass its p99s while the SUT falls behind: completed under 90 % of it."""
    kept_up = _point(100, True, 45, 100)
    behind = dataclasses.replace(_point(400, True, 150, 250), completed_qps=280.0)
    assert holds(kept_up) and queue_grew(behind) and not holds(behind)
    assert knee_qps([kept_up, behind]) == 100.0
    assert over_in_a_row([kept_up, behind, dataclasses.replace(behind, target_qps=800)])
    # a CNN point (no token figures) is judged by LoadGen's verdict alone, as before
    cnn = dataclasses.replace(behind, tokens=None)
    assert not queue_grew(cnn) and knee_qps([kept_up, cnn]) == 400.0
    sweep = dataclasses.replace(SWEEP, points=(kept_up, behind), knee_qps=100.0)
    verdict = load_blocks(sweep, "runs/load")[-1]
    assert isinstance(verdict, Bullets)
    assert "queue grew (completed under 90% of the offered rate): 400 (280.0 completed)" in (
        verdict.items
    )
    ttft = token_load_figure(sweep).axes[0]
    markers = [line for line in ttft.get_lines() if line.get_marker() == "o"]
    assert [line.get_fillstyle() for line in markers] == ["full", "none"] * 3
