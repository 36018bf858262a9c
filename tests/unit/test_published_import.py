"""`harness import mlperf` on real published MLPerf results (tests/fixtures/published)."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path

import pytest

from harness.errors import ResultError
from harness.published.describe import OFFLINE_LATENCY, describe
from harness.published.importer import import_mlperf
from harness.published.record import load_published
from harness.records.layout import PUBLISHED_FILE as RECORD_FILE
from harness.records.published import PublishedResult
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "published"
V40 = FIXTURES / "inference_results_v4.0" / "closed"
V41 = FIXTURES / "inference_results_v4.1" / "closed"
INTEL_RUN = V40 / "Intel/results/1-node-2S-EMR-PyTorch/resnet50/Offline/performance/run_1"
SS_RUN = V41 / "UntetherAI/results/h13_u2_preview/resnet50/singlestream/performance/run_1"
OFFLINE_SCENARIO = V41 / "UntetherAI/results/r760_u6_slim/resnet50/offline"


def fixed_now() -> dt.datetime:
    return dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.timezone.utc)


def stated(summary: Path, label: str) -> float:
    """The number the summary log states on the line that starts with `label`."""
    text = summary.read_text(encoding="utf-8")
    match = re.search(rf"^{re.escape(label)}\s*:\s*(\S+)$", text, re.M)
    assert match, f"{summary} has no {label!r} line"
    return float(match.group(1))


def only(path: Path, out: Path, **kwargs: str) -> PublishedResult:
    imported = import_mlperf(path, out, now=fixed_now, **kwargs)
    assert imported.skipped == ()
    (written,) = imported.written
    return load_published(written)


def test_the_whole_fixture_tree_imports_each_result_once(tmp_path: Path) -> None:
    imported = import_mlperf(FIXTURES, tmp_path / "out", now=fixed_now)
    assert imported.skipped == ()
    assert sorted(p.name for p in imported.written) == [
        "v4.0-closed-Intel-1-node-2S-EMR-PyTorch-resnet50-Offline",
        "v4.1-closed-AMD-8xMI300X_2xEPYC-TURIN-llama2-70b-99-Offline",
        "v4.1-closed-AMD-8xMI300X_2xEPYC-TURIN-llama2-70b-99-Server",
        "v4.1-closed-NVIDIA-DGX-H100_H100-SXM-80GBx8_TRT-mixtral-8x7b-Offline",
        "v4.1-closed-NVIDIA-DGX-H100_H100-SXM-80GBx8_TRT-mixtral-8x7b-Server",
        "v4.1-closed-UntetherAI-h13_u2_preview-resnet50-SingleStream",
        "v4.1-closed-UntetherAI-r760_u6_slim-resnet50-Offline",
    ]
    for path in imported.written:
        assert (path / RECORD_FILE).is_file()


def test_intel_cpu_offline_from_its_org_directory(tmp_path: Path) -> None:
    record = only(V40 / "Intel", tmp_path)
    assert record.source == "published"
    assert (record.org, record.division, record.system.id) == (
        "Intel",
        "closed",
        "1-node-2S-EMR-PyTorch",
    )
    assert (record.benchmark, record.model, record.scenario) == ("resnet50", "resnet50", "Offline")
    assert record.mlperf_version == "4.0"  # from the tree's name: v4.0 has no version file
    assert record.loadgen_version == "4.0 @ cc3daae3c7"
    assert record.metric.name == "samples_per_second"
    assert record.metric.value == stated(INTEL_RUN / "mlperf_log_summary.txt", "Samples per second")
    assert record.metric.value == 25289.6
    assert record.valid is True
    assert record.system.processor == "INTEL(R) XEON(R) PLATINUM 8592+"
    assert record.system.processors_per_node == "2"
    assert record.system.accelerator is None  # "N/A" in the system JSON: a CPU system
    assert (record.system.framework, record.system.status) == ("PyTorch", "available")
    assert record.system.system_type == "datacenter"
    assert record.precision is None  # the tree states no data types for it
    assert record.settings["min_duration_ms"] == 600000
    assert record.settings["qsl_rng_seed"] == 13281865557512327830
    assert record.latency_ns.p99 == stated(
        INTEL_RUN / "mlperf_log_summary.txt", "99.00 percentile latency (ns)"
    )
    assert record.accuracy == "accuracy=75.730%, good=37865, total=50000"
    # where it came from inside the tree, not where this machine unpacked it
    assert record.source_path == str(INTEL_RUN.relative_to(INTEL_RUN.parents[8]))
    assert record.source_path.startswith("inference_results_v4.0/closed/Intel/results/")
    assert ("latency", OFFLINE_LATENCY) in describe(record)
    assert record.import_warnings == ()


def test_intel_record_keeps_byte_identical_copies_of_its_files(tmp_path: Path) -> None:
    (written,) = import_mlperf(V40 / "Intel", tmp_path, now=fixed_now).written
    record = load_published(written)
    assert sorted(record.files) == [
        "accuracy/accuracy.txt",
        "mlperf_log_detail.txt",
        "mlperf_log_summary.txt",
        "systems/1-node-2S-EMR-PyTorch.json",
    ]
    assert (written / "mlperf_log_detail.txt").read_bytes() == (
        INTEL_RUN / "mlperf_log_detail.txt"
    ).read_bytes()
    system = V40 / "Intel/systems/1-node-2S-EMR-PyTorch.json"
    assert (written / "systems" / system.name).read_bytes() == system.read_bytes()


def test_untether_singlestream_from_its_run_directory(tmp_path: Path) -> None:
    record = only(SS_RUN, tmp_path)
    assert (record.org, record.system.id, record.scenario) == (
        "UntetherAI",
        "h13_u2_preview",
        "SingleStream",
    )
    # v4.1 judges SingleStream by LoadGen's early-stopping p90 estimate (since v2.0), not
    # the summary's first line, the plain p90 (118,878 ns)
    assert record.metric.name == "latency_ns.early_stopping_p90"
    assert record.metric.label == "SingleStream early-stopping p90 latency"
    assert (record.metric.value, record.metric.unit) == (118879, "ns")
    assert record.latency_ns.early_stopping_p90 == 118879
    assert record.latency_ns.p90 == stated(
        SS_RUN / "mlperf_log_summary.txt", "90th percentile latency (ns)"
    )
    assert record.mlperf_version == "4.1"
    assert record.loadgen_version == "4.0 @ 7fc059bf91"  # an older LoadGen, as submitted
    assert record.system.accelerator == "UntetherAI speedAI240 Preview"
    assert record.system.accelerators_per_node == "2"
    assert record.system.software == "KILT mlperf_4.1; Docker 27.1.0, build 6312585; Python 3.10.12"
    assert (record.system.status, record.system.system_type) == ("preview", "edge")
    assert record.samples_per_second == 7987.01  # SingleStream: QPS with LoadGen's overhead


def test_untether_offline_states_its_precision_and_loadgen_warnings(tmp_path: Path) -> None:
    record = only(OFFLINE_SCENARIO, tmp_path)
    summary = OFFLINE_SCENARIO / "performance/run_1/mlperf_log_summary.txt"
    assert record.metric.value == stated(summary, "Samples per second") == 334462
    assert (record.precision, record.input_precision) == ("float8", "float8")
    assert record.harness_precision == "float8"
    # its log's six "Logging allocation detected" lines only inform: no warning of the result
    assert record.loadgen_warnings == ()
    assert "measurements/r760_u6_slim_image_classification_using_uai_kilt_run_offline.json" in (
        record.files
    )


def test_the_round_is_unknown_without_a_versioned_tree_name_unless_given(tmp_path: Path) -> None:
    tree = tmp_path / "mlperf" / "closed"
    shutil.copytree(V40 / "Intel", tree / "Intel")
    record = only(tree, tmp_path / "a")
    assert record.mlperf_version is None
    assert record.label == "published: Intel 1-node-2S-EMR-PyTorch (version unknown, closed)"
    given = only(tree, tmp_path / "b", mlperf_version="4.0")
    assert given.mlperf_version == "4.0"


def test_an_existing_record_is_never_overwritten(tmp_path: Path) -> None:
    (first,) = import_mlperf(SS_RUN, tmp_path, now=fixed_now).written
    before = (first / RECORD_FILE).read_bytes()
    with pytest.raises(ResultError, match=r"already imported.*pass another --out"):
        import_mlperf(SS_RUN, tmp_path, now=lambda: fixed_now() + dt.timedelta(days=1))
    assert (first / RECORD_FILE).read_bytes() == before


def test_a_record_edited_by_hand_is_refused_with_the_key(tmp_path: Path) -> None:
    (written,) = import_mlperf(SS_RUN, tmp_path, now=fixed_now).written
    path = written / RECORD_FILE
    data = json.loads(path.read_text())
    data["metric"]["unit"] = "furlongs"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultError, match=r"published.json: not a published record \(metric"):
        load_published(written)
    data["schema_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(ResultError, match=r"newer beyond-tops \(this one reads 1 to 4\); upgrade"):
        load_published(path)
