"""Run a recorded job again: the recorded runs, the model by sha256, the trials, the verdict.

The RunRequest is read back from the recorded job.json (harness.records.job.request_of_run),
so the scenario, profile, target, seeds, sample counts and durations are the recorded ones and
nothing is taken from today's scenario files or defaults. The expected speed is measured by
each trial's warm-up, as it was when the record was made.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from harness.analysis.welch import welch_t_test
from harness.errors import ConfigError, HarnessError, ModelError, ResultError
from harness.execution.campaign import Campaign, run_trials
from harness.execution.pipeline import Launcher
from harness.files import create_run_dir, read_incomplete
from harness.models.llm.genai_config import MODEL_FILE
from harness.models.llm.store import generative_model_dir
from harness.models.modelfile import check_model_file, file_sha256
from harness.models.registry import cache_dir, zoo_model_path
from harness.records.job import request_of_run
from harness.records.layout import (
    DETAIL_LOG,
    JOB_FILE,
    RECORDED_DIR,
    REPRODUCTION_FILE,
    RESULT_FILE,
    SWEEP_FILE,
    TRIALS_FILE,
)
from harness.records.loadgen_log import effective_settings, parse_detail_log
from harness.records.request import RunRequest
from harness.records.result import RunResult
from harness.reproduce.checks import Settings
from harness.reproduce.record import write_reproduction
from harness.reproduce.source import check_numbers, check_source
from harness.reproduce.tolerance import Tolerance
from harness.reproduce.verdict import BundleRecord, Evidence, Reproduction, judge
from harness.results.groups import load_group
from harness.results.runfile import load_result

DEFAULT_TRIALS = 3  # for a single recorded run; a group's own count otherwise
_TRIAL = re.compile(r"trial-(\d+)")


@dataclass(frozen=True, kw_only=True)
class Request:
    """What `harness reproduce` was asked: the source, and how to judge and where to write."""

    source: Path
    out: Path
    tolerance: Tolerance = field(default_factory=Tolerance)
    trials: int | None = None  # None: the recorded group's count, else DEFAULT_TRIALS
    model: Path | None = None  # the model file, checked against the recorded sha256
    trusted: tuple[Path, ...] = ()  # keys a bundle's signature may be trusted by
    label: str | None = None  # --label of the reproduction (not the recorded run's)


@dataclass(frozen=True, kw_only=True)
class Recorded:
    """The recorded runs (one, or a group's trials) and the job they ran."""

    path: Path
    run_dirs: tuple[Path, ...]
    results: tuple[RunResult, ...]
    run_request: RunRequest
    requested: int  # the trials the record asked for (1 for a single run)
    is_group: bool


def reproduce(
    request: Request, *, launch: Launcher | None = None, stream: IO[str] | None = None
) -> tuple[Reproduction, Path]:
    """Run the recorded job again in a new trials group; the verdict, written in it.

    Errors before any trial measured (a bad source, a model with another sha256, a bundle
    that fails verification) leave nothing behind and propagate.
    """
    if _is_bundle(request.source):
        return _reproduce_bundle(request, launch, stream)
    recorded = load_recorded(request.source)
    run_request = checked_model(recorded, request.model)
    trials = _trials(recorded, request)
    group = create_run_dir(
        request.out,
        model=run_request.model_name,
        scenario=f"{run_request.scenario.scenario}-reproduce",
    )
    return _measure(recorded, run_request, trials, group, request, launch, stream, None)


def load_recorded(path: Path) -> Recorded:
    """A run directory or a trials group, with the job its runs ran."""
    check_source(path)
    group = load_group(path)
    runs = group.runs
    if not runs.results:
        raise ResultError(f"{path}: no finished trial to reproduce")
    requested = runs.requested if group.kind == "trials" else 1
    return _recorded(path, runs.run_dirs, runs.results, requested, group.kind == "trials")


def checked_model(recorded: Recorded, model: Path | None) -> RunRequest:
    """The recorded request with the model file whose sha256 is the recorded source model's.

    Without `model`: the file the recorded job named (the zoo model built again, the
    scenario's path, its --model), the recorded path, then any model in the cache with that
    hash; a file found only there is run as --model. A `model` the user names is run even
    with another sha256 (a swapped model): the verdict is then NOT COMPARABLE, with the ratio,
    since the user asked for that comparison; a missing one is refused.
    """
    result = recorded.results[0]
    want = result.precision.source_sha256
    run_request = recorded.run_request
    generative = run_request.scenario.generation is not None
    if model is not None and generative:
        raise ModelError(
            f"--model {model}: {recorded.path} is a generative run of the zoo's "
            f"{run_request.scenario.model.zoo}, which is rerun as built again (its sha256 "
            "checked); --model is for an ONNX file of a non-generative run: leave it out"
        )
    if model is not None:
        if not os.path.lexists(model):
            raise ModelError(
                f"--model {model}: no such file; pass the file the recorded run measured "
                f"(sha256 {want})"
            )
        check_model_file(model)  # a loop, FIFO, device or directory: refused, never read
        return dataclasses.replace(run_request, model_override=model)
    tried: list[str] = []
    for path in _job_model(run_request):
        got = _sha256(path)
        if got == want:
            return run_request
        tried.append(f"{path}: {'missing or not a regular file' if got is None else got[:16]}")
    for path in [] if generative else _other_copies(result, want):
        if _sha256(path) == want:
            return dataclasses.replace(run_request, model_override=path)
    raise ModelError(
        f"{recorded.path}: no model file with the recorded sha256 {want} "
        f"({'; '.join(tried) or 'the job names none'}); pass it with --model PATH"
    )


def _reproduce_bundle(
    request: Request, launch: Launcher | None, stream: IO[str] | None
) -> tuple[Reproduction, Path]:
    """Open the bundle inside a new group (verified, or its error propagates), then run it."""
    from harness.bundle.open import open_bundle

    name = request.source.name.split(".", 1)[0] or "bundle"
    group = create_run_dir(request.out, model=name, scenario="reproduce")
    ready = False
    try:
        opened = open_bundle(request.source, group / RECORDED_DIR, request.trusted)
        recorded = _bundled(request.source, opened.run_dirs)
        run_request = checked_model(recorded, request.model)
        trials = _trials(recorded, request)
        ready = True
    finally:
        if not ready:  # nothing was measured: leave nothing behind
            shutil.rmtree(group, ignore_errors=True)
    bundle = BundleRecord(
        path=str(request.source),
        signer_fingerprint=opened.signer_fingerprint,
        verified=opened.verified,
        trusted=opened.trusted,
    )
    return _measure(recorded, run_request, trials, group, request, launch, stream, bundle)


def _measure(
    recorded: Recorded,
    run_request: RunRequest,
    trials: int,
    group: Path,
    request: Request,
    launch: Launcher | None,
    stream: IO[str] | None,
    bundle: BundleRecord | None,
) -> tuple[Reproduction, Path]:
    """The trials in `group`, then the verdict; a trial that failed is a verdict, not an error."""
    labelled = dataclasses.replace(run_request, label=request.label)
    campaign = Campaign(request=labelled, out_root=request.out, launch=launch)
    try:
        run_trials(campaign, trials, root=group, stream=stream)
    except HarnessError:
        if not _trial_dirs(group):  # nothing was measured: an error, not a verdict
            shutil.rmtree(group, ignore_errors=True)
            raise
    reproduction = judge(_evidence(recorded), _reproduced(group, trials), request.tolerance)
    if bundle is not None:
        reproduction = dataclasses.replace(reproduction, bundle=bundle)
    write_reproduction(reproduction, group / REPRODUCTION_FILE)
    return reproduction, group


def _is_bundle(path: Path) -> bool:
    if (path / JOB_FILE).is_file() or (path / TRIALS_FILE).is_file():
        return False  # a run or a trials group: no need for the bundle reader
    if (path / SWEEP_FILE).is_file():
        return False
    from harness.bundle.open import is_bundle

    return is_bundle(path)


def _bundled(bundle: Path, roots: Sequence[Path]) -> Recorded:
    """A bundle's one run or group; several runs of one job are taken as its trials."""
    if len(roots) == 1:
        return load_recorded(roots[0])
    if not roots or any(not (root / RESULT_FILE).is_file() for root in roots):
        names = ", ".join(root.name for root in roots) or "nothing"
        raise ConfigError(
            f"{bundle}: holds {names}; reproduce a bundle of one run or trials group, "
            "or of runs of one job"
        )
    results = tuple(load_result(root) for root in roots)
    return _recorded(bundle, roots, results, len(roots), True)


def _recorded(
    path: Path,
    run_dirs: Sequence[Path],
    results: Sequence[RunResult],
    requested: int,
    is_group: bool,
) -> Recorded:
    """The recorded runs; all of them must have run one job (a group's trials do)."""
    for run_dir in run_dirs:
        check_numbers(run_dir)
    asked = [request_of_run(run_dir) for run_dir in run_dirs]
    for run_dir, run_request in zip(run_dirs[1:], asked[1:], strict=True):
        if not _same_job(run_request, asked[0]):
            raise ConfigError(
                f"{path}: {run_dir.name} ran another job than {run_dirs[0].name} (a Server "
                f"rate found per trial, another model or settings); reproduce one run: "
                f"harness reproduce {run_dir}"
            )
    return Recorded(
        path=path,
        run_dirs=tuple(run_dirs),
        results=tuple(results),
        run_request=asked[0],
        requested=requested,
        is_group=is_group,
    )


def _same_job(one: RunRequest, other: RunRequest) -> bool:
    """Whether two runs ran one job; the scenario file may have lain elsewhere."""
    return dataclasses.replace(one, scenario_path=None) == dataclasses.replace(
        other, scenario_path=None
    )


def _trials(recorded: Recorded, request: Request) -> int:
    """The trials to run; fails before any runs when the verdict may need a missing scipy."""
    trials = request.trials or (recorded.requested if recorded.is_group else DEFAULT_TRIALS)
    if len(recorded.results) >= 2 and trials >= 2:
        # A NOT REPRODUCED verdict then carries Welch's t-test: a missing scipy (the report
        # extra) is a DependencyError now, not after minutes of measuring.
        welch_t_test((0.0, 1.0), (0.0, 2.0))
    return trials


def _job_model(run_request: RunRequest) -> list[Path]:
    """The model file the recorded job names: its --model, the scenario's path or zoo model."""
    model = run_request.scenario.model
    if run_request.model_override is not None:
        return [run_request.model_override]
    if model.path is not None:
        return [Path(model.path)]
    if run_request.scenario.generation is not None:
        # a generative zoo model's directory, built again (its FP32 model.onnx is the source)
        return [generative_model_dir(str(model.zoo)) / MODEL_FILE]
    # built again by the recorded generator version (job.json: 1 when it names none)
    return [zoo_model_path(str(model.zoo), generator=model.generator)]


def _other_copies(result: RunResult, sha256: str) -> list[Path]:
    """Where else the file may be: the measured path (an unconverted model), then the cache."""
    paths = [Path(result.model.path)] if result.model.sha256 == sha256 else []
    models = cache_dir()
    if models.is_dir():
        paths += sorted(models.glob(f"*{sha256[:16]}*.onnx"))
    return paths


def _sha256(path: Path) -> str | None:
    try:
        return file_sha256(path)  # bounded, regular files only, a progress line per GiB
    except ModelError:  # missing, a loop, a FIFO, a device, a directory: not the file
        return None


def _logged_settings(run_dir: Path, result: RunResult) -> Settings:
    """LoadGen's effective settings as its detail log states them (result.json's copy if gone)."""
    path = run_dir / DETAIL_LOG
    if not path.is_file():
        return result.settings
    return effective_settings(parse_detail_log(path))


def _evidence(recorded: Recorded) -> Evidence:
    return Evidence(
        path=str(recorded.path),
        results=recorded.results,
        settings=tuple(
            _logged_settings(d, r) for d, r in zip(recorded.run_dirs, recorded.results, strict=True)
        ),
        requested=recorded.requested,
    )


def _trial_dirs(group: Path) -> list[Path]:
    found = [(int(m.group(1)), p) for p in group.iterdir() if (m := _TRIAL.fullmatch(p.name))]
    return [path for _, path in sorted(found) if path.is_dir()]


def _reproduced(group: Path, requested: int) -> Evidence:
    """The trials that finished, their logged settings, and why the others did not."""
    results: list[RunResult] = []
    settings: list[Settings] = []
    failures: list[str] = []
    for run_dir in _trial_dirs(group):
        incomplete = read_incomplete(run_dir)
        if incomplete is not None or not (run_dir / RESULT_FILE).is_file():
            cause = "no result" if incomplete is None else incomplete.cause
            failures.append(f"{run_dir.name} is INCOMPLETE ({cause})")
            continue
        result = load_result(run_dir)
        results.append(result)
        settings.append(_logged_settings(run_dir, result))
    stopped = read_incomplete(group)
    if stopped is not None:
        failures.append(f"the trials stopped: {stopped.cause}")
    return Evidence(
        path=str(group),
        results=tuple(results),
        settings=tuple(settings),
        requested=requested,
        failures=tuple(failures),
    )
