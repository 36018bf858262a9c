"""What a published result's reproduction runs: its model, scenario and LoadGen settings.

The model: `--model PATH` when given, else the zoo's model of the benchmark (LoadGen's model
key, e.g. resnet50), the generator version whose file has the record's sha256 where the record
states one. A stated sha256 that neither matches is refused, naming both; a benchmark the zoo
lacks needs `--model` (a published LLM record is refused before: harness.reproduce.
published_source). The scenario: the benchmark's scenario file (scenarios/<zoo>-<scenario>.yaml:
batch size, input dims, data, warm-up) where there is one, else the harness's defaults.

LoadGen's settings are the record's detail log's effective ones (pinned): the three RNG seeds,
performance_sample_count, min and max duration and query counts, the latency percentile, and
MultiStream's samples per query and Server's latency bound. Only the speed LoadGen is told to
expect (Offline's target_qps, SingleStream's and MultiStream's target latency) is this
machine's, measured by each trial's warm-up, as for every run; Server's rate is found by its
peak search. `quick` keeps the seeds and shortens the run to the scenario's quick profile
(its min duration, query count and performance sample count, where smaller than the record's).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.config import ModelConfig, Scenario, load_scenario
from harness.errors import ModelError, ResultError
from harness.models.modelfile import check_model_file, file_sha256
from harness.models.registry import zoo_model_path
from harness.models.zoo import ZOO
from harness.records.request import LoadGenPins, RunRequest
from harness.records.result import SettingValue
from harness.reproduce.published_source import PublishedSource

SCENARIOS_DIR = Path("scenarios")  # as `harness bench` finds its suites: from the working dir
SEEDS = ("qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed")
# effective_* key (as logged) -> user.conf key; the speed-derived keys are left out on purpose.
CONF_KEYS = {
    "min_duration_ms": "min_duration",
    "max_duration_ms": "max_duration",
    "min_query_count": "min_query_count",
    "max_query_count": "max_query_count",
    "performance_sample_count": "performance_sample_count_override",
    "target_latency_percentile": "target_latency_percentile",
}
_LOADGEN_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True, kw_only=True)
class Plan:
    """The request to run, and what each part of it was taken from, for the printout."""

    request: RunRequest
    model: str  # which file runs and how its sha256 stands against the record's
    settings: tuple[str, ...]  # each pinned or shortened setting, and the adjusted target


def plan_published(
    source: PublishedSource, *, model: Path | None, quick: bool, hw: str = "cpu"
) -> Plan:
    """The run request that reproduces `source` here; refused before anything runs."""
    record = source.record
    if not _LOADGEN_KEY.fullmatch(record.model):
        raise ResultError(f"{source.path}: model {record.model[:80]!r} is not a LoadGen model key")
    zoo = record.model if record.model in ZOO else None
    if model is None and zoo is None:
        raise ModelError(
            f"{source.path}: benchmark {record.benchmark!r} (LoadGen model {record.model!r}) has "
            "no zoo model here; pass its ONNX file with --model PATH"
        )
    scenario = _scenario(source, zoo, model)
    if model is not None:
        described = _user_model(source, model)  # the scenario names it as its path
    else:
        generator, described = _zoo_model(source, str(zoo))
        scenario = dataclasses.replace(
            scenario, model=dataclasses.replace(scenario.model, generator=generator)
        )
    if record.scenario == "Server" and "target_latency_ns" in source.settings:
        # the bound the batcher, LoadGen (user.conf's target_latency) and the scoring share
        bound_ms = _number(source.settings, "target_latency_ns", source) / 1e6
        server = dataclasses.replace(scenario.server, target_qps=None, latency_bound_ms=bound_ms)
        scenario = dataclasses.replace(scenario, server=server)
    pins, lines = _pins(source, scenario, quick=quick)
    count = dict(pins.conf).get("performance_sample_count_override")
    if isinstance(count, int) and count > scenario.data.total_sample_count:
        data = dataclasses.replace(scenario.data, total_sample_count=count)
        scenario = dataclasses.replace(scenario, data=data)
    request = RunRequest(
        scenario=scenario,
        scenario_path=None,
        profile="quick" if quick else "submission",
        hw=hw,
        pins=pins,
    )
    return Plan(request=request, model=described, settings=lines)


def _scenario(source: PublishedSource, zoo: str | None, model: Path | None) -> Scenario:
    """The benchmark's scenario file where there is one, its name and scenario the record's."""
    record = source.record
    path = SCENARIOS_DIR / f"{zoo}-{record.scenario.lower()}.yaml"
    found = load_scenario(path) if zoo is not None and path.is_file() else None
    dims = found.model.dims if found is not None else {}
    if model is not None:
        given = ModelConfig(path=str(model), dims=dims, loadgen_name=record.model)
    else:
        given = ModelConfig(zoo=zoo, dims=dims, loadgen_name=record.model)
    base = found or Scenario(name="published", scenario=record.scenario, model=given)
    name = _safe(f"{record.benchmark}-{record.scenario.lower()}-published")
    return dataclasses.replace(base, name=name, scenario=record.scenario, model=given)


def _user_model(source: PublishedSource, model: Path) -> str:
    """`--model`, whose sha256 must be the record's where the record states one."""
    if not os.path.lexists(model):
        raise ModelError(f"--model {model}: no such file; pass the benchmark's ONNX file")
    check_model_file(model)  # a loop, FIFO, device or directory: refused, never read
    got = file_sha256(model)
    want = source.model_sha256
    if want is not None and got != want:
        raise ModelError(
            f"--model {model}: sha256 {got[:16]} is not the model the published result "
            f"measured (sha256 {want[:16]}, as its measurements JSON states); pass that file"
        )
    stated = "the record's" if want is not None else "the record states none to compare"
    return f"--model {model}, sha256 {got[:12]} ({stated})"


def _zoo_model(source: PublishedSource, zoo: str) -> tuple[int, str]:
    """The zoo generator version to build: the one with the record's sha256, else the newest."""
    entry = ZOO[zoo]
    want = source.model_sha256
    if want is None:
        version = entry.generator_version
        sha = file_sha256(zoo_model_path(zoo, generator=version))
        return version, (
            f"zoo {zoo} (generator {version}, sha256 {sha[:12]}; synthetic weights): the "
            "record states no model sha256 to compare"
        )
    tried: list[str] = []
    for version in sorted(entry.versions, reverse=True):
        sha = file_sha256(zoo_model_path(zoo, generator=version))
        if sha == want:
            return version, f"zoo {zoo} (generator {version}), sha256 {sha[:12]}: the record's"
        tried.append(f"generator {version}: {sha[:12]}")
    raise ModelError(
        f"{source.path}: the record's model has sha256 {want[:12]}, which no zoo {zoo} "
        f"generator builds ({'; '.join(tried)}); pass the file it measured with --model PATH"
    )


def _pins(
    source: PublishedSource, scenario: Scenario, *, quick: bool
) -> tuple[LoadGenPins, tuple[str, ...]]:
    """The record's LoadGen settings to apply, and a line for each taken, shortened or measured."""
    logged = source.settings
    seeds = tuple((key, _whole(logged, key, source)) for key in SEEDS if key in logged)
    conf: dict[str, int | float] = {}
    for effective, key in CONF_KEYS.items():
        if effective in logged:
            conf[key] = _number(logged, effective, source)
    record = source.record
    if record.scenario == "MultiStream" and "samples_per_query" in logged:
        conf["samples_per_query"] = _whole(logged, "samples_per_query", source)
    record_conf = dict(conf)
    shortened: set[str] = set()
    if quick:
        short = {
            "min_duration": scenario.quick.min_duration_ms,
            "min_query_count": scenario.quick.min_query_count,
            "performance_sample_count_override": scenario.quick.performance_sample_count,
        }
        for key, value in short.items():
            if key not in conf or value < conf[key]:
                conf[key] = value
                shortened.add(key)
    seed_text = ", ".join(f"{k} {v}" for k, v in seeds) if seeds else "none logged"
    lines = [f"seeds (the record's): {seed_text}"]
    applied = [
        f"{k} {v}"
        + (f" (--quick; the record's {record_conf.get(k, 'none')})" if k in shortened else "")
        for k, v in conf.items()
    ]
    lines.append("user.conf (the record's): " + (", ".join(applied) or "nothing"))
    lines.append(_target_line(record.scenario, logged))
    pins = LoadGenPins(conf=tuple(conf.items()), seeds=seeds, source=str(source.path))
    return pins, tuple(lines)


def _target_line(scenario: str, settings: Mapping[str, SettingValue]) -> str:
    """How the speed LoadGen is told to expect is set here, against the record's."""
    if scenario == "Offline":
        return (
            f"target_qps measured here: 1.25 x the warm-up's samples/s (the record's "
            f"{settings.get('target_qps')}, its system's)"
        )
    if scenario == "Server":
        return (
            f"target_qps found here by the capacity search at the record's latency bound "
            f"(the record's rate {settings.get('target_qps')}, its system's)"
        )
    return (
        "target_latency measured here: half the warm-up's fastest query (the record's was "
        "set for its own system)"
    )


def _number(logged: Mapping[str, SettingValue], key: str, source: PublishedSource) -> int | float:
    value = logged.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ResultError(
            f"{source.path}: effective_{key} {str(value)[:40]!r} is not a number >= 0 in its "
            "detail log; import the result again"
        )
    return value


def _whole(logged: Mapping[str, SettingValue], key: str, source: PublishedSource) -> int:
    value = _number(logged, key, source)
    if not isinstance(value, int) or value >= 2**64:
        raise ResultError(f"{source.path}: effective_{key} {value!r} is not a 64-bit whole number")
    return value


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:80] or "published"
