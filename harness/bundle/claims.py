"""A result's `profile: submission` and `submission_valid` against the settings LoadGen logged.

The submission profile runs under MLPerf's own mlperf.conf, changing only the expected
latency or rate (harness.loadgen.conf); the quick profile shortens the run. A result that
claims the submission profile, or submission validity, must show MLPerf's settings in its
own detail log: a run of at least MLPerf's minimum duration, mlperf.conf's query count,
sample count, samples per query and seeds, a performance-only test of unique samples. The
mlperf.conf checked against is the one bundled beside the run, whose sha256 result.json
records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Literal

from harness.bundle.crosscheck import Contents, Passed, beside
from harness.errors import ResultError
from harness.foreign import read_bytes
from harness.records.layout import DETAIL_LOG, MLPERF_CONF
from harness.records.loadgen_conf import conf_value
from harness.records.loadgen_log import effective_settings, parse_detail_log
from harness.strictjson import JsonObject

CHECK = "submission-claim"
# MLPerf's inference rules: a performance run of any scenario lasts 600 s or more.
MLPERF_MIN_DURATION_MS = 600_000
_MAX_CONF_BYTES = 1 << 20  # LoadGen's mlperf.conf is about 8 KiB
# mlperf.conf key -> (LoadGen's effective setting, how the logged value must compare).
Rule = Literal["at least", "equal to"]
_CONF_RULES: Mapping[str, tuple[str, Rule]] = {
    "min_duration": ("min_duration_ms", "at least"),
    "min_query_count": ("min_query_count", "at least"),
    "performance_sample_count_override": ("performance_sample_count", "equal to"),
    "samples_per_query": ("samples_per_query", "equal to"),
    "qsl_rng_seed": ("qsl_rng_seed", "equal to"),
    "sample_index_rng_seed": ("sample_index_rng_seed", "equal to"),
    "schedule_rng_seed": ("schedule_rng_seed", "equal to"),
}
# Settings of MLPerf's measured run, whatever mlperf.conf says.
_FIXED: Mapping[str, object] = {
    "test_mode": "PerformanceOnly",
    "performance_issue_same": False,
    "performance_issue_unique": False,
}


def check_claims(contents: Contents) -> Passed:
    """Each result claiming the submission profile or validity shows MLPerf's settings."""
    claimed = 0
    for member in contents.results():
        result = contents.result_data(member, CHECK)
        claim = _claim(result)
        if claim is None:
            continue
        claimed += 1
        log = beside(member, DETAIL_LOG)
        try:
            settings = effective_settings(parse_detail_log(contents.path(log)))
        except ResultError as exc:
            raise contents.failed(CHECK, contents.shown(str(exc))) from None
        problem = _settings_problem(settings) or _conf_problem(contents, member, result, settings)
        if problem is not None:
            raise contents.failed(CHECK, f"{member} says {claim}, but {log} {problem}")
    if not claimed:
        return Passed(
            check=CHECK, detail="no result.json claims the submission profile or validity"
        )
    return Passed(
        check=CHECK,
        detail=f"{claimed} result.json claiming the submission profile or validity, each "
        f"with MLPerf's settings in its {DETAIL_LOG} (>= {MLPERF_MIN_DURATION_MS} ms, "
        f"{MLPERF_CONF}'s counts and seeds)",
    )


def _claim(result: JsonObject) -> str | None:
    claims = []
    if result.get("profile") == "submission":
        claims.append("profile: submission")
    if result.get("submission_valid") is True:
        claims.append("submission_valid: true")
    return ", ".join(claims) or None


def _settings_problem(settings: Mapping[str, Any]) -> str | None:
    duration = settings.get("min_duration_ms")
    if not isinstance(duration, int | float) or duration < MLPERF_MIN_DURATION_MS:
        return f"logs effective_min_duration_ms {duration}, under MLPerf's {MLPERF_MIN_DURATION_MS}"
    for key, value in _FIXED.items():
        if settings.get(key) != value:
            return f"logs effective_{key} {settings.get(key)!r}, not {value!r}"
    return None


def _conf_problem(
    contents: Contents, member: str, result: JsonObject, settings: Mapping[str, Any]
) -> str | None:
    """The logged settings against the bundled mlperf.conf, whose sha256 result.json records."""
    conf = beside(member, MLPERF_CONF)
    if not contents.has(conf):
        return f"holds settings of an mlperf.conf that is not bundled ({conf})"
    try:
        raw = read_bytes(contents.path(conf), ResultError, _MAX_CONF_BYTES)
    except ResultError as exc:
        return f"cannot be held against {contents.shown(str(exc))}"
    config = result.get("loadgen_config")
    config = config if isinstance(config, dict) else {}
    recorded = config.get("mlperf_conf_sha256")
    if recorded is not None and recorded != hashlib.sha256(raw).hexdigest():
        return (
            f"ran under an mlperf.conf whose sha256 (result.json's "
            f"loadgen_config.mlperf_conf_sha256 {recorded!r:.80}) is not {conf}'s"
        )
    model = config.get("model_key")
    text = raw.decode("utf-8", errors="replace")  # a line not UTF-8 sets nothing
    scenario = str(settings.get("scenario"))
    for key, (setting, rule) in _CONF_RULES.items():
        if scenario == "Offline" and setting == "min_query_count":
            setting = "min_sample_count"  # Offline's one query: LoadGen counts its samples
        wanted = conf_value(text, model if isinstance(model, str) else "", scenario, key)
        if wanted is None or (key == "performance_sample_count_override" and wanted == "0"):
            continue
        problem = _compare(settings.get(setting), wanted, rule)
        if problem is not None:
            return (
                f"logs effective_{setting} {settings.get(setting)!r}, {problem} "
                f"{conf}'s {key} {wanted}"
            )
    return None


def _compare(logged: object, wanted: str, rule: Rule) -> str | None:
    """None when `logged` is `rule` the conf's `wanted`; else the words for what it is."""
    try:
        number = int(wanted) if wanted.lstrip("-").isdigit() else float(wanted)
    except ValueError:
        return "not comparable with"
    if not isinstance(logged, int | float) or isinstance(logged, bool):
        return "not a number like"
    if rule == "at least":
        return None if logged >= number else "under"
    return None if logged == number else "not"
