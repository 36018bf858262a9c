"""One answer per scenario: every consumer names, ranks and judges the same headline metric.

The catalogue (harness.records.metrics) says which metric MLPerf reports for each scenario.
This walks each scenario through show, the report (its summary and Results table), compare,
the trials' spread checks, a fleet merge and the site, over result files on disk (the report
fixtures, and MultiStream and Server results derived from them), and asserts one key, label,
unit and direction. The expected keys are written out here, from MLPerf's rules, not read
from the catalogue: a catalogue that drifted from MLPerf fails too.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.analysis.compare import compare
from harness.analysis.spread import metric_spreads, spread_flags
from harness.fleet.collect import merge
from harness.fleet.plan import read_plan, task_dir
from harness.fleet.state import fleet_status
from harness.records.metrics import Metric, metric
from harness.records.result import RunResult, ServerRecord
from harness.results.groups import load_group
from harness.results.runfile import load_result, write_result
from harness.site.build import build_site
from tests.conftest import TINY_SS, harness_dir, harness_printed

REPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "reports"
# MLPerf's metric per scenario (the submission checker's RESULT_FIELD_NEW, v5.0 to v6.0)
MLPERF = {
    "ss": "latency_ns.early_stopping_p90",  # early_stopping_latency_ss
    "ss-no-es": "latency_ns.p90",  # LoadGen logged no estimate: the percentile itself
    "ms": "latency_ns.early_stopping_p99",  # early_stopping_latency_ms
    "offline": "samples_per_second",  # result_samples_per_second
    "server": "server.completed_samples_per_second",  # result_completed_samples_per_sec
}
LOWER_IS_BETTER = {"ss", "ss-no-es", "ms"}
BATCH = {"ss": 1, "ss-no-es": 1, "ms": 8, "offline": 16, "server": 4}
SCENARIO = {
    "ss": "SingleStream",
    "ss-no-es": "SingleStream",
    "ms": "MultiStream",
    "offline": "Offline",
    "server": "Server",
}
Answer = tuple[str, str, bool]  # label, unit, higher is better


def _answer(m: Metric) -> Answer:
    return (m.label, m.unit, m.higher_is_better)


def _expected(name: str) -> Answer:
    return _answer(metric(MLPERF[name]))


# --- results on disk: the fixtures, and scenarios derived from them ----------------------------


def _server(r: RunResult, scale: float) -> RunResult:
    """A Server result: the rates and bound of tests/fixtures/loadgen/server-find-peak."""
    record = ServerRecord(
        target_qps=2630.88,
        target_qps_source="scenario",
        scheduled_samples_per_second=2689.74 * scale,
        completed_samples_per_second=2088.57 * scale,
        latency_bound_ns=100_000_000,
        latency_percentile=99.0,
        latency_constraint_met=True,
        overlatency_queries=0,
        early_stopping_met=True,
        early_stopping_result=" * Run successful.",
        compiled_batch=4,
        max_batch=4,
        max_wait_ms=1.0,
        batching=None,
        batch_costs_ms={},
        queue_depth=64,
        workers=1,
        batches=10,
        mean_batch=2.0,
        batch_sizes={},
        queue_delay_ns=None,
        hold_ns=None,
    )
    return dataclasses.replace(r, scenario="Server", server=record)


def _no_estimate(r: RunResult) -> RunResult:
    return dataclasses.replace(
        r, latency_ns=dataclasses.replace(r.latency_ns, early_stopping_p90=None)
    )


def _multistream(r: RunResult) -> RunResult:
    lat = r.latency_ns
    per_query = dataclasses.replace(lat, early_stopping_p90=None, early_stopping_p99=lat.p99)
    return dataclasses.replace(r, scenario="MultiStream", latency_ns=per_query)


def _worse(r: RunResult) -> RunResult:
    """Every latency 1.5 times as long and every rate half: worse by any metric."""
    lat = {
        k: None if v is None else int(v * 1.5) for k, v in dataclasses.asdict(r.latency_ns).items()
    }
    rate = None if r.samples_per_second is None else r.samples_per_second / 2
    server = r.server and dataclasses.replace(
        r.server,
        scheduled_samples_per_second=(r.server.scheduled_samples_per_second or 0) / 2,
        completed_samples_per_second=(r.server.completed_samples_per_second or 0) / 2,
    )
    latency = dataclasses.replace(r.latency_ns, **lat)
    return dataclasses.replace(r, latency_ns=latency, samples_per_second=rate, server=server)


def _group(
    out: Path, source: Path, change: Callable[[RunResult, int], RunResult], name: str
) -> Path:
    """A copy of a fixture trials group, each trial's result changed, trials.json's scenario too."""
    shutil.copytree(source, out)
    for i, trial in enumerate(sorted(out.glob("trial-*"))):
        write_result(change(load_result(trial), i), trial)
    trials = json.loads((out / "trials.json").read_text())
    trials["scenario"] = SCENARIO[name]
    (out / "trials.json").write_text(json.dumps(trials))
    return out


CHANGES: dict[str, tuple[Path, Callable[[RunResult, int], RunResult]]] = {
    "ss": (REPORTS / "trials-epyc", lambda r, i: r),
    "ss-no-es": (REPORTS / "trials-epyc", lambda r, i: _no_estimate(r)),
    "ms": (REPORTS / "trials-epyc", lambda r, i: _multistream(r)),
    "offline": (REPORTS / "sweep-h100" / "bs-16", lambda r, i: r),
    "server": (REPORTS / "trials-epyc", lambda r, i: _server(r, 1 + i / 100)),
}


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("scenarios")
    found = {}
    for name, (source, change) in CHANGES.items():
        found[name] = _group(root / "groups" / name, source, change, name)
        worse = root / "worse" / f"{name}-worse"
        _group(worse, source, lambda r, i, change=change: _worse(change(r, i)), name)
    return found


def _worse_of(directory: Path) -> Path:
    return directory.parent.parent / "worse" / f"{directory.name}-worse"


# --- the consumers -------------------------------------------------------------------------------


def _show(directory: Path) -> set[Answer]:
    out = harness_printed(["show", str(directory)])
    head = re.search(r"\d+ trials of (.+) \(([^()]+)\), (higher|lower) is better", out)
    assert head is not None, out
    label, unit, better = head.groups()
    runs = [line for line in out.splitlines() if "trial-" in line and "VALID" in line]
    assert runs and all(f"  {label} " in line and f" {unit}  " in line for line in runs), out
    return {(label, unit, better == "higher")}


def _report(directory: Path, out: Path) -> set[Answer]:
    harness_printed(["report", str(directory), "--out", str(out)])
    text = (out / "report.md").read_text()
    summary = next(line for line in text.splitlines() if line.startswith("| [1]"))
    title = summary.split(" | ")[4]
    table = text.split("### Results", 1)[1].split("\n\n", 2)[1].splitlines()
    cells = table[2].strip("|").split(" | ")
    assert cells[0].strip() == title, table  # the section's first row is the summary's metric
    label, unit = re.fullmatch(r"(.+) \(([^()]+)\)", title).groups()  # type: ignore[union-attr]
    each = [float(v.replace(",", "")) for v in cells[4].split(", ")]
    best = float(cells[2].replace(",", ""))
    assert best in (min(each), max(each))
    return {(label, unit, best == max(each) and best != min(each))}


def _compare(directory: Path, worse: Path) -> set[Answer]:
    rows = compare([load_group(directory), load_group(worse)]).rows
    first = rows[0]
    assert first.headline and first.metric.key in MLPERF.values()
    assert (first.cells[1].ratio or 0) != 1.0
    return {_answer(first.metric)}


def _spread(directory: Path, name: str) -> set[Answer]:
    group = load_group(directory)
    spreads = {s.metric: s for s in metric_spreads(group.results, requested=len(group.results))}
    found = spreads[MLPERF[name]]
    flags = [text for key, text in spread_flags(group).items() if key == MLPERF[name]]
    assert all(text.startswith(f"{found.name}: ") for text in flags)
    return {(found.name, found.unit, found.stats.higher_is_better)}


# --- a fleet of three nodes: every scenario on each, the third node worse -----------------------


@pytest.fixture(scope="module")
def fleets(groups: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Scenario name -> its fleet; SingleStream without estimates is a fleet of its own."""

    def third_worse(index: int, name: str) -> Path:
        return _worse_of(groups[name]) if index == 2 else groups[name]

    with_es = _fleet_of(
        tmp_path_factory.mktemp("fleet"), ["ss", "ms", "offline", "server"], third_worse
    )
    without = _fleet_of(tmp_path_factory.mktemp("fleet-no-es"), ["ss-no-es"], third_worse)
    return {name: without if name == "ss-no-es" else with_es for name in MLPERF}


def _fleet_of(root: Path, names: list[str], ran: Callable[[int, str], Path]) -> Path:
    """A 3-node fleet of the named scenarios; task i ran `ran(i, name)` for each."""
    for name in names:
        text = TINY_SS.replace("tiny-ss-test", f"walk-{name}")
        text = text.replace("scenario: SingleStream", f"scenario: {SCENARIO[name]}")
        text = text.replace("batch_size: 1", f"batch_size: {BATCH[name]}")
        if name == "server":
            text += "server: {target_qps: 100, latency_bound_ms: 100}\n"
        (root / f"{name}.yaml").write_text(text)
    files = ", ".join(f"{name}.yaml" for name in names)
    (root / "suite.yaml").write_text(f"name: walk\nprofile: quick\nscenarios: [{files}]\n")
    argv = ["fleet", "slurm", str(root / "suite.yaml"), "--partition", "p", "--nodes", "3"]
    argv += ["--shard", "node", "--runner", "local", "--out", str(root / "out"), "--dry-run"]
    directory = harness_dir(argv)
    for task in read_plan(directory).tasks:
        _task_ran(directory, task.index, {name: ran(task.index, name) for name in names})
    return directory


def _task_ran(fleet_dir: Path, index: int, runs: dict[str, Path]) -> None:
    attempt = task_dir(fleet_dir, index) / "local"
    attempt.mkdir()
    entries = []
    for name, source in runs.items():
        shutil.copytree(source, attempt / name)
        entries.append({"name": f"walk-{name}", "run": name, "exit_code": 0, "error": None})
    record = {
        "schema_version": 1,
        "index": index,
        "placement": {"scheduler": "none", "node": f"n{index + 1}"},
        "runner": "local",
        "started_utc": "2026-12-01T10:00:00Z",
        "finished_utc": "2026-12-01T10:01:00Z",
        "exit_code": 0,
        "cause": None,
        "entries": entries,
    }
    (attempt / "task-result.json").write_text(json.dumps(record))


def _fleet(fleet_dir: Path, name: str) -> set[Answer]:
    plan = read_plan(fleet_dir)
    merged = merge(fleet_dir, plan, fleet_status(fleet_dir, plan, None))
    config = f"tiny fp32 {SCENARIO[name]} batch {BATCH[name]}"
    rows = [r for r in merged.rows if r.config == config]
    assert len(rows) == 3 and all(r.value is not None for r in rows), rows
    (odd,) = [o for o in merged.outliers if o.config == config]
    assert odd.node == "n3" and odd.slower, odd  # the worse node is the slower one
    label, unit = re.fullmatch(r"(.+) \(([^()]+)\)", odd.metric).groups()  # type: ignore[union-attr]
    assert {r.metric for r in rows} == {odd.metric}
    higher = odd.deviation < 0  # worse, below its peers: a rate; above them: a latency
    return {(label, unit, higher)}


# --- the site ---------------------------------------------------------------------------------


def _site(directory: Path, worse: Path, out: Path) -> set[Answer]:
    site = build_site([directory, worse], out)
    (board,) = site.boards
    page = (site.index).read_text()
    said = re.search(r"MLPerf's metric for \w+: (.+?), (higher|lower) is better\.", page)
    assert said is not None
    assert said.group(1) == board.metric.label
    assert f"{board.metric.label} ({board.metric.unit})" in page
    heads = {(r.headline.key, r.headline.label, r.headline.unit) for r in board.rows}
    assert heads == {(board.metric.key, board.metric.label, board.metric.unit)}
    assert [r.label for r in board.rows] == [directory.name, worse.name]  # the better first
    return {(board.metric.label, board.metric.unit, said.group(2) == "higher")}


# --- the walk ---------------------------------------------------------------------------------


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(MLPERF))
def test_every_consumer_gives_one_answer_per_scenario(
    name: str, groups: dict[str, Path], fleets: dict[str, Path], tmp_path: Path
) -> None:
    directory = groups[name]
    worse = _worse_of(directory)
    expected = _expected(name)
    assert expected[2] is (name not in LOWER_IS_BETTER)
    answers = {
        "show": _show(directory),
        "report summary": _report(directory, tmp_path / "report"),
        "compare": _compare(directory, worse),
        "trials spread": _spread(directory, name),
        "fleet merge": _fleet(fleets[name], name),
        "site headline": _site(directory, worse, tmp_path / "site"),
    }
    assert answers == {consumer: {expected} for consumer in answers}, answers


def test_the_compare_row_and_the_spread_name_the_same_key() -> None:
    group = load_group(REPORTS / "trials-epyc")
    row = compare([group, load_group(REPORTS / "trials-xeon")]).rows[0]
    assert row.metric.key == MLPERF["ss"]
    assert MLPERF["ss"] in {s.metric for s in metric_spreads(group.results, requested=3)}


def test_a_node_without_estimates_does_not_split_its_configuration(
    groups: dict[str, Path], tmp_path: Path
) -> None:
    # The headline is chosen over every node's runs of a configuration: one node's LoadGen
    # that logged no early-stopping estimate leaves that node without a value, never with
    # a p90 ranked against the others' estimates (nor a merge refused for two metrics).
    def third_without(index: int, name: str) -> Path:
        return groups["ss-no-es"] if index == 2 else groups["ss"]

    directory = _fleet_of(tmp_path, ["ss"], third_without)
    plan = read_plan(directory)
    merged = merge(directory, plan, fleet_status(directory, plan, None))
    assert {r.metric for r in merged.rows} == {"early-stopping p90 latency (ms)"}
    assert [r.value is None for r in merged.rows] == [False, False, True]
    assert [r.trials for r in merged.rows] == [3, 3, 3]
