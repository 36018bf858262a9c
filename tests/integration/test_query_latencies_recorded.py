"""Real tiny-model runs record each query's latency and the host CPU over LoadGen's window."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.cli import main
from harness.paths import CACHE_ENV
from harness.records.loadgen_log import parse_detail_log
from tests.conftest import TINY_OFFLINE, TINY_SS, write_scenario

pytestmark = pytest.mark.slow
# The file names, spelled out: the first test must fail (not error) where nothing writes them.
QUERY_LATENCIES_FILE = "query_latencies.npz"
CPU_TELEMETRY_FILE = "cpu_telemetry.csv"


@pytest.fixture(scope="module")
def single_stream(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Path:
    return _module_run(TINY_SS, tmp_path_factory.mktemp("ss"), model_cache)


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Path:
    return _module_run(TINY_OFFLINE, tmp_path_factory.mktemp("offline"), model_cache)


def _module_run(text: str, out: Path, model_cache: Path) -> Path:
    """One real run for the module's tests (the autouse cache fixture is per test)."""
    scenario = write_scenario(out / "s.yaml", text)
    runs = out / "runs"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(model_cache))
        assert main(["run", str(scenario), "--out", str(runs)]) == 0
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    return run_dir


def _result(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "result.json").read_text())
    return data


def test_a_run_writes_and_lists_per_query_latencies_and_cpu_telemetry(
    single_stream: Path,
) -> None:
    written = {p.name for p in single_stream.iterdir() if p.is_file() and p.stat().st_size > 0}
    assert {QUERY_LATENCIES_FILE, CPU_TELEMETRY_FILE} <= written
    files = _result(single_stream).get("files")
    assert files == {
        "cpu_telemetry": CPU_TELEMETRY_FILE,
        "query_latencies": QUERY_LATENCIES_FILE,
        "telemetry": "telemetry.csv",
    }


def test_single_stream_records_every_query_as_loadgen_counted_it(single_stream: Path) -> None:
    from harness.telemetry.latencies import read_query_latencies

    record = read_query_latencies(single_stream / QUERY_LATENCIES_FILE)
    log = parse_detail_log(single_stream / "mlperf_log_detail.txt")
    latencies = record.latencies_ns()
    assert record.scenario == "SingleStream"
    assert len(latencies) == int(log.get("result_query_count") or 0) > 0
    assert record.samples.tolist() == [1] * record.rows
    assert (np.diff(record.issue_ns) > 0).all()  # one query after another
    result = _result(single_stream)
    # Our stamps sit just inside LoadGen's: its p50 is ours plus its own issue and complete
    # calls, a few microseconds; allow for a noisy machine.
    ours_p50, theirs_p50 = float(np.median(latencies)), float(result["latency_ns"]["p50"])
    assert 0.5 * theirs_p50 <= ours_p50 <= theirs_p50 * 1.05
    assert int(latencies.max()) <= result["latency_ns"]["max"]


def test_cpu_telemetry_covers_the_window_with_plausible_values(single_stream: Path) -> None:
    from harness.telemetry.cpufile import read_cpu_csv
    from harness.telemetry.filestate import telemetry_file_state

    t = read_cpu_csv(single_stream / CPU_TELEMETRY_FILE)
    window_s = (t.window_end_ns - t.window_start_ns) / 1e9
    assert window_s >= 1.0  # the quick profile's min_duration
    assert len(t.rows) >= 0.5 * window_s / t.interval_s
    busy = t.points("busy_pct")
    assert busy and all(0.0 <= v <= 100.0 for _, v in busy)
    assert max(v for _, v in busy) > 20.0  # the benchmark itself keeps a core busy
    assert all(v >= 0.0 for _, v in t.points("load_1m"))
    for s in t.of_kind("clock"):
        assert all(100.0 < v < 10_000.0 for _, v in t.points(s.column)), s.column
    for kind in ("clock", "temperature"):  # either sampled, or the reason is written down
        assert t.of_kind(kind) or any(name == kind for name, _ in t.unavailable)
    state = telemetry_file_state(single_stream / CPU_TELEMETRY_FILE)
    assert state.state == "present" and state.rows == len(t.rows)


def test_a_power_telemetry_file_without_sources_says_why(single_stream: Path) -> None:
    from harness.telemetry.filestate import telemetry_file_state

    state = telemetry_file_state(single_stream / "telemetry.csv")
    if state.state == "empty":  # a VM without RAPL: the reasons, not "No telemetry.csv"
        assert "wall:" in state.reason and state.describe().startswith("telemetry.csv has no")
    else:
        assert state.state == "present" and state.rows > 0


def test_offline_records_each_batch_and_draws_its_throughput(offline: Path) -> None:
    from harness.report import latency_plots
    from harness.telemetry.latencies import read_query_latencies

    record = read_query_latencies(offline / QUERY_LATENCIES_FILE)
    result = _result(offline)
    assert record.scenario == "Offline"
    assert set(record.query.tolist()) == {0}  # one query, answered batch by batch
    assert int(record.samples.sum()) >= 200  # the scenario's min_query_count, in samples
    # LoadGen's one query is whole batches of 8: no padded last batch (benchmarks/overhead.py)
    assert set(record.samples.tolist()) == {8}
    log = parse_detail_log(offline / "mlperf_log_detail.txt")
    assert int(log.get("generated_samples_per_query")) == int(record.samples.sum())
    span_s = float(record.complete_ns.max() - record.issue_ns.min()) / 1e9
    assert int(record.samples.sum()) / span_s == pytest.approx(
        result["samples_per_second"], rel=0.1
    )
    pytest.importorskip("matplotlib")
    svg = latency_plots.throughput_plot([("tiny Offline", record)], fmt="svg")
    assert b"<svg" in svg[:400]


def test_percentile_and_cpu_plots_render_from_a_real_run(single_stream: Path) -> None:
    pytest.importorskip("matplotlib")
    from harness.report import latency_plots
    from harness.telemetry.cpufile import read_cpu_csv
    from harness.telemetry.latencies import read_query_latencies

    record = read_query_latencies(single_stream / QUERY_LATENCIES_FILE)
    png = latency_plots.percentile_plot([("tiny SingleStream", record)], fmt="png")
    assert png[:4] == b"\x89PNG"
    cpu = read_cpu_csv(single_stream / CPU_TELEMETRY_FILE)
    assert b"<svg" in latency_plots.cpu_plot(cpu, fmt="svg")[:400]
