"""The job file: what one worker process runs, written by its parent, kept as the record."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import harness
from harness.config import PROFILES, ProfileName, Scenario, scenario_from_dict, scenario_to_dict
from harness.errors import ConfigError
from harness.files import atomic_write_text
from harness.strictjson import maybe, read_json, want

T = TypeVar("T")

# History: 1, the performance and accuracy tests; 2, the compliance tests TEST01 and TEST04
# and Server's peak search, find_peak (a version 1 file is a version 2 file without them, so
# both are read).
JOB_SCHEMA_VERSION = 2
JOB_OLDEST_READABLE = 1
JOB_FILE = "job.json"
ComplianceTest = Literal["TEST01", "TEST04"]
COMPLIANCE_TESTS: tuple[ComplianceTest, ...] = ("TEST01", "TEST04")
LoadGenTest = Literal["performance", "accuracy", "find_peak", "TEST01", "TEST04"]
TESTS: tuple[LoadGenTest, ...] = ("performance", "accuracy", "find_peak", *COMPLIANCE_TESTS)


@dataclass(frozen=True, kw_only=True)
class Expected:
    """The speed LoadGen is told to expect, so it generates enough queries."""

    latency_ns: float
    samples_per_second: float


@dataclass(frozen=True, kw_only=True)
class Job:
    """One LoadGen test in one worker process, and where its outcome goes.

    The scenario is resolved (precision, batch size and providers from the command line
    applied), so the file alone says what ran; `harness.execution.worker` runs it again as it
    stands.
    """

    scenario: Scenario
    scenario_path: str | None
    profile: ProfileName
    hw: str
    test: LoadGenTest
    run_dir: Path
    model_override: Path | None = None
    strict: bool = False
    # None: the worker's warm-up measures it. Set for a re-run sized from a measured speed.
    expected: Expected | None = None
    attempt: int = 1
    # A re-run's first attempt, kept for the record (relative to run_dir).
    previous_attempt: str | None = None


def as_compliance_test(test: str) -> ComplianceTest:
    """`test` as a compliance test's name; anything else is a ConfigError."""
    for name in COMPLIANCE_TESTS:
        if name == test:
            return name
    raise ConfigError(f"{test!r} is not a compliance test (allowed: {', '.join(COMPLIANCE_TESTS)})")


def job_to_dict(job: Job) -> dict[str, Any]:
    """The JSON form of a job, versioned."""
    return {
        "schema_version": JOB_SCHEMA_VERSION,
        "harness_version": harness.__version__,
        "test": job.test,
        "run_dir": str(job.run_dir),
        "hw": job.hw,
        "profile": job.profile,
        "strict": job.strict,
        "model_override": None if job.model_override is None else str(job.model_override),
        "scenario_path": job.scenario_path,
        "expected": None if job.expected is None else vars(job.expected),
        "attempt": job.attempt,
        "previous_attempt": job.previous_attempt,
        "scenario": scenario_to_dict(job.scenario),
    }


def write_job(job: Job, path: Path) -> Path:
    """Write the job file atomically."""
    atomic_write_text(path, json.dumps(job_to_dict(job), indent=2) + "\n")
    return path


def read_job(path: Path) -> Job:
    """Read a job file; every problem is a one-line ConfigError naming the file and key."""
    data = _read(path)
    version = data.get("schema_version")
    if type(version) is not int or not JOB_OLDEST_READABLE <= version <= JOB_SCHEMA_VERSION:
        newer = isinstance(version, int) and version > JOB_SCHEMA_VERSION
        fix = "upgrade beyond-tops" if newer else "write it again with this beyond-tops"
        raise ConfigError(
            f"{path}: job schema_version {version!r} is not "
            f"{JOB_OLDEST_READABLE}-{JOB_SCHEMA_VERSION}; {fix}"
        )
    where = str(path)
    test = _choice(data, "test", TESTS, where)
    profile = _choice(data, "profile", PROFILES, where)
    expected = data.get("expected")
    try:
        return Job(
            scenario=scenario_from_dict(data.get("scenario"), f"{where}: scenario"),
            scenario_path=data.get("scenario_path"),
            profile=profile,
            hw=want(data, "hw", str, where, ConfigError),
            test=test,
            run_dir=Path(want(data, "run_dir", str, where, ConfigError)),
            model_override=_path(maybe(data, "model_override", str, where, ConfigError)),
            strict=_or(maybe(data, "strict", bool, where, ConfigError), False),
            expected=None if expected is None else Expected(**expected),
            attempt=_or(maybe(data, "attempt", int, where, ConfigError), 1),
            previous_attempt=data.get("previous_attempt"),
        )
    except KeyError as exc:
        raise ConfigError(f"{path}: missing key {exc.args[0]!r}; write the job again") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}; write the job again") from None


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(f"{path}: no such job file")
    data = read_json(path, ConfigError)  # a task file's job may come from another machine
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    return data


def _or(value: T | None, default: T) -> T:
    return default if value is None else value


def _choice(data: dict[str, Any], key: str, allowed: tuple[Any, ...], where: str) -> Any:
    value = data.get(key)
    if value not in allowed:
        names = ", ".join(str(a) for a in allowed)
        raise ConfigError(f"{where}: {key}: {value!r} is not allowed (allowed: {names})")
    return value


def _path(value: str | None) -> Path | None:
    return None if value is None else Path(value)
