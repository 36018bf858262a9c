"""Compliance rules as data: audit settings as MLPerf's files have them, tests per model, jobs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.compliance.rules import (
    AUDIT_SETTINGS,
    SCORE_KEYS,
    required_tests,
    tolerance,
)
from harness.config import load_scenario
from harness.errors import ConfigError
from harness.loadgen.plan import Audit, render_audit_config, write_test_confs
from harness.loadgen.timed import TestPlan, _audit_path
from harness.records.job import Job, as_compliance_test, job_to_dict, read_job, write_job
from harness.records.request import RunRequest
from tests.conftest import REPO, TINY_SS, write_scenario

MLPERF_COMPLIANCE = REPO.parent / "shared" / "mlperf-tools" / "compliance"
OFFICIAL = {
    "TEST01": MLPERF_COMPLIANCE / "TEST01" / "resnet50" / "audit.config",
    "TEST04": MLPERF_COMPLIANCE / "TEST04" / "audit.config",
}


def official_settings(path: Path, scenario: str) -> dict[str, int]:
    """The settings an official audit.config gives every model (`*`) in `scenario`."""
    settings: dict[str, int] = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^\*\.(\*|\w+)\.(\w+)\s*=\s*(\d+)", line)
        if match and match.group(1) in ("*", scenario):
            settings[match.group(2)] = int(match.group(3))
    return settings


@pytest.mark.parametrize("test", ["TEST01", "TEST04"])
@pytest.mark.parametrize("scenario", ["SingleStream", "MultiStream", "Offline", "Server"])
def test_audit_settings_are_mlperfs(test: str, scenario: str) -> None:
    path = OFFICIAL[test]
    if not path.is_file():
        pytest.skip(f"{path}: MLPerf's compliance files are not here (a user's clone)")
    assert dict(AUDIT_SETTINGS[as_compliance_test(test)]) == official_settings(path, scenario)


def test_an_audit_config_is_written_for_every_model_and_scenario(tmp_path: Path) -> None:
    text = render_audit_config(
        Audit(name="MLPerf compliance TEST04", settings=AUDIT_SETTINGS["TEST04"])
    )
    assert text.splitlines() == [
        "# MLPerf compliance TEST04, written by beyond-tops; LoadGen applies it last",
        "*.*.mode = 2",
        "*.*.performance_issue_unique = 0",
        "*.*.performance_issue_same = 1",
        "*.*.performance_issue_same_index = 3",
    ]


def test_only_a_compliance_test_gets_an_audit_config(tmp_path: Path) -> None:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    confs = {
        "model_key": "tiny",
        "scenario": scenario,
        "profile": "quick",
        "expected": None,
        "total_samples": 64,
        "mode": "performance",
    }
    plain = write_test_confs(tmp_path, **confs)  # type: ignore[arg-type]
    assert plain.audit_config is None and not (tmp_path / "audit.config").exists()
    audit = Audit(name="MLPerf compliance TEST01", settings=AUDIT_SETTINGS["TEST01"])
    audited = write_test_confs(tmp_path, **confs, audit=audit)  # type: ignore[arg-type]
    assert audited.audit_config == tmp_path / "audit.config"
    assert "*.*.accuracy_log_sampling_target = 4096" in (tmp_path / "audit.config").read_text()


def test_loadgen_is_told_to_read_no_audit_config_unless_the_test_has_one(tmp_path: Path) -> None:
    plan = TestPlan(
        scenario="SingleStream",
        mode="performance",
        model_key="m",
        mlperf_conf=tmp_path,
        user_conf=tmp_path,
        out_dir=tmp_path,
        total_sample_count=1,
    )
    assert _audit_path(plan) == ""  # names no file, where LoadGen's default is ./audit.config
    with_audit = TestPlan(**{**vars(plan), "audit_config": tmp_path / "audit.config"})
    assert _audit_path(with_audit) == str(tmp_path / "audit.config")


@pytest.mark.parametrize(
    ("model", "tests"),
    [
        ("resnet50", ("TEST01", "TEST04")),
        ("mobilenet", ("TEST01", "TEST04")),  # the checker maps it to resnet
        ("bert", ("TEST01",)),
        ("3d-unet-99.9", ("TEST01",)),
        ("tiny", ()),
        ("mobilenet_v2", ()),
    ],
)
def test_the_tests_a_model_needs_follow_the_checker(model: str, tests: tuple[str, ...]) -> None:
    assert required_tests(model) == tests


def test_short_latencies_get_the_relaxed_tolerance() -> None:
    ss, offline = SCORE_KEYS["SingleStream"], SCORE_KEYS["Offline"]
    assert tolerance("SingleStream", 200_000, ss) == 0.20
    assert tolerance("SingleStream", 200_001, ss) == 0.10
    assert tolerance("MultiStream", 1_600_000, SCORE_KEYS["MultiStream"]) == 0.20
    assert tolerance("Offline", 100.0, offline) == 0.10  # a rate is never relaxed


def a_job(tmp_path: Path, test: str) -> Job:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    request = RunRequest(scenario=scenario, scenario_path=Path("s.yaml"), profile="quick", hw="cpu")
    return Job(
        request=request,
        test=test,  # type: ignore[arg-type]
        run_dir=tmp_path / "run" / "compliance" / test,
    )


@pytest.mark.parametrize("test", ["TEST01", "TEST04"])
def test_a_compliance_job_reads_back_as_written(tmp_path: Path, test: str) -> None:
    job = a_job(tmp_path, test)
    assert read_job(write_job(job, tmp_path / "job.json")) == job


def test_a_version_1_job_file_is_still_read(tmp_path: Path) -> None:
    data = job_to_dict(a_job(tmp_path, "TEST01")) | {"schema_version": 1, "test": "performance"}
    (tmp_path / "job.json").write_text(json.dumps(data))
    assert read_job(tmp_path / "job.json").test == "performance"


def test_a_compliance_test_name_is_checked() -> None:
    assert as_compliance_test("TEST04") == "TEST04"
    with pytest.raises(
        ConfigError, match=r"'TEST05' is not a compliance test \(allowed: TEST01, TEST04\)"
    ):
        as_compliance_test("TEST05")
