"""Result building: LoadGen's verdict, throughput and the hardware summary as records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import ProfileName, load_scenario
from harness.execution.recording import Requested, hardware, outcome, samples_per_second
from harness.loadgen.timed import TestPlan
from harness.records.fingerprint import Fingerprint
from harness.records.loadgen_log import DetailLog, parse_detail_lines
from harness.records.result import Hardware
from tests.conftest import TINY_SS, write_scenario

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TINY = json.loads((FIXTURES / "results" / "tiny-singlestream" / "result.json").read_text())


def _log(**values: object) -> DetailLog:
    lines = [f':::MLLOG {{"key": "{k}", "value": {json.dumps(v)}}}' for k, v in values.items()]
    return parse_detail_lines(lines)


def _requested(tmp_path: Path, profile: ProfileName) -> Requested:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    return Requested(scenario=scenario, profile=profile, hw="cpu", model_name="tiny")


def _plan(tmp_path: Path) -> TestPlan:
    return TestPlan(
        scenario="SingleStream",
        mode="performance",
        model_key="tiny",
        mlperf_conf=tmp_path / "mlperf.conf",
        user_conf=tmp_path / "user.conf",
        out_dir=tmp_path,
        total_sample_count=64,
    )


@pytest.mark.parametrize(
    ("profile", "validity", "passed", "submission_valid"),
    [
        ("submission", "VALID", True, True),
        ("submission", "VALID", False, False),  # accuracy failed
        ("submission", "INVALID", True, False),
        ("quick", "VALID", True, False),
    ],
)
def test_outcome_counts_for_a_submission_only_when_everything_holds(
    tmp_path: Path, profile: ProfileName, validity: str, passed: bool, submission_valid: bool
) -> None:
    log = _log(result_validity=validity, result_invalid_reason="Min duration not met")
    got = outcome(_requested(tmp_path, profile), _plan(tmp_path), log, accuracy_passed=passed)
    assert (got.valid, got.submission_valid) == (validity == "VALID", submission_valid)
    assert got.invalid_reasons == ("Min duration not met",)
    assert (got.mode, got.profile, got.loadgen_errors) == ("performance", profile, ())


def test_samples_per_second_is_offline_throughput_or_singlestream_qps() -> None:
    assert samples_per_second(_log(result_samples_per_second=7180.5)) == 7180.5
    assert samples_per_second(_log(result_qps_with_loadgen_overhead=2712)) == 2712.0
    assert samples_per_second(_log()) is None


def test_hardware_summarises_the_fingerprint() -> None:
    fingerprint = Fingerprint.from_dict(TINY["fingerprint"])
    assert hardware("cpu", fingerprint) == Hardware(
        target="cpu",
        fingerprint_id="b288c2bca45d0ed8",
        cpu_model="AMD EPYC",
        usable_cpus=2,
        gpus=(),
    )
    data = {**TINY["fingerprint"], "gpus": [{"name": "NVIDIA H100 80GB HBM3"}, {"index": 1}]}
    assert hardware("nvidia", Fingerprint.from_dict(data)).gpus == (
        "NVIDIA H100 80GB HBM3",
        "unknown GPU",
    )
