"""LoadGen settings as data: the official mlperf.conf it embeds, and our user.conf overrides."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.config import ProfileName, Scenario
from harness.errors import RunError

_CONF_START = b"# The format of this config file is 'key = value'."


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


@dataclass(frozen=True, kw_only=True)
class Expectation:
    """What warm-up measured, handed to LoadGen so it generates enough queries."""

    latency_ns: float
    samples_per_second: float


def user_conf_overrides(
    scenario: Scenario, profile: ProfileName, expected: Expectation | None
) -> dict[str, int | float]:
    """LoadGen keys (without the model.scenario prefix) this run sets on top of mlperf.conf.

    The submission profile only sets the expected latency or throughput, which MLPerf leaves
    to the submitter (none for an accuracy test); the quick profile also shortens the run.
    """
    overrides: dict[str, int | float] = {}
    if expected is None:  # an accuracy test: every sample once, whatever the speed
        pass
    elif scenario.scenario == "SingleStream":
        # LoadGen pre-generates min_duration / expected latency queries; under-estimating the
        # latency only costs memory, over-estimating it ends the run early, so halve it.
        overrides["target_latency"] = round(max(expected.latency_ns / 2, 1000.0) / 1e6, 6)
    else:
        # Offline sizes its single query as min_duration x target_qps. A short warm-up often
        # runs slower than steady state, and a query that is too small is INVALID: aim 25 % high.
        overrides["target_qps"] = round(max(expected.samples_per_second * 1.25, 0.1), 3)
    if profile == "quick":
        overrides["min_duration"] = scenario.quick.min_duration_ms
        overrides["min_query_count"] = scenario.quick.min_query_count
        overrides["performance_sample_count_override"] = scenario.quick.performance_sample_count
    return overrides


def render_user_conf(
    model_key: str, scenario_name: str, overrides: Mapping[str, int | float]
) -> str:
    """Format overrides as user.conf lines: `model.scenario.key = value`."""
    lines = ["# written by beyond-tops; applied on top of LoadGen's official mlperf.conf"]
    lines += [f"{model_key}.{scenario_name}.{key} = {value}" for key, value in overrides.items()]
    return "\n".join(lines) + "\n"
