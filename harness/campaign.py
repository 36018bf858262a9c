"""Repeated trials and batch sweeps: each run in a fresh process, grouped in one directory."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from harness.analysis.stats import TrialStats, run_sweep, sweep_batches, trial_stats
from harness.config import ProfileName, Scenario
from harness.errors import HarnessError, RunError
from harness.files import atomic_write_text, create_run_dir
from harness.result import INCOMPLETE_FILE, RunResult, load_result

GROUP_SCHEMA_VERSION = 1
DEFAULT_TRIALS: dict[str, int] = {"quick": 3, "submission": 5}
_OOM_MARKERS = (
    "failed to allocate memory",
    "bad_alloc",
    "out of memory",
    "cuda_error_out_of_memory",
    "cudaerrormemoryallocation",
    "hipErrorOutOfMemory".lower(),
)


@dataclass(frozen=True, kw_only=True)
class Job:
    """One scenario to run: where it comes from and how."""

    scenario_path: Path
    scenario: Scenario
    profile: ProfileName
    hw: str
    out_root: Path
    model: Path | None = None
    strict: bool = False
    extra: tuple[str, ...] = field(default_factory=tuple)


class ChildRunError(RunError):
    """A run in a child process failed; carries its directory and the recorded cause."""

    def __init__(self, message: str, cause: str, exit_code: int = RunError.exit_code) -> None:
        super().__init__(message)
        self.cause = cause
        self.exit_code = exit_code  # the child's own code: 4 for a missing device, ...


def trials_count(job: Job, requested: int | None) -> int:
    """Trials asked for on the command line, in the scenario, or by the profile's default."""
    if requested is not None:
        return requested
    if job.scenario.trials is not None:
        return job.scenario.trials
    return DEFAULT_TRIALS[job.profile]


def run_trials(
    job: Job,
    trials: int,
    *,
    root: Path | None = None,
    batch_size: int | None = None,
    stream: IO[str] | None = None,
) -> Path:
    """Run `trials` fresh processes; one trial writes a plain run directory, more a group."""
    batch = batch_size or job.scenario.batch_size
    if trials == 1 and root is None:
        return _child(job, job.out_root, None, batch, stream)
    group = root or create_run_dir(
        job.out_root, model=_model_name(job), scenario=f"{job.scenario.scenario}-trials"
    )
    runs: list[str] = []
    try:
        for number in range(1, trials + 1):
            run_dir = _child(job, group, f"trial-{number}", batch, stream)
            runs.append(run_dir.name)
    except ChildRunError:
        if root is None and not any(group.iterdir()):
            group.rmdir()  # nothing ran: leave no empty group behind
        raise
    results = [load_result(group / name) for name in runs]
    metric, higher = _metric(job.scenario)
    stats = trial_stats(_values(results, metric), requested=trials, higher_is_better=higher)
    _write_group(
        group / "trials.json",
        {
            "schema_version": GROUP_SCHEMA_VERSION,
            "kind": "trials",
            "scenario_name": job.scenario.name,
            "scenario": job.scenario.scenario,
            "batch_size": batch,
            "profile": job.profile,
            "requested": trials,
            "runs": runs,
            "metric": metric,
            "stats": stats.to_dict(),
        },
    )
    if stream is not None:
        stream.write(render_trials(job.scenario.name, metric, stats) + "\n")
    return group


def run_batch_sweep(
    job: Job, trials: int, *, batches: Sequence[int] | None = None, stream: IO[str] | None = None
) -> Path:
    """Offline throughput at growing batch sizes until it saturates or memory runs out."""
    if job.scenario.scenario != "Offline":
        raise RunError(f"{job.scenario_path}: sweeps need an Offline scenario (batching)")
    sweep = create_run_dir(job.out_root, model=_model_name(job), scenario="Offline-sweep")
    dirs: dict[int, str] = {}

    def measure(batch: int) -> TrialStats:
        point = sweep / f"bs-{batch}"
        point.mkdir()
        run_trials(job, trials, root=point, batch_size=batch, stream=stream)
        dirs[batch] = point.name
        stats = json.loads((point / "trials.json").read_text())["stats"]
        return TrialStats.from_dict(stats)

    outcome = run_sweep(measure, batches=batches or list(sweep_batches()), is_oom=is_out_of_memory)
    _write_group(
        sweep / "sweep.json",
        {
            "schema_version": GROUP_SCHEMA_VERSION,
            "kind": "sweep",
            "scenario_name": job.scenario.name,
            "profile": job.profile,
            "points": [
                {
                    "batch_size": p.batch_size,
                    "dir": dirs[p.batch_size],
                    "samples_per_second": p.stats.to_dict(),
                }
                for p in outcome.points
            ],
            "saturation_batch": outcome.saturation_batch,
            "best_batch": outcome.best_batch,
            "stopped": outcome.stopped,
            "limit": None if outcome.limit is None else outcome.limit.to_dict(),
        },
    )
    return sweep


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether a failed run ran out of memory (onnxruntime's allocation errors, the OOM killer)."""
    text = getattr(exc, "cause", str(exc)).lower()
    return any(marker in text for marker in _OOM_MARKERS) or "killed by signal 9" in text


def render_trials(name: str, metric: str, stats: TrialStats) -> str:
    """One block of text: the trials' spread and its warnings."""
    scale, unit = (1e-6, " ms") if metric.startswith("latency_ns") else (1.0, "")
    lines = [
        f"{name}: {len(stats.values)} trials of {metric.replace('latency_ns', 'latency')}: "
        f"median {stats.median * scale:,.4g}{unit}, best {stats.best * scale:,.4g}{unit}, "
        f"CoV {stats.cov * 100:.2f} %"
    ]
    lines += [f"  warning: {w}" for w in stats.warnings]
    return "\n".join(lines)


def _child(job: Job, out: Path, name: str | None, batch: int, stream: IO[str] | None) -> Path:
    command = [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        str(job.scenario_path),
        "--trials",
        "1",
        "--profile",
        job.profile,
        "--hw",
        job.hw,
        "--out",
        str(out),
        "--batch-size",
        str(batch),
        *(["--name", name] if name else []),
        *(["--model", str(job.model)] if job.model else []),
        *(["--strict"] if job.strict else []),
        *job.extra,
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as child:
        held = _forward(child, stream)
        code = child.wait()
    if code in (0, 1) and held:
        return Path(held)
    raise _failure(code, out, name)


def _forward(child: subprocess.Popen[str], stream: IO[str] | None) -> str | None:
    """Echo the child's output but its last line, which is its run directory."""
    held: str | None = None
    if child.stdout is None:
        return None
    try:
        for line in child.stdout:
            if held is not None and stream is not None:
                stream.write(held)
            held = line
    except KeyboardInterrupt:  # the child got the same Ctrl-C and marks its run
        child.wait()
        raise
    return held.strip() if held and held.strip() else None


def _failure(code: int, out: Path, name: str | None) -> ChildRunError:
    if code == 130:
        raise KeyboardInterrupt
    cause = f"exit code {code}" if code >= 0 else f"killed by signal {-code}"
    if name is not None and (out / name / INCOMPLETE_FILE).is_file():
        cause = (out / name / INCOMPLETE_FILE).read_text(encoding="utf-8").strip() + f" ({cause})"
    where = out / name if name else out
    return ChildRunError(f"{where}: run failed: {cause}", cause, code if code > 0 else 5)


def _metric(scenario: Scenario) -> tuple[str, bool]:
    if scenario.scenario == "SingleStream":
        return "latency_ns.p90", False
    return "samples_per_second", True


def _values(results: Sequence[RunResult], metric: str) -> list[float]:
    values = []
    for result in results:
        value: Any = result
        for part in metric.split("."):
            value = value[part] if isinstance(value, dict) else getattr(value, part)
        if value is None:
            raise HarnessError(f"{result.run_id}: has no {metric}")
        values.append(float(value))
    return values


def _model_name(job: Job) -> str:
    return job.model.stem if job.model is not None else job.scenario.model.name


def _write_group(path: Path, data: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")
