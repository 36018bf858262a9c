"""One LoadGen test's files and sizing: mlperf.conf, user.conf, audit.config, the re-run rule."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.config import ProfileName, Scenario
from harness.files import atomic_write_text
from harness.loadgen import conf as lgconf
from harness.loadgen.timed import TestPlan
from harness.records.layout import AUDIT_CONFIG, DETAIL_LOG, MLPERF_CONF, USER_CONF
from harness.records.loadgen_log import parse_detail_log
from harness.records.request import Expectation, LoadGenPins

# LoadGen's words when its run was too short for the speed it was told to expect.
_UNDERSIZED = ("Increase expected QPS", "Decrease the expected latency")


@dataclass(frozen=True, kw_only=True)
class Audit:
    """An audit.config's settings: LoadGen applies them over mlperf.conf and user.conf."""

    name: str  # what the file is for, e.g. "MLPerf compliance TEST01"
    settings: Mapping[str, int]  # LoadGen keys without the model.scenario prefix


def write_test_confs(
    out_dir: Path,
    *,
    scenario: Scenario,
    profile: ProfileName,
    model_key: str,
    expected: Expectation | None,
    total_samples: int,
    mode: str,
    audit: Audit | None = None,
    pins: LoadGenPins | None = None,
) -> TestPlan:
    """Write the official mlperf.conf and our user.conf into `out_dir`; return the plan.

    A compliance test (`audit`) also gets its audit.config there, and only there: LoadGen is
    handed that file by path, and every other test is handed none (`harness.loadgen.timed`).
    A published result's `pins` come last in user.conf; its seeds go into the plan.
    """
    overrides = lgconf.user_conf_overrides(scenario, profile, expected)
    overrides.update(lgconf.token_overrides(scenario, model_key))
    if mode == "accuracy" and profile == "quick":
        overrides["accuracy_sample_count_override"] = min(
            scenario.quick.accuracy_sample_count, total_samples
        )
    if pins is not None:
        overrides.update(pins.conf)
    atomic_write_text(out_dir / MLPERF_CONF, lgconf.official_mlperf_conf())
    atomic_write_text(
        out_dir / USER_CONF, lgconf.render_user_conf(model_key, scenario.scenario, overrides)
    )
    return TestPlan(
        scenario=scenario.scenario,
        mode=mode,
        model_key=model_key,
        mlperf_conf=out_dir / MLPERF_CONF,
        user_conf=out_dir / USER_CONF,
        out_dir=out_dir,
        total_sample_count=total_samples,
        audit_config=None if audit is None else write_audit_config(out_dir, audit),
        seeds=() if pins is None else pins.seeds,
    )


def render_audit_config(audit: Audit) -> str:
    """audit.config text: each setting for every model (`*`) and scenario (`*`)."""
    lines = [f"# {audit.name}, written by beyond-tops; LoadGen applies it last"]
    lines += [f"*.*.{key} = {value}" for key, value in audit.settings.items()]
    return "\n".join(lines) + "\n"


def write_audit_config(out_dir: Path, audit: Audit) -> Path:
    """Write the audit.config into a compliance test's own directory, atomically."""
    path = out_dir / AUDIT_CONFIG
    atomic_write_text(path, render_audit_config(audit))
    return path


def retry_expectation(
    scenario: Scenario, run_dir: Path, expected: Expectation
) -> Expectation | None:
    """A better expectation when LoadGen says its run was too short for the one it had."""
    log = parse_detail_log(run_dir / DETAIL_LOG)
    reasons = " ".join(log.get("result_invalid_reason", []))
    if log.get("result_validity") == "VALID" or not any(r in reasons for r in _UNDERSIZED):
        return None
    if scenario.scenario == "Offline":
        measured = float(log.get("result_samples_per_second") or 0)
        return Expectation(
            latency_ns=expected.latency_ns,
            samples_per_second=max(measured, expected.samples_per_second) * 1.5,
        )
    latency = float(log.get("result_min_latency_ns") or expected.latency_ns)
    return Expectation(
        latency_ns=min(latency, expected.latency_ns) / 2,
        samples_per_second=expected.samples_per_second,
    )


def expectation_from(min_latency_ns: float, batch_size: int) -> Expectation:
    """What warm-up's fastest query tells LoadGen to expect.

    The fastest query errs on the side of a run that is too long rather than one that ends
    before its minimum duration (INVALID).
    """
    return Expectation(
        latency_ns=min_latency_ns, samples_per_second=batch_size * 1e9 / min_latency_ns
    )
