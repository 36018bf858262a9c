"""The job file: what one worker process runs, written by its parent, kept as the record."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

import harness
from harness.config import PROFILES, Scenario, scenario_from_dict, scenario_to_dict
from harness.errors import ConfigError, ResultError
from harness.files import atomic_write_text
from harness.records.generators import UNRECORDED_GENERATOR
from harness.records.layout import JOB_FILE
from harness.records.request import Expectation, LoadGenPins, RunRequest
from harness.records.runlabel import check_label
from harness.strictjson import Format, JsonObject, maybe, read_versioned, shown_kind, want

T = TypeVar("T")

# History: 1, the performance and accuracy tests; 2, the compliance tests TEST01 and TEST04
# and Server's peak search, find_peak (a version 1 file is a version 2 file without them, so
# both are read); 3, the harness's own caching audit, SWAP (older files are read as well);
# 4, `pins`: a published result's LoadGen settings and seeds (`reproduce` of a published
# record), optional, so older files read as jobs without them.
JOB_SCHEMA_VERSION = 4
JOB_OLDEST_READABLE = 1
JOB_FORMAT = Format(
    what="a beyond-tops job file",
    newest=JOB_SCHEMA_VERSION,
    oldest=JOB_OLDEST_READABLE,
)
ComplianceTest = Literal["TEST01", "TEST04"]
COMPLIANCE_TESTS: tuple[ComplianceTest, ...] = ("TEST01", "TEST04")
# The harness's own audits, beside MLPerf's tests (harness.compliance.swap).
AuditTest = Literal["SWAP"]
AUDIT_TESTS: tuple[AuditTest, ...] = ("SWAP",)
LoadGenTest = Literal["performance", "accuracy", "find_peak", "TEST01", "TEST04", "SWAP"]
TESTS: tuple[LoadGenTest, ...] = (
    "performance",
    "accuracy",
    "find_peak",
    *COMPLIANCE_TESTS,
    *AUDIT_TESTS,
)


@dataclass(frozen=True, kw_only=True)
class Job:
    """One LoadGen test of a request in one worker process, and where its outcome goes.

    The request is resolved (the command line applied to its scenario, its model file named
    from `/`), so the file alone says what ran; `harness.execution.worker` runs it again as it
    stands.
    """

    request: RunRequest
    test: LoadGenTest
    run_dir: Path
    # None: the worker's warm-up measures it. Set for a re-run sized from a measured speed.
    expected: Expectation | None = None
    attempt: int = 1
    # A re-run's first attempt, kept for the record (relative to run_dir).
    previous_attempt: str | None = None


def as_compliance_test(test: str) -> ComplianceTest:
    """`test` as a compliance test's name; anything else is a ConfigError."""
    for name in COMPLIANCE_TESTS:
        if name == test:
            return name
    raise ConfigError(f"{test!r} is not a compliance test (allowed: {', '.join(COMPLIANCE_TESTS)})")


def job_to_dict(job: Job) -> JsonObject:
    """The JSON form of a job, versioned: the request's fields flat, beside the test's."""
    request = job.request
    return {
        "schema_version": JOB_SCHEMA_VERSION,
        "harness_version": harness.__version__,
        "test": job.test,
        "run_dir": str(job.run_dir),
        "hw": request.hw,
        "profile": request.profile,
        "strict": request.strict,
        "label": request.label,
        "model_override": _text(request.model_override),
        "scenario_path": _text(request.scenario_path),
        "expected": None if job.expected is None else _expectation_to_dict(job.expected),
        "attempt": job.attempt,
        "previous_attempt": job.previous_attempt,
        **({} if request.pins is None else {"pins": _pins_to_dict(request.pins)}),
        "scenario": scenario_to_dict(request.scenario),
    }


def write_job(job: Job, path: Path) -> Path:
    """Write the job file atomically."""
    atomic_write_text(path, json.dumps(job_to_dict(job), indent=2) + "\n")
    return path


def read_job(path: Path) -> Job:
    """Read a job file; every problem is a one-line ConfigError naming the file and key."""
    # a task file's job may come from another machine: bounded, strict JSON
    data = read_versioned(path, JOB_FORMAT, ConfigError, missing="no such job file").data
    where = str(path)
    test = _choice(data, "test", TESTS, where)
    profile = _choice(data, "profile", PROFILES, where)
    request = RunRequest(
        scenario=_stated_generator(scenario_from_dict(data.get("scenario"), f"{where}: scenario")),
        scenario_path=_path(maybe(data, "scenario_path", str, where, ConfigError)),
        profile=profile,
        hw=want(data, "hw", str, where, ConfigError),
        model_override=_path(maybe(data, "model_override", str, where, ConfigError)),
        strict=_or(maybe(data, "strict", bool, where, ConfigError), False),
        pins=_pins(maybe(data, "pins", dict, where, ConfigError), f"{where}: pins"),
        label=check_label(maybe(data, "label", str, where, ConfigError), f"{where}: label"),
    )
    return Job(
        request=request,
        test=test,
        run_dir=Path(want(data, "run_dir", str, where, ConfigError)),
        expected=_expectation(maybe(data, "expected", dict, where, ConfigError), where),
        attempt=_or(maybe(data, "attempt", int, where, ConfigError), 1),
        previous_attempt=maybe(data, "previous_attempt", str, where, ConfigError),
    )


def _stated_generator(scenario: Scenario) -> Scenario:
    """A job file that names no zoo generator version predates them: it ran version 1."""
    model = scenario.model
    if model.zoo is None or model.generator is not None:
        return scenario
    return dataclasses.replace(
        scenario, model=dataclasses.replace(model, generator=UNRECORDED_GENERATOR)
    )


def _pins_to_dict(pins: LoadGenPins) -> JsonObject:
    return {"conf": dict(pins.conf), "seeds": dict(pins.seeds), "source": pins.source}


def _pins(data: JsonObject | None, where: str) -> LoadGenPins | None:
    """A published result's LoadGen settings the job applies; None when it applies none."""
    if data is None:
        return None
    unknown = sorted(set(data) - {"conf", "seeds", "source"})
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; write the job again")
    conf = want(data, "conf", dict, where, ConfigError)
    seeds = want(data, "seeds", dict, where, ConfigError)
    for key, value in conf.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: conf: {key}: expected a number, got {shown_kind(value)}")
    for key, value in seeds.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{where}: seeds: {key}: expected a whole number >= 0")
    return LoadGenPins(
        conf=tuple(conf.items()),
        seeds=tuple(seeds.items()),
        source=want(data, "source", str, where, ConfigError),
    )


def _expectation_to_dict(expected: Expectation) -> JsonObject:
    return {"latency_ns": expected.latency_ns, "samples_per_second": expected.samples_per_second}


def _expectation(data: JsonObject | None, where: str) -> Expectation | None:
    """The recorded expectation: both speeds, finite numbers; None when none was recorded."""
    if data is None:
        return None
    unknown = sorted(set(data) - {"latency_ns", "samples_per_second"})
    if unknown:
        raise ConfigError(f"{where}: expected: unknown key {unknown[0]!r}; write the job again")
    return Expectation(
        latency_ns=_number(data, "latency_ns", f"{where}: expected"),
        samples_per_second=_number(data, "samples_per_second", f"{where}: expected"),
    )


def _number(data: JsonObject, key: str, where: str) -> float:
    value = want(data, key, object, where, ConfigError)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: {key}: expected a number, got {shown_kind(value)}")
    return float(value)


def _or(value: T | None, default: T) -> T:
    return default if value is None else value


def _choice(data: JsonObject, key: str, allowed: tuple[T, ...], where: str) -> T:
    value = data.get(key)
    for choice in allowed:
        if value == choice:
            return choice
    names = ", ".join(str(a) for a in allowed)
    raise ConfigError(f"{where}: {key}: {value!r} is not allowed (allowed: {names})")


def _path(value: str | None) -> Path | None:
    return None if value is None else Path(value)


def _text(value: Path | None) -> str | None:
    return None if value is None else str(value)


def request_of_run(run_dir: Path) -> RunRequest:
    """What a run directory measured, from its performance test's job.json."""
    path = run_dir / JOB_FILE
    if not path.is_file():
        raise ResultError(
            f"{run_dir}: not a run directory (no {JOB_FILE}); name a run, or a trial-N of a group"
        )
    job = read_job(path)
    if job.test != "performance":
        raise ResultError(f"{path}: a {job.test} test's job, not a run's performance test")
    return job.request
