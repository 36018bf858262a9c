"""The performance check of TEST01 and TEST04: a compliance run's detail log against the run's.

As MLPerf's verify_performance.py scripts: both runs LoadGen-VALID and of one scenario; TEST01
within 10 % of the performance run, TEST04 at most 10 % faster (20 % where latencies are
under 0.2 ms, see `harness.compliance.rules.tolerance`). Beyond them, the compliance run must
show its audit settings in effect and the performance run none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.compliance.check import Check, make_check, percent_change
from harness.compliance.rules import AUDIT_SETTINGS, SCORE_KEYS, ScoreKey, tolerance
from harness.records.job import ComplianceTest
from harness.records.loadgen_log import DetailLog, parse_detail_log

TITLES = {
    "TEST01": "TEST01 performance: performance mode with accuracy-log sampling, "
    "against the performance run",
    "TEST04": "TEST04 performance: one sample issued over and over, against the performance run",
}
_AUDIT_FOUND = "Found Audit Config file"
# Settings an audit.config changes and a plain performance run leaves at zero.
_AUDIT_ONLY = ("accuracy_log_sampling_target", "performance_issue_same")


def check_performance(test: ComplianceTest, reference: Path, compliance: Path) -> Check:
    """Compare the compliance run's `mlperf_log_detail.txt` with the performance run's."""
    ref, got = parse_detail_log(reference), parse_detail_log(compliance)
    lines = [
        TITLES[test],
        f"reference: {reference}: {_describe(ref)}",
        f"test:      {compliance}: {_describe(got)}",
    ]
    problems = _problems(test, ref, got)
    if problems:
        summary = f"performance: {problems[0]}"
        return make_check(False, summary, [*lines, *(f"problem: {p}" for p in problems)])
    scenario = str(ref.get("effective_scenario"))
    score = SCORE_KEYS[scenario]
    ref_value, test_value = float(ref.get(score.key)), float(got.get(score.key))
    allowed = tolerance(scenario, ref_value, score)
    if test == "TEST01":
        return _within(score, ref_value, test_value, allowed, lines)
    return _not_faster(score, ref_value, test_value, allowed, lines)


def _within(
    score: ScoreKey, reference: float, value: float, allowed: float, lines: list[str]
) -> Check:
    """TEST01: the figure itself within `allowed` of the reference, either way."""
    ratio = value / reference
    passed = 1 - allowed <= ratio <= 1 + allowed
    lines += [
        f"metric: {_unit_label(score)} [{score.key}]",
        f"reference score = {_number(reference)}",
        f"test score = {_number(value)}",
        f"test / reference = {ratio:.4f}; allowed {1 - allowed:.4f} to {1 + allowed:.4f} "
        f"(within {allowed * 100:.0f} %)",
    ]
    summary = (
        f"performance: {score.label} {_shown(value, score)} vs {_shown(reference, score)} "
        f"({percent_change(ratio)}), allowed within {allowed * 100:.0f} %: "
        + ("pass" if passed else "fail")
    )
    return make_check(passed, summary, lines)


def _not_faster(
    score: ScoreKey, reference: float, value: float, allowed: float, lines: list[str]
) -> Check:
    """TEST04: the speed (a rate; 1e9 / latency) at most `allowed` above the reference's."""
    ref_speed, speed = _speed(reference, score), _speed(value, score)
    ratio = speed / ref_speed
    passed = ratio < 1 + allowed
    label = f"1e9 / {_unit_label(score)}" if score.is_latency_ns else score.label
    lines += [
        f"metric: speed, {label} [{score.key}]",
        f"reference score = {_number(ref_speed)}",
        f"test score = {_number(speed)}",
        f"test / reference = {ratio:.4f}; allowed below {1 + allowed:.4f} "
        f"(at most {allowed * 100:.0f} % faster)",
    ]
    verdict = "pass" if passed else "fail: faster than the performance run allows"
    summary = (
        f"performance: speed {ratio:.3f}x the performance run's ({percent_change(ratio)}), "
        f"allowed below {1 + allowed:.2f}x: {verdict}"
    )
    return make_check(passed, summary, lines)


def _problems(test: ComplianceTest, ref: DetailLog, got: DetailLog) -> list[str]:
    """What makes the comparison meaningless; MLPerf's scripts fail a test on each."""
    problems = [
        f"the {name} is {log.get('result_validity', 'not judged')} per LoadGen: "
        + ("; ".join(log.get("result_invalid_reason", [])) or "no reason logged")
        for name, log in (("performance run", ref), ("compliance run", got))
        if log.get("result_validity") != "VALID"
    ]
    if _audited(ref):
        problems.append("the performance run itself ran under an audit.config; measure it again")
    wrong = _audit_not_applied(test, got)
    if wrong:
        problems.append(f"LoadGen did not apply {test}'s audit.config: {wrong}")
    scenarios = (ref.get("effective_scenario"), got.get("effective_scenario"))
    if scenarios[0] != scenarios[1] or scenarios[0] not in SCORE_KEYS:
        problems.append(f"scenarios differ or are unknown: {scenarios[0]} vs {scenarios[1]}")
    elif scenarios[0] == "Server" and _target_latencies_differ(ref, got):
        problems.append("the Server target latencies differ")
    else:
        key = SCORE_KEYS[str(scenarios[0])].key
        problems += [
            f"{name} logged no {key}" for name, log in _named(ref, got) if not log.get(key)
        ]
    return problems


def _audited(log: DetailLog) -> bool:
    if any(_AUDIT_FOUND in warning for warning in log.warnings):
        return True
    return any(_as_int(log.get(f"effective_{key}")) for key in _AUDIT_ONLY)


def _audit_not_applied(test: ComplianceTest, log: DetailLog) -> str:
    wrong = [
        f"{key} is {log.get(f'effective_{key}')!r}, not {value}"
        for key, value in AUDIT_SETTINGS[test].items()
        if key != "mode" and _as_int(log.get(f"effective_{key}")) != value
    ]
    if log.get("effective_test_mode") != "PerformanceOnly":
        wrong.append(f"test mode is {log.get('effective_test_mode')!r}, not PerformanceOnly")
    return "; ".join(wrong)


def _target_latencies_differ(ref: DetailLog, got: DetailLog) -> bool:
    key = "effective_target_latency_ns"
    return bool(ref.get(key) != got.get(key))


def _named(ref: DetailLog, got: DetailLog) -> tuple[tuple[str, DetailLog], ...]:
    return (("the performance run", ref), ("the compliance run", got))


def _describe(log: DetailLog) -> str:
    return f"{log.get('effective_scenario', '?')}, {log.get('result_validity', 'no result')}"


def _unit_label(score: ScoreKey) -> str:
    return f"{score.label} (ns)" if score.is_latency_ns else score.label


def _shown(value: float, score: ScoreKey) -> str:
    return f"{value / 1e6:.3f} ms" if score.is_latency_ns else f"{value:.6g}/s"


def _speed(value: float, score: ScoreKey) -> float:
    return 1e9 / value if score.is_latency_ns else value


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _number(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 1e6 else f"{value:.6g}"
