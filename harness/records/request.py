"""What a parent asks to be measured, from the command line to job.json, and the speed to expect.

One `RunRequest` travels the whole way: the CLI (or a fleet task, or `reproduce`) builds it, a
campaign carries it through its trials and sweep points, the pipeline writes it into each
LoadGen test's job.json (`harness.records.job.Job`), and the worker reads it back.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from harness.config import ProfileName, Scenario, model_name
from harness.records.generators import GENERATOR_VERSIONS
from harness.records.runlabel import check_label

# LoadGen's config parser splits on whitespace: a key keeps only these characters.
_LOADGEN_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True, kw_only=True)
class Expectation:
    """The speed LoadGen is told to expect, so it generates enough queries.

    Measured by the worker's warm-up, or, for a re-run, by the attempt that ended too early
    (retry.json), written into the re-run's job.json.
    """

    latency_ns: float
    samples_per_second: float


@dataclass(frozen=True, kw_only=True)
class LoadGenPins:
    """LoadGen settings a published result's detail log states, applied over the harness's own.

    ``conf``: user.conf keys (no model.scenario prefix), written after every other override.
    ``seeds``: the RNG seeds, which LoadGen reads only from mlperf.conf (a user.conf's are
    ignored), so they are set on its TestSettings after both files are read. ``source``: the
    detail log they came from, for the record.
    """

    conf: tuple[tuple[str, int | float], ...] = ()
    seeds: tuple[tuple[str, int], ...] = ()
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class RunRequest:
    """What to measure: a resolved scenario, where it runs, how, and with which model file.

    The scenario is resolved (precision, batch size and providers from the command line
    applied), so the request alone says what runs.
    """

    scenario: Scenario
    scenario_path: Path | None
    profile: ProfileName
    hw: str
    model_override: Path | None = None  # --model: this ONNX file instead of the scenario's
    strict: bool = False
    pins: LoadGenPins | None = None  # `reproduce` of a published result: its LoadGen settings
    label: str | None = None  # --label: the name readers see (harness.records.runlabel)

    def __post_init__(self) -> None:
        check_label(self.label)
        # A zoo model's generator version is part of what runs: an unset one is today's.
        model = self.scenario.model
        if model.zoo is not None and model.generator is None and model.zoo in GENERATOR_VERSIONS:
            stated = dataclasses.replace(model, generator=GENERATOR_VERSIONS[model.zoo])
            object.__setattr__(self, "scenario", dataclasses.replace(self.scenario, model=stated))

    @property
    def model_name(self) -> str:
        """The name run directories and results carry (harness.config.model_name)."""
        return model_name(self.scenario.model, self.model_override)

    @property
    def loadgen_key(self) -> str:
        """The name LoadGen's configuration (and MLPerf's rules) know the model by."""
        given = self.scenario.model.loadgen_name
        key = given or _LOADGEN_KEY_UNSAFE.sub("_", self.model_name)
        generation = self.scenario.generation
        if generation is not None and generation.interactive and self.scenario.scenario == "Server":
            return f"{key}-interactive"  # MLPerf's Interactive: Server under this name
        return key
