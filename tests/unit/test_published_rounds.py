"""MLPerf's metric follows the round: the catalogue's rule, and the importer that asks it.

The expected metrics are written out from MLPerf's submission checker (RESULT_FIELD_NEW per
round), not read from the catalogue: Server is judged by its scheduled rate up to v4.0 and by
its completed rate from v4.1; SingleStream and MultiStream by LoadGen's early-stopping
estimates since v2.0, SingleStream by its p90 before. The trees are real LoadGen logs
(tests/fixtures/published, tests/fixtures/loadgen) laid out in MLPerf's tree under a
directory that names the round.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.errors import ResultError
from harness.published.importer import import_mlperf
from harness.published.record import load_published
from harness.records.metrics import round_headline
from harness.records.published import PublishedResult
from harness.site.headline import published_headline, published_metric
from tests.conftest import REPO
from tests.unit.test_published_import import SS_RUN, V40, fixed_now

SERVER_LOGS = REPO / "tests" / "fixtures" / "loadgen" / "server-find-peak"
# (scenario, round) -> the key of the metric MLPerf's checker read that round
CHECKER = {
    ("Server", "4.0"): "server.scheduled_samples_per_second",  # result_scheduled_samples_per_sec
    ("Server", "4.1"): "server.completed_samples_per_second",  # result_completed_samples_per_sec
    ("Server", "6.0"): "server.completed_samples_per_second",
    ("Server", "3.1"): "server.scheduled_samples_per_second",
    ("SingleStream", "1.1"): "latency_ns.p90",  # RESULT_FIELD: 90th percentile latency (ns)
    ("SingleStream", "2.0"): "latency_ns.early_stopping_p90",  # early_stopping_latency_ss
    ("SingleStream", "4.1"): "latency_ns.early_stopping_p90",
    ("MultiStream", "2.0"): "latency_ns.early_stopping_p99",  # early_stopping_latency_ms
    ("MultiStream", "5.1"): "latency_ns.early_stopping_p99",
    ("Offline", "1.0"): "samples_per_second",  # result_samples_per_second
    ("Offline", "4.1"): "samples_per_second",
}


@pytest.mark.parametrize(("scenario", "version"), sorted(CHECKER))
def test_the_catalogue_names_each_rounds_metric(scenario: str, version: str) -> None:
    assert round_headline(scenario, version).key == CHECKER[scenario, version]


def test_an_unknown_round_is_judged_by_todays_headline() -> None:
    assert round_headline("Server", None).key == "server.completed_samples_per_second"
    assert round_headline("SingleStream", None).key == "latency_ns.early_stopping_p90"


@pytest.mark.parametrize(
    ("scenario", "version", "message"),
    [
        ("MultiStream", "1.1", "MultiStream's metric then has no row"),  # samples per query
        ("Server", "v4.1", "not a round like 4.1"),
        ("Server", "4", "not a round like 4.1"),
        ("Offline", "\u0664.\u0661", "not a round like 4.1"),  # Arabic-Indic digits: no round
        ("Interactive", "5.1", "unknown scenario"),
    ],
)
def test_a_round_the_catalogue_cannot_judge_is_refused(
    scenario: str, version: str, message: str
) -> None:
    with pytest.raises(ResultError, match=message):
        round_headline(scenario, version)


def server_tree(root: Path, version: str) -> Path:
    """LoadGen's Server logs as the Server result of a `version` tree (PerformanceOnly)."""
    run = root / f"inference_results_v{version}/closed/Org/results/sys/resnet50/Server"
    run = run / "performance" / "run_1"
    run.mkdir(parents=True)
    for name in ("mlperf_log_detail.txt", "mlperf_log_summary.txt"):
        text = (SERVER_LOGS / name).read_text(encoding="utf-8")
        (run / name).write_text(text.replace("FindPeakPerformance", "PerformanceOnly"))
    return run


def imported(path: Path, out: Path, **kwargs: str) -> PublishedResult:
    result = import_mlperf(path, out, now=fixed_now, **kwargs)
    (written,) = result.written
    return load_published(written)


@pytest.mark.parametrize(
    ("version", "name", "label", "value"),
    [
        ("4.0", "scheduled_samples_per_second", "Server scheduled rate", 2689.74),
        ("4.1", "samples_per_second", "Server completed rate", 2088.57),
    ],
)
def test_server_is_judged_by_its_rounds_rate(
    tmp_path: Path, version: str, name: str, label: str, value: float
) -> None:
    run = server_tree(tmp_path / "trees", version)
    record = imported(run, tmp_path / "out")
    assert record.mlperf_version == version
    assert (record.metric.name, record.metric.label) == (name, label)
    assert (record.metric.value, record.metric.unit) == (value, "samples/s")
    # both rates are kept whatever the round: compare and the site read them by the catalogue
    assert (record.samples_per_second, record.scheduled_samples_per_second) == (2088.57, 2689.74)
    assert [w.split(": ", 1)[1] for w in record.import_warnings] == [
        "no system description; its fields are unknown"  # the tree holds only the logs
    ]


@pytest.mark.parametrize(
    ("version", "key", "value"),
    [
        ("4.0", "server.scheduled_samples_per_second", 2689.74),
        ("4.1", "server.completed_samples_per_second", 2088.57),
    ],
)
def test_the_site_ranks_a_published_server_result_by_its_rounds_rate(
    tmp_path: Path, version: str, key: str, value: float
) -> None:
    record = imported(server_tree(tmp_path / "trees", version), tmp_path / "out")
    chosen = published_metric(record)
    assert chosen.key == key
    assert published_headline(record).value == value


def test_the_round_given_on_the_command_line_decides_too(tmp_path: Path) -> None:
    tree = tmp_path / "mlperf" / "closed"
    shutil.copytree(SS_RUN.parents[5], tree / "UntetherAI", dirs_exist_ok=True)
    system = tree / "UntetherAI/results/h13_u2_preview"
    before = imported(system, tmp_path / "a", mlperf_version="1.1")
    assert (before.metric.name, before.metric.value) == ("latency_ns.p90", 118878)
    assert before.metric.label == "SingleStream p90 latency"
    unknown = imported(system, tmp_path / "b")
    assert unknown.mlperf_version is None  # today's headline: the early-stopping estimate
    assert (unknown.metric.name, unknown.metric.value) == ("latency_ns.early_stopping_p90", 118879)


def test_without_an_early_stopping_estimate_the_p90_stands_in_with_a_warning(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "inference_results_v4.1"
    shutil.copytree(SS_RUN.parents[7], tree)
    run = tree / SS_RUN.relative_to(SS_RUN.parents[7])
    detail = run / "mlperf_log_detail.txt"
    lines = detail.read_text(encoding="utf-8").splitlines(keepends=True)
    detail.write_text("".join(x for x in lines if '"early_stopping_latency_ss"' not in x))
    summary = run / "mlperf_log_summary.txt"
    lines = summary.read_text(encoding="utf-8").splitlines(keepends=True)
    summary.write_text("".join(x for x in lines if "90th percentile estimate" not in x))
    record = imported(run, tmp_path / "out")
    assert (record.metric.name, record.metric.value) == ("latency_ns.p90", 118878)
    (warning,) = record.import_warnings
    assert warning == (
        f"{detail}: no early_stopping_latency_ss (LoadGen logged no early-stopping estimate); "
        "the p90 latency stands in"
    )


def test_the_estimate_is_checked_against_the_summarys_line(tmp_path: Path) -> None:
    tree = tmp_path / "inference_results_v4.1"
    shutil.copytree(SS_RUN.parents[7], tree)
    summary = tree / SS_RUN.relative_to(SS_RUN.parents[7]) / "mlperf_log_summary.txt"
    text = summary.read_text(encoding="utf-8")
    summary.write_text(text.replace("percentile estimate: 118879", "percentile estimate: 150000"))
    record = imported(summary.parent, tmp_path / "out")
    assert record.metric.value == 118879  # the detail log's
    assert record.import_warnings == (
        "mlperf_log_summary.txt says Early stopping 90th percentile estimate 150000; "
        "the detail log 118879",
    )


def test_a_round_before_multistreams_latency_metric_is_skipped_naming_it(tmp_path: Path) -> None:
    run = tmp_path / "closed/Org/results/sys/resnet50/MultiStream/performance/run_1"
    run.mkdir(parents=True)
    detail = run / "mlperf_log_detail.txt"
    shutil.copy(
        V40 / "Intel/results/1-node-2S-EMR-PyTorch/resnet50/Offline/performance/run_1"
        "/mlperf_log_detail.txt",
        detail,
    )
    text = detail.read_text(encoding="utf-8")
    detail.write_text(text.replace('"value": "Offline"', '"value": "MultiStream"'))
    with pytest.raises(ResultError, match="none of the 1 result") as info:
        import_mlperf(tmp_path / "closed", tmp_path / "out", mlperf_version="1.1", now=fixed_now)
    assert f"{detail}: MLPerf v1.1: MultiStream's metric then has no row here" in str(info.value)


@pytest.mark.parametrize(
    ("printed", "noted"),
    [
        ("25289.6", False),  # what LoadGen printed: the same number
        ("25290", False),  # printed to 0 decimals: 25289.6 rounds to it
        ("2.529e+04", False),  # printed in exponent form, 4 significant digits
        ("25289.7", True),  # one unit of the last digit off: a finding
        ("25300", True),
    ],
)
def test_a_summary_rounded_within_its_printed_digits_is_no_note(
    tmp_path: Path, printed: str, noted: bool
) -> None:
    tree = tmp_path / "inference_results_v4.0" / "closed"
    run = "Intel/results/1-node-2S-EMR-PyTorch/resnet50/Offline/performance/run_1"
    shutil.copytree(V40 / run, tree / run)
    summary = tree / run / "mlperf_log_summary.txt"
    text = summary.read_text(encoding="utf-8")
    summary.write_text(
        text.replace("Samples per second: 25289.6", f"Samples per second: {printed}")
    )
    record = imported(tree / run, tmp_path / "out")
    assert record.metric.value == 25289.6  # the detail log's
    notes = [w for w in record.import_warnings if "the detail log 25289.6" in w]
    assert bool(notes) is noted, record.import_warnings
