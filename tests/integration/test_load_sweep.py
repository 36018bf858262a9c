"""`harness sweep --server-rates`: Server's latency against arrival rate, real LoadGen runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.records.layout import LOAD_FILE
from harness.results.loadfile import read_load
from tests.conftest import write_scenario

SERVER = """
name: tiny-load
scenario: Server
model: {{zoo: tiny}}
batch_size: 4
data: {{total_sample_count: 64}}
warmup: {{min_queries: 5, min_duration_ms: 300}}
# 700 queries: enough for LoadGen's early-stopping estimate of the p99 to be met
quick: {{min_duration_ms: 1000, min_query_count: 700, performance_sample_count: 32}}
server: {{latency_bound_ms: {bound}, max_wait_ms: 1}}
runtime: {{allow_spinning: false}}
"""


def _sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bound: float, rates: str
) -> tuple[int, str, Path]:
    scenario = write_scenario(tmp_path / "s.yaml", SERVER.format(bound=bound))
    argv = ["sweep", str(scenario), "--server-rates", rates, "--trials", "1"]
    code = main([*argv, "--out", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    return code, out, Path(out.strip().splitlines()[-1])


def test_rates_within_the_bound_give_their_latencies_and_the_knee(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, sweep_dir = _sweep(tmp_path, capsys, bound=500, rates="150,300")
    assert code == 0, out
    sweep = read_load(sweep_dir / LOAD_FILE)
    assert [p.target_qps for p in sweep.points] == [150.0, 300.0]
    assert sweep.latency_bound_ns == 500_000_000 and sweep.stopped == "rates" and sweep.complete
    for point in sweep.points:
        assert point.valid and (sweep_dir / point.dir / "trials.json").is_file()
        assert point.p50_ns is not None and point.p99_ns is not None
        assert 0 < point.p50_ns <= point.p99_ns < 500e6
        assert point.completed_qps is not None and point.completed_qps > 0
    assert sweep.knee_qps == 300.0
    assert "load sweep, tiny-load: Server, p99 bound 500 ms" in out
    assert "knee: 300 qps, the highest rate that met the bound in every trial" in out
    shown = main(["show", str(sweep_dir)])
    printed = capsys.readouterr().out
    assert shown == 0 and "knee: 300 qps" in printed and "150" in printed
    assert main(["report", str(sweep_dir), "--out", str(tmp_path / "rep")]) == 0  # its plot
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "Load sweep: tiny-load (Server, p99 bound 500 ms)" in page
    assert page.count('src="data:image/png;base64,') == 1
    assert "knee: 300 qps" in page and "dashed one the knee" in page
    assert (tmp_path / "rep" / "images" / "load-tiny-load.png").is_file()
    assert main(["report", str(sweep_dir / "qps-150")]) == 0  # a rate's trials group


def test_a_bound_no_rate_meets_stops_after_two_and_names_what_it_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 3 ms: a batch fits in it, but far beyond the tiny CNN's capacity on this machine (under
    # 3,000 samples/s) the queue grows without end and every rate breaks the bound
    code, out, sweep_dir = _sweep(tmp_path, capsys, bound=3, rates="6000,9000,12000")
    assert code == 0, out
    sweep = read_load(sweep_dir / LOAD_FILE)
    assert [p.target_qps for p in sweep.points] == [6000.0, 9000.0]
    assert not any(p.valid for p in sweep.points) and sweep.knee_qps is None
    assert sweep.stopped == "over_bound"
    assert "knee: none" in out and "not run: 12000" in out


def test_server_rates_on_an_offline_scenario_is_refused_naming_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "tiny-offline.yaml"
    argv = ["sweep", str(scenario), "--server-rates", "10", "--out", str(tmp_path)]
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert "--server-rates needs a Server scenario (this one is Offline)" in err
    assert "use --batches for Offline" in err
    assert not any(tmp_path.iterdir())  # nothing was made
