"""A generative Server run's capacity: its peak search, each confirming run and the peak.

Read from the run directory the pipeline left: peak-search/peak.json (what the harness's
capacity search settled on, harness.analysis.capsearch), peak-search/step-N/ (each rate the
search tried: LoadGen's logs and the SUT's token_times.npz), confirm-N/ (the confirmations set
aside) and the final run, each with result.json and the SUT's token_times.npz. Goodput at each
rate comes from those stamps against the run's own TTFT / TPOT limits. Only a run LoadGen
called VALID is the peak.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.analysis.goodput import goodput
from harness.errors import ResultError
from harness.handoff import read_peak
from harness.records.capacity import Capacity, Goodput, RateTried, SearchStep
from harness.records.layout import (
    CONFIRM_PREFIX,
    DETAIL_LOG,
    PEAK_SEARCH_DIR,
    RESULT_FILE,
    STEP_PREFIX,
    TOKEN_TIMES_FILE,
)
from harness.records.loadgen_log import logged_float, parse_detail_log
from harness.records.result import RunResult
from harness.results.runfile import load_result
from harness.telemetry.tokentimes import read_token_times

MAX_CONFIRMS = 64  # more confirm-N directories than the pipeline ever makes: not read
MAX_STEPS = 64  # more step-N directories than a search ever makes (capsearch.SEARCH_RUNS)


def capacity_of(run_dir: Path) -> Capacity | None:
    """The capacity search in ``run_dir``; None when it ran no peak search or is not generative."""
    if not (run_dir / PEAK_SEARCH_DIR).is_dir() or not (run_dir / RESULT_FILE).is_file():
        return None
    search = read_peak(run_dir / PEAK_SEARCH_DIR)
    directories = [
        f"{CONFIRM_PREFIX}{n}"
        for n in range(1, MAX_CONFIRMS + 1)
        if (run_dir / f"{CONFIRM_PREFIX}{n}" / RESULT_FILE).is_file()
    ]
    tried = [_tried(run_dir, name) for name in (*directories, ".")]
    if any(t is None for t in tried):
        return None  # not a generative run
    runs = tuple(t for t in tried if t is not None)
    valid = [t for t in runs if t.valid]
    generation = load_result(run_dir / RESULT_FILE).generation
    limits = None if generation is None else (generation.ttft_limit_ns, generation.tpot_limit_ns)
    return Capacity(
        search_qps=search.found_qps or None,
        search_steps=tuple(search.steps),
        search_runs=search.runs,
        tried=runs,
        peak=max(valid, key=lambda t: t.target_qps) if valid else None,
        searched=_searched(run_dir / PEAK_SEARCH_DIR, limits),
    )


def _searched(
    directory: Path, limits: tuple[int | None, int | None] | None
) -> tuple[SearchStep, ...]:
    """Each rate the search ran (step-N/), LoadGen's judgement and goodput from its own stamps."""
    if limits is None or limits[0] is None or limits[1] is None:
        return ()
    ttft_limit_ns, tpot_limit_ns = limits[0], limits[1]
    steps: list[SearchStep] = []
    for n in range(1, MAX_STEPS + 1):
        step = directory / f"{STEP_PREFIX}{n}"
        if not (step / DETAIL_LOG).is_file():
            break  # the steps are numbered from 1 without gaps
        log = parse_detail_log(step / DETAIL_LOG)
        rate = logged_float(log, "effective_target_qps")
        if rate is None or not rate > 0:
            raise ResultError(
                f"{step / DETAIL_LOG}: effective_target_qps is {rate}, not a rate > 0; "
                "LoadGen logs the rate of every run: run the search again"
            )
        within = log.get("result_perf_constraints_met")
        good = _goodput(step, ttft_limit_ns, tpot_limit_ns)
        steps.append(
            SearchStep(
                directory=f"{PEAK_SEARCH_DIR}/{step.name}",
                rate_qps=rate,
                within=within if isinstance(within, bool) else None,
                queries=0 if good is None else good.queries,
                goodput=good,
            )
        )
    return tuple(steps)


def _tried(run_dir: Path, name: str) -> RateTried | None:
    directory = run_dir / name
    result = load_result(directory / RESULT_FILE)
    generation, server = result.generation, result.server
    if generation is None or server is None:
        return None
    good = None
    if generation.ttft_limit_ns is not None and generation.tpot_limit_ns is not None:
        good = _goodput(directory, generation.ttft_limit_ns, generation.tpot_limit_ns)
    per_token, per_joule, why = _energy(result)
    return RateTried(
        directory=name,
        target_qps=server.target_qps,
        valid=result.valid,
        tokens_per_second=generation.tokens_per_second,
        ttft_p99_ns=None if generation.ttft_ns is None else generation.ttft_ns.p99,
        tpot_p99_ns=None if generation.tpot_ns is None else generation.tpot_ns.p99,
        goodput=good,
        energy_per_token_mj=per_token,
        tokens_per_joule=per_joule,
        energy_not_measured=why,
    )


def _energy(result: RunResult) -> tuple[dict[str, float], dict[str, float], str | None]:
    """Per source, mJ per output token and tokens per J over the run's window; else why not."""
    telemetry = result.telemetry
    if telemetry is None or telemetry.tokens is None:
        return {}, {}, "not measured: the run's telemetry window never opened"
    sources = sorted(telemetry.sources.items())
    per_token = {n: s.energy_per_token_mj for n, s in sources if s.energy_per_token_mj is not None}
    per_joule = {n: s.tokens_per_joule for n, s in sources if s.tokens_per_joule is not None}
    return per_token, per_joule, None if per_token else telemetry.tokens.not_measured


def _stamps(path: Path) -> dict[str, np.ndarray] | None:
    """token_times.npz's columns, from the one bounded reader; None where none was written."""
    if not path.is_file():
        return None
    times = read_token_times(path)
    arrays = {
        "issue_ns": times.issue_ns,
        "first_ns": times.first_ns,
        "end_ns": times.end_ns,
        "tokens": times.tokens,
    }
    if times.start_ns is not None:
        arrays["start_ns"] = times.start_ns
    return arrays


def _goodput(directory: Path, ttft_limit_ns: int, tpot_limit_ns: int) -> Goodput | None:
    arrays = _stamps(directory / TOKEN_TIMES_FILE)
    if arrays is None:
        return None
    try:
        return goodput(
            issue_ns=arrays["issue_ns"],
            first_ns=arrays["first_ns"],
            end_ns=arrays["end_ns"],
            tokens=arrays["tokens"],
            start_ns=arrays.get("start_ns"),
            ttft_limit_ns=ttft_limit_ns,
            tpot_limit_ns=tpot_limit_ns,
        )
    except (ValueError, IndexError) as exc:
        path = directory / TOKEN_TIMES_FILE
        raise ResultError(f"{path}: not a token_times file ({exc})") from None


def capacity_lines(capacity: Capacity) -> list[str]:
    """What the search found, for people: every rate tried, then the peak or why there is none."""
    runs = "" if capacity.search_runs is None else f" in {capacity.search_runs} runs"
    lines = [f"  capacity: the peak search settled on {capacity.search_qps or 0:g} QPS{runs}"]
    for step in capacity.searched:
        good = step.goodput
        text = "n/a" if good is None else f"{good.goodput_qps:.2f} QPS ({good.good}/{good.queries})"
        verdict = {True: "within", False: "over", None: "unjudged"}[step.within]
        lines.append(
            f"    {step.directory}: {step.rate_qps:g} QPS {verdict} the limits, goodput {text}"
        )
    for run in capacity.tried:
        good = run.goodput
        goodput_text = (
            "goodput n/a"
            if good is None
            else (
                f"goodput {good.goodput_qps:.2f} QPS ({good.good}/{good.queries} met both limits)"
            )
        )
        lines.append(
            f"    {run.directory}: {run.target_qps:g} QPS {'VALID' if run.valid else 'INVALID'}, "
            f"{_ms(run.ttft_p99_ns)} TTFT p99, {_ms(run.tpot_p99_ns)} TPOT p99, {goodput_text}"
        )
    peak = capacity.peak
    if peak is None:
        lines.append("  capacity: no confirmed VALID peak (every confirming run was INVALID)")
        return lines
    delay = None if peak.goodput is None else peak.goodput.queue_delay_ns
    delay_text = "n/a" if delay is None else f"p50 {_ms(delay[0])}, p99 {_ms(delay[1])}"
    tokens = "n/a" if peak.tokens_per_second is None else f"{peak.tokens_per_second:,.1f}"
    lines.append(
        f"  capacity: peak {peak.target_qps:g} QPS (confirmed VALID), {tokens} tokens/s, "
        f"queueing delay {delay_text}"
    )
    lines.append(f"  capacity: energy at the peak: {_energy_text(peak)}")
    return lines


def _energy_text(run: RateTried) -> str:
    if not run.energy_per_token_mj:
        return run.energy_not_measured or "not measured"
    parts = []
    for name, mj in run.energy_per_token_mj.items():
        per_joule = run.tokens_per_joule.get(name)
        rate = "n/a" if per_joule is None else f"{per_joule:.2f}"
        parts.append(f"{name} {mj:.3f} mJ/token, {rate} tokens/J")
    return "; ".join(parts)


def _ms(ns: int | None) -> str:
    return "n/a" if ns is None else f"{ns / 1e6:.3f} ms"
