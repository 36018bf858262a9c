"""The catalogue's rows: where each value is, the key grammar, and new metrics as rows only."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from harness.analysis.compare import compare
from harness.analysis.spread import metric_spreads
from harness.analysis.values import headline, metric_values, value_of
from harness.cli import main
from harness.errors import ERROR_CODES, ResultError
from harness.records import genmetrics
from harness.records.group import Group
from harness.records.metrics import (
    GENERATIVE,
    OUTPUT_TOKENS,
    P99,
    P999,
    ROWS,
    SCENARIOS,
    SOURCE_VALUES,
    TOKENS,
    TPOT_P99,
    TTFT_P99,
    bound_latency,
    metric,
    per_source,
    scenario_metrics,
)
from harness.records.result import RunResult, ServerRecord
from harness.report.blocks import Table
from harness.report.summary import summary_row
from harness.report.tables import results_blocks
from harness.report.text import render_group
from harness.results.groups import load_group
from harness.results.runfile import load_result
from harness.site.headline import group_headline

REPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "reports"
OFFLINE = REPORTS / "sweep-h100" / "bs-16"


def _server(result: RunResult) -> RunResult:
    fields = {f.name: None for f in dataclasses.fields(ServerRecord)}
    record = ServerRecord(
        **{
            **fields,
            "target_qps": 100.0,
            "target_qps_source": "scenario",
            "scheduled_samples_per_second": 100.0,
            "completed_samples_per_second": 99.0,
            "compiled_batch": 1,
            "max_batch": 1,
            "max_wait_ms": 0.0,
            "batch_costs_ms": {},
            "queue_depth": 1,
            "workers": 1,
            "batches": 1,
            "batch_sizes": {},
        }
    )
    return dataclasses.replace(result, scenario="Server", server=record)


def _strict(start: object, steps: tuple[str, ...]) -> object:
    """Follow `steps` as a consumer would, but an attribute that does not exist fails.

    A mapping's key may be absent (a power source not measured); an attribute may not.
    """
    value: Any = start
    for step in steps:
        if value is None:
            return None
        value = value.get(step) if isinstance(value, Mapping) else getattr(value, step)
    return value


def test_every_row_but_the_generative_ones_leads_to_a_number_in_a_real_result() -> None:
    offline = load_result(OFFLINE / "trial-1")  # has telemetry: the power-source rows too
    server = _server(load_result(REPORTS / "trials-epyc" / "trial-1"))
    rows = [m for m in ROWS.values() if m not in GENERATIVE]
    rows += [per_source("gpu0", value) for value in SOURCE_VALUES]
    for row in rows:
        for result in (offline, server):
            found = _strict(result, row.steps)
            assert found is None or isinstance(found, int | float), (row.key, found)
            assert value_of(result, row) == (None if found is None else float(found))
    assert value_of(server, "server.completed_samples_per_second") == 99.0


def test_the_generative_rows_read_nothing_from_todays_results() -> None:
    result = load_result(OFFLINE / "trial-1")
    assert result.generation is None  # not a generative model's run
    for row in GENERATIVE:
        assert value_of(result, row) is None
        # a published LLM result has the same block: tokens/s, TTFT and TPOT at the same paths
        assert row.published == (None if row is OUTPUT_TOKENS else row.key)


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("latency_ns.p42", "unknown metric 'latency_ns.p42'; known: samples_per_second, "),
        ("telemetry.sources..avg_power_w", "unknown metric 'telemetry.sources..avg_power_w'"),
        ("telemetry.sources.gpu0.kind", "and telemetry.sources.<source>.<avg_power_w|"),
        ("server", "unknown metric 'server'"),
        ("latency_ns.p90.extra", "unknown metric 'latency_ns.p90.extra'"),
        ("", "unknown metric ''"),
    ],
)
def test_a_key_outside_the_grammar_is_refused_with_the_known_ones(key: str, fragment: str) -> None:
    with pytest.raises(ResultError, match="known: ") as caught:
        metric(key)
    assert fragment in str(caught.value)


def test_scenarios_sources_and_bounds() -> None:
    assert list(SCENARIOS) == ["SingleStream", "MultiStream", "Offline", "Server"]
    with pytest.raises(ResultError, match="unknown scenario 'Interactive'; known: SingleStream"):
        scenario_metrics("Interactive")
    with pytest.raises(ResultError, match="unknown power-source metric 'kind'"):
        per_source("gpu0", "kind")
    energy = per_source("cpu.package", "energy_per_inference_mj")  # a source with a dot
    assert energy.key == "telemetry.sources.cpu.package.energy_per_inference_mj"
    assert energy.steps == ("telemetry", "sources", "cpu.package", "energy_per_inference_mj")
    assert metric(energy.key) == energy
    assert (bound_latency(99.9), bound_latency(None), bound_latency(42.0)) == (P999, P99, P99)


def test_shown_values_are_exact_in_ms_and_formatted_one_way() -> None:
    es = metric("latency_ns.early_stopping_p90")
    assert es.shown(1_921_615) == 1.921615  # ns / 1e6, not ns * 1e-6 (1.9216149999999999)
    assert (es.format(2_460_747), es.text(2_460_747), es.format(None)) == (
        "2.461",
        "2.46 ms",
        "n/a",
    )
    assert es.title == "early-stopping p90 latency (ms)" and not es.higher_is_better
    assert (es.value_unit, metric("samples_per_second").value_unit) == ("ns", "samples/s")
    share = metric("utilization.fraction_of_peak")
    assert (share.format(0.3626), share.text(0.3626)) == ("36.26", "36.3 %")


# --- a generative model's metrics are rows: the consumers need no new code -----------------------


class _Generating:
    """A result with a generation block, as a result of a generative model will have one."""

    def __init__(self, base: RunResult, i: int) -> None:
        self._base = base
        self.generation = SimpleNamespace(
            tokens_per_second=1000.0 + 10 * i,
            ttft_ns=SimpleNamespace(p99=50_000_000 + 1_000_000 * i),
            tpot_ns=SimpleNamespace(p99=20_000_000 + 500_000 * i),
        )

    def __getattr__(self, name: str) -> object:
        return getattr(self._base, name)


def _generating(group: Group, shift: int) -> Group:
    results = tuple(cast(RunResult, _Generating(r, i + shift)) for i, r in enumerate(group.results))
    return dataclasses.replace(group, runs=dataclasses.replace(group.runs, results=results))


def test_a_scenario_whose_metrics_are_tokens_is_shown_by_every_consumer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    offline = SCENARIOS["Offline"]
    generative = dataclasses.replace(offline, headline=TOKENS, reported=(TTFT_P99, TPOT_P99))
    # results that each have a generation block are judged by the generative table
    monkeypatch.setitem(
        cast(dict[str, Any], genmetrics.GENERATIVE_SCENARIOS), "Offline", generative
    )
    a = _generating(load_group(OFFLINE), 0)
    b = _generating(dataclasses.replace(load_group(OFFLINE), label="other"), 5)
    keys = [m.key for m in (TOKENS, TTFT_P99, TPOT_P99)]
    assert headline("Offline", a.results) == TOKENS
    assert metric_values(a.results, TTFT_P99) == [50_000_000.0, 51_000_000.0]

    rows = compare([a, b]).rows
    assert [r.metric.key for r in rows[:3]] == keys and rows[0].headline
    assert (
        rows[0].cells[1].value == 1055.0 and rows[0].metric.title == "token throughput (tokens/s)"
    )
    assert rows[1].cells[1].ratio == pytest.approx(55.5 / 50.5)  # TTFT p99, in ms as shown

    spreads = {s.metric: s for s in metric_spreads(a.results, requested=2)}
    assert [(spreads[k].name, spreads[k].unit) for k in keys] == [
        ("token throughput", "tokens/s"),
        ("TTFT p99", "ms"),
        ("TPOT p99", "ms"),
    ]
    assert not spreads[TTFT_P99.key].stats.higher_is_better

    row = summary_row(a, "[1](#a)", 0)
    assert (row[4], row[5]) == ("token throughput (tokens/s)", "1,005.0")
    table = next(b for b in results_blocks(a) if isinstance(b, Table))
    assert [r[0] for r in table.rows[:3]] == [
        "token throughput (tokens/s)",
        "TTFT p99 (ms)",
        "TPOT p99 (ms)",
    ]
    assert table.rows[1][1:3] == ("50.500", "50.000")  # median, and the best is the lower
    shown = group_headline(a)
    assert (shown.key, shown.text()) == (TOKENS.key, "1,005.0 tokens/s")
    printed = render_group(a, "a")
    assert "2 trials of token throughput (tokens/s), higher is better" in printed


# --- a trials file naming a metric the catalogue does not know ---------------------------------


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda d: d.update(metric="latency_ns.p42"), "trials.json: metric: unknown metric"),
        (lambda d: d.update(metric="\x1b[2Jx"), "metric: unknown metric '\\x1b[2Jx'"),
        (
            lambda d: d.update(
                schema_version=3,
                spreads=[{"metric": "os.system", "name": "n", "unit": "u", "scale": 1.0}],
            ),
            "trials.json: spreads[0].metric: unknown metric 'os.system'",
        ),
    ],
)
def test_show_refuses_a_trials_file_whose_metric_is_not_the_catalogues(
    edit: Any, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    group = tmp_path / "trials-epyc"
    shutil.copytree(REPORTS / "trials-epyc", group)
    data = json.loads((group / "trials.json").read_text())
    edit(data)
    if data["schema_version"] == 3:
        stats = data["stats"]
        data["spreads"][0]["stats"] = stats
        data.update(complete=True, failure=None)
    (group / "trials.json").write_text(json.dumps(data))
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code = main(["show", str(group)])
    out, err = capsys.readouterr()
    assert code == ERROR_CODES[ResultError].code, out + err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], err
    assert "Traceback" not in err and "\x1b" not in out + err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
