"""Server's confirming runs after a peak search, in the run directory, each a worker's.

harness.analysis.capsearch decides the rates; this keeps the files: each confirmation but
the last is set aside in confirm-N/ (VALID or not), and the run directory ends holding the
highest rate LoadGen called VALID (moved back from its confirm-N/, the last run set aside in
its place), or the last INVALID one when none was VALID.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.analysis import capsearch
from harness.analysis.earlystop import confirm_step, generative_confirm_rate
from harness.handoff import PeakSearch
from harness.records.layout import (
    ATTEMPT_FILES,
    CONFIRM_PREFIX,
    FIRST_ATTEMPT,
    RESULT_FILE,
    TOKEN_TIMES_FILE,
)
from harness.results.runfile import load_result

# One confirmation's own files, and its first attempt's directory when LoadGen asked a re-run
RUN_FILES = (*ATTEMPT_FILES, RESULT_FILE, TOKEN_TIMES_FILE, FIRST_ATTEMPT)


def confirm_peak(
    run_dir: Path, search: PeakSearch, launch_at: Callable[[float], None]
) -> capsearch.ConfirmOutcome:
    """Confirm what `search` found with full runs (`launch_at` runs one into `run_dir`)."""
    launched = 0

    def run(rate_qps: float) -> capsearch.Verdict:
        nonlocal launched
        if launched:  # the last confirmation's files go aside, whatever its verdict
            set_aside(run_dir, run_dir / f"{CONFIRM_PREFIX}{launched}")
        launched += 1
        launch_at(rate_qps)
        return verdict(run_dir, rate_qps)

    runs_before = search.runs if search.runs is not None else len(search.steps) + 1
    outcome = capsearch.confirm(search.found_qps, search.failed_qps, runs_before, run)
    _keep_peak(run_dir, outcome)
    return outcome


def verdict(run_dir: Path, rate_qps: float) -> capsearch.Verdict:
    """The run's verdict, and where to go next if it was INVALID: by how far it missed.

    LoadGen's search judges each rate by its bound alone, on short runs; a confirmation also
    needs early stopping. A few over the bound steps 10 % down, many more (earlystop.
    confirm_step); a generative run, with no batch counts, by how far its queue grew.
    """
    if not (run_dir / RESULT_FILE).is_file():  # a re-run that again ended early: no verdict
        return capsearch.Verdict(valid=False, lower_qps=rate_qps * confirm_step(None, 0))
    result = load_result(run_dir)
    server = result.server
    if server is None:
        return capsearch.Verdict(valid=result.valid, lower_qps=rate_qps * confirm_step(None, 0))
    answered = sum(int(size) * n for size, n in server.batch_sizes.items())
    lower = server.target_qps * confirm_step(server.overlatency_queries, answered)
    if result.generation is not None:
        lower = generative_confirm_rate(
            server.target_qps,
            server.scheduled_samples_per_second,
            server.completed_samples_per_second,
        )
    return capsearch.Verdict(valid=result.valid, lower_qps=lower)


def set_aside(run_dir: Path, attempt: Path, names: tuple[str, ...] = RUN_FILES) -> None:
    """Move a run's own files from `run_dir` into `attempt` (made here)."""
    attempt.mkdir()
    for name in names:
        if (run_dir / name).exists():
            (run_dir / name).rename(attempt / name)


def _keep_peak(run_dir: Path, outcome: capsearch.ConfirmOutcome) -> None:
    """Leave the highest VALID confirmation in `run_dir`; the last goes aside for it."""
    last = len(outcome.tried)
    if outcome.peak_qps is None or outcome.tried[-1].passed:
        return  # no VALID one; or the last was VALID, hence the highest (each next goes up)
    index = next(
        n
        for n, tried in enumerate(outcome.tried, start=1)
        if tried.passed and tried.rate_qps == outcome.peak_qps
    )
    set_aside(run_dir, run_dir / f"{CONFIRM_PREFIX}{last}")
    kept = run_dir / f"{CONFIRM_PREFIX}{index}"
    for path in sorted(kept.iterdir()):
        path.rename(run_dir / path.name)
    kept.rmdir()
