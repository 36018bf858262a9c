"""LoadGen settings as data: the official mlperf.conf it embeds, and our user.conf overrides."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from pathlib import Path

from harness.config import MULTISTREAM_SAMPLES_PER_QUERY, ProfileName, Scenario
from harness.errors import ConfigError, RunError
from harness.records.loadgen_conf import conf_value
from harness.records.request import Expectation

_CONF_START = b"# The format of this config file is 'key = value'."
ACCURACY_SERVER_QPS = 10000.0  # a Server accuracy test's arrival rate when none is given
# LoadGen sizes Offline's one query as floor(OFFLINE_SLACK x min_duration_s x target_qps)
# samples (its kSlack; checked: 1 s at 4210.13 QPS gave generated_samples_per_query 4631).
OFFLINE_SLACK = 1.1


def official_mlperf_conf() -> str:
    """Return the mlperf.conf text compiled into the installed LoadGen wheel.

    The wheel ships mlperf.conf only inside its extension module, so we read it from there,
    unedited, to record it (and its sha256) beside each run. LoadGen itself applies its
    built-in copy: with conf_type 0 on every run, since a user.conf-only call applies it only
    the first time in a process.
    """
    import mlperf_loadgen

    blob = Path(str(mlperf_loadgen.__file__)).read_bytes()
    start = blob.find(_CONF_START)
    if start < 0:
        raise RunError(
            f"{mlperf_loadgen.__file__}: no embedded mlperf.conf found; "
            "reinstall mlcommons-loadgen (pip install --force-reinstall mlcommons-loadgen)"
        )
    end = blob.find(b"\0", start)
    return blob[start:end].decode("utf-8")


def sha256_text(text: str) -> str:
    """Hex sha256 of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def user_conf_overrides(
    scenario: Scenario, profile: ProfileName, expected: Expectation | None
) -> dict[str, int | float]:
    """LoadGen keys (without the model.scenario prefix) this run sets on top of mlperf.conf.

    The submission profile only sets the expected latency or throughput, which MLPerf leaves
    to the submitter (none for an accuracy test); the quick profile also shortens the run.
    """
    overrides: dict[str, int | float] = {}
    if scenario.scenario == "MultiStream" and scenario.batch_size != MULTISTREAM_SAMPLES_PER_QUERY:
        if profile == "submission":
            raise ConfigError(
                f"batch_size: MLPerf's MultiStream query is {MULTISTREAM_SAMPLES_PER_QUERY} "
                f"samples and a submission may not change it (got {scenario.batch_size}); set "
                f"batch_size: {MULTISTREAM_SAMPLES_PER_QUERY}"
            )
        overrides["samples_per_query"] = scenario.batch_size
    if scenario.scenario == "Server" and scenario.server.latency_bound_ms is not None:
        overrides["target_latency"] = scenario.server.latency_bound_ms
    if expected is None:  # an accuracy test: every sample once, whatever the speed
        if scenario.scenario == "Server":
            # mlperf.conf's 1 QPS would take a second per sample: the rate does not change
            # the responses, so the accuracy test runs at the scenario's, or as fast as it can.
            overrides["target_qps"] = scenario.server.target_qps or ACCURACY_SERVER_QPS
    elif scenario.scenario in ("SingleStream", "MultiStream"):
        # LoadGen pre-generates min_duration / expected latency queries; under-estimating the
        # latency only costs memory, over-estimating it ends the run early, so halve it.
        overrides["target_latency"] = round(max(expected.latency_ns / 2, 1000.0) / 1e6, 6)
    elif scenario.scenario == "Server":
        # The arrival rate is the experiment, not a sizing hint: the user's, or the rate the
        # peak search found, or (for the search) the warm-up's throughput as its start.
        qps = scenario.server.target_qps or expected.samples_per_second
        overrides["target_qps"] = round(max(qps, 0.1), 3)
    else:
        # Offline sizes its single query as min_duration x target_qps. A short warm-up often
        # runs slower than steady state, and a query that is too small is INVALID: aim 25 % high.
        qps = round(max(expected.samples_per_second * 1.25, 0.1), 3)
        duration_ms = _offline_min_duration_ms(scenario, profile)
        overrides["target_qps"] = whole_batches_qps(qps, scenario.batch_size, duration_ms)
    if profile == "quick":
        overrides["min_duration"] = scenario.quick.min_duration_ms
        overrides["min_query_count"] = scenario.quick.min_query_count
        if scenario.scenario == "Offline" and expected is not None:
            overrides["min_query_count"] = _whole_batches(
                scenario.quick.min_query_count, scenario.batch_size
            )
        overrides["performance_sample_count_override"] = scenario.quick.performance_sample_count
    return overrides


def whole_batches_qps(qps: float, batch_size: int, min_duration_ms: int) -> float:
    """`qps`, raised just enough that LoadGen's Offline query is a whole number of batches.

    A short last batch is padded to the model's fixed batch and costs a whole one: up to
    (batch - 1) samples' time for nothing, 0.4 % of a 20 s ResNet-50 run at batch 8 on
    average, which plain onnxruntime does not pay. The count lands half a sample above
    the whole batches (rounded up to 1e-6 QPS), so LoadGen's floor cannot fall below it.
    """
    seconds = OFFLINE_SLACK * min_duration_ms / 1000
    samples = math.floor(seconds * qps)
    if batch_size <= 1 or samples <= 0 or samples % batch_size == 0:
        return qps
    wanted = _whole_batches(samples, batch_size)
    return math.ceil((wanted + 0.5) / seconds * 1e6) / 1e6


def _whole_batches(samples: int, batch_size: int) -> int:
    return -(-samples // batch_size) * batch_size


def _offline_min_duration_ms(scenario: Scenario, profile: ProfileName) -> int:
    if profile == "quick":
        return scenario.quick.min_duration_ms
    return int(conf_value(official_mlperf_conf(), "*", "Offline", "min_duration") or 600000)


def token_overrides(scenario: Scenario, model_key: str) -> dict[str, int | float]:
    """A generative scenario's LoadGen keys: token latencies, equal issue, Server's limits.

    As mlperf.conf sets them for MLPerf's LLMs: ``use_token_latencies`` and equal-issue mode
    (``sample_concatenate_permutation``) everywhere; in Server, p99 TTFT and TPOT limits (ms)
    in place of a latency bound. The limits are the scenario's, else mlperf.conf's for the
    model key; a model mlperf.conf does not name, with none given, is refused (never a
    silent default).
    """
    generation = scenario.generation
    if generation is None:
        return {}
    out: dict[str, int | float] = {"use_token_latencies": 1, "sample_concatenate_permutation": 1}
    if scenario.scenario != "Server":
        return out
    limits = generation.limits
    if limits is not None:
        return {
            **out,
            "target_latency": 0,
            "ttft_latency": limits.ttft_ms,
            "tpot_latency": limits.tpot_ms,
        }
    official = official_mlperf_conf()
    ttft = conf_value(official, model_key, "Server", "ttft_latency")
    tpot = conf_value(official, model_key, "Server", "tpot_latency")
    if ttft is None or tpot is None:
        raise ConfigError(
            f"generation.limits: mlperf.conf has no TTFT/TPOT limits for '{model_key}'; set "
            "generation.limits: {ttft_ms: ..., tpot_ms: ...} or model.loadgen_name to an MLPerf "
            "LLM (e.g. llama3_1-8b)"
        )
    return out


def render_user_conf(
    model_key: str, scenario_name: str, overrides: Mapping[str, int | float]
) -> str:
    """Format overrides as user.conf lines: `model.scenario.key = value`."""
    lines = ["# written by beyond-tops; applied on top of LoadGen's official mlperf.conf"]
    lines += [f"{model_key}.{scenario_name}.{key} = {value}" for key, value in overrides.items()]
    return "\n".join(lines) + "\n"


def server_latency_bound_ns(scenario: Scenario, model_key: str) -> int:
    """Server's latency bound: the scenario's, else mlperf.conf's for the model (ns)."""
    if scenario.server.latency_bound_ms is not None:
        return round(scenario.server.latency_bound_ms * 1e6)
    value = conf_value(official_mlperf_conf(), model_key, "Server", "target_latency")
    return round(float(value or 10) * 1e6)  # LoadGen's own default: 10 ms
