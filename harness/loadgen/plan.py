"""One LoadGen test's files and sizing: its mlperf.conf and user.conf, and the re-run rule."""

from __future__ import annotations

from pathlib import Path

from harness.config import ProfileName, Scenario
from harness.files import atomic_write_text
from harness.loadgen import conf as lgconf
from harness.loadgen.logparse import parse_detail_log
from harness.loadgen.timed import TestPlan

# LoadGen's words when its run was too short for the speed it was told to expect.
_UNDERSIZED = ("Increase expected QPS", "Decrease the expected latency")


def write_test_confs(
    out_dir: Path,
    *,
    scenario: Scenario,
    profile: ProfileName,
    model_key: str,
    expected: lgconf.Expectation | None,
    total_samples: int,
    mode: str,
) -> TestPlan:
    """Write the official mlperf.conf and our user.conf into `out_dir`; return the plan."""
    overrides = lgconf.user_conf_overrides(scenario, profile, expected)
    if mode == "accuracy" and profile == "quick":
        overrides["accuracy_sample_count_override"] = min(
            scenario.quick.accuracy_sample_count, total_samples
        )
    atomic_write_text(out_dir / "mlperf.conf", lgconf.official_mlperf_conf())
    atomic_write_text(
        out_dir / "user.conf", lgconf.render_user_conf(model_key, scenario.scenario, overrides)
    )
    return TestPlan(
        scenario=scenario.scenario,
        mode=mode,
        model_key=model_key,
        mlperf_conf=out_dir / "mlperf.conf",
        user_conf=out_dir / "user.conf",
        out_dir=out_dir,
        total_sample_count=total_samples,
    )


def retry_expectation(
    scenario: Scenario, run_dir: Path, expected: lgconf.Expectation
) -> lgconf.Expectation | None:
    """A better expectation when LoadGen says its run was too short for the one it had."""
    log = parse_detail_log(run_dir / "mlperf_log_detail.txt")
    reasons = " ".join(log.get("result_invalid_reason", []))
    if log.get("result_validity") == "VALID" or not any(r in reasons for r in _UNDERSIZED):
        return None
    if scenario.scenario == "Offline":
        measured = float(log.get("result_samples_per_second") or 0)
        return lgconf.Expectation(
            latency_ns=expected.latency_ns,
            samples_per_second=max(measured, expected.samples_per_second) * 1.5,
        )
    latency = float(log.get("result_min_latency_ns") or expected.latency_ns)
    return lgconf.Expectation(
        latency_ns=min(latency, expected.latency_ns) / 2,
        samples_per_second=expected.samples_per_second,
    )


def expectation_from(min_latency_ns: float, batch_size: int) -> lgconf.Expectation:
    """What warm-up's fastest query tells LoadGen to expect.

    The fastest query errs on the side of a run that is too long rather than one that ends
    before its minimum duration (INVALID).
    """
    return lgconf.Expectation(
        latency_ns=min_latency_ns, samples_per_second=batch_size * 1e9 / min_latency_ns
    )
