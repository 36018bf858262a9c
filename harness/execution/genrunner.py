"""A generative job in a worker: the model directory, prompts, warm-up, LoadGen, the result.

The same job protocol as every other run (harness.execution.worker): the pipeline's accuracy
job, then its performance job, re-run once when LoadGen's first attempt was sized too small.
The model runs under onnxruntime-genai (harness.runtime.genai) instead of an onnxruntime
session; the SUT is harness.loadgen.gensut's.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from harness.analysis.accuracy import load_accuracy, write_accuracy_block
from harness.analysis.genaccuracy import generative_accuracy
from harness.config import Scenario
from harness.datasets.prompt_file import file_prompts
from harness.datasets.prompts import Prompts, synthetic_prompts, text_prompts
from harness.errors import ConfigError, RunError
from harness.execution.genexact import check_served, greedy
from harness.execution.genrecording import GenMeasured, build_generative_result
from harness.execution.scoring import accuracy_plan, score_tokens
from harness.fingerprint.survey import Survey, survey
from harness.loadgen.gensut import GenerativeSUT, PromptStore
from harness.loadgen.plan import retry_expectation, write_test_confs
from harness.loadgen.timed import TestPlan, Window, load_settings, run_timed_test
from harness.models.llm.store import GENERATIVE, check_buildable
from harness.models.llm.variants import GenerativeVariant, generative_variant
from harness.records.generation import TOKEN_TIMES_FORMAT, Concurrency
from harness.records.job import Job
from harness.records.layout import (
    ACCURACY_DIR,
    ACCURACY_LOG,
    GENAI_CONFIG,
    TOKEN_TIMES_FILE,
)
from harness.records.request import Expectation
from harness.records.result import RunResult
from harness.runtime.genai import GENAI_PROVIDERS, GenaiModel
from harness.runtime.kvbatch import ContinuousBatch
from harness.runtime.warmup import WarmUpStats
from harness.stopping import Phases
from harness.telemetry import gpu_inventory
from harness.telemetry.pertoken import TokenSpan
from harness.telemetry.window import TelemetryWindow

# onnxruntime-genai allocates the KV cache and the session's buffers inside its own C++ model
GENERATIVE_PRECISIONS = ("fp32", "fp16", "int4")
GENAI_ARENA_NOTE = (
    "not exposed by onnxruntime-genai 0.18: its Python API has no allocator statistics"
)
# Samples whose logged tokens the accuracy job scores against the FP32 model's greedy tokens
ACCURACY_PROMPTS = 16


@dataclass(frozen=True, kw_only=True)
class _Ready:
    machine: Survey
    directory: Path
    variant: GenerativeVariant
    model: GenaiModel
    prompts: Prompts


def is_generative(scenario: Scenario) -> bool:
    """Whether a scenario runs a generative model (its ``generation:`` block)."""
    return scenario.generation is not None


def run_generative_accuracy(job: Job, *, phases: Phases) -> None:
    """The accuracy job: LoadGen's AccuracyOnly pass, its logged tokens scored against FP32's.

    LoadGen logs each sample's generated token ids (mlperf_log_accuracy.json), as MLPerf's
    LLM references do, and its detail log: what an MLPerf export's accuracy/ holds. The tokens
    scored are those the SUT returned in that pass (the first ACCURACY_PROMPTS samples), not a
    regeneration: against the FP32 model's greedy tokens on the same prompts. An FP32 run is
    the reference itself, and its block says so.
    """
    ready = _prepare(job, None, phases)
    plan = accuracy_plan(job, total_samples=ready.prompts.count, phases=phases)
    _timed(job, ready, plan, None, None)
    scenario = job.request.scenario
    generation = scenario.generation
    assert generation is not None  # a generative job
    if scenario.scenario == "Server":  # its scheduler batches: tokens must be a lone run's
        check_served(
            job.run_dir / ACCURACY_LOG,
            lone=lambda i: greedy(ready.model, ready.prompts, i, generation.hold_eos),
            count=ACCURACY_PROMPTS,
            all_indices=ready.prompts.count,
        )
    if scenario.model.precision == "fp32":
        accuracy = generative_accuracy(None)
    else:
        reference = GenaiModel(ready.variant.reference, provider=ready.model.provider)
        count = min(ACCURACY_PROMPTS, ready.prompts.count)
        tokens = score_tokens(
            job, count, lambda i: greedy(reference, ready.prompts, i, generation.hold_eos)
        )
        accuracy = generative_accuracy(tokens)
    phases.enter("write")
    write_accuracy_block(accuracy, job.run_dir)


def run_generative(
    job: Job, *, phases: Phases, progress: IO[str] | None = None
) -> RunResult | Expectation:
    """The generative job's timed test; its result, or the expectation to re-run with."""
    ready = _prepare(job, progress, phases)
    scenario = job.request.scenario
    phases.enter("warmup")
    warmup = _warm_up(ready, scenario)
    # The median, not the fastest query: outputs vary in length, and LoadGen issues
    # SingleStream's min_duration over half this many queries, however short they were.
    expected = job.expected or Expectation(
        latency_ns=warmup.median_latency_ns, samples_per_second=warmup.samples_per_second
    )
    phases.enter("loadgen")
    plan = write_test_confs(
        job.run_dir,
        scenario=scenario,
        profile=job.request.profile,
        model_key=job.request.loadgen_key,
        pins=job.request.pins,
        expected=expected,
        total_samples=ready.prompts.count,
        mode="performance",
    )
    telemetry = TelemetryWindow(job.request.hw, scenario.telemetry)
    try:
        sut, window = _timed(job, ready, plan, telemetry, progress)
    finally:
        telemetry.release()
    phases.enter("write")
    power = telemetry.finish(
        job.run_dir, samples=sut.completed, scenario=scenario.scenario, tokens=_token_span(sut)
    )
    memory = telemetry.memory(arena_bytes=None, arena_note=GENAI_ARENA_NOTE)
    files = {**telemetry.files, "token_times": _write_token_times(job.run_dir, sut)}
    retry = retry_expectation(scenario, job.run_dir, expected)
    if retry is not None and job.attempt == 1:
        return retry
    measured = GenMeasured(
        directory=ready.directory,
        plan=plan,
        warmup=warmup,
        window=window,
        machine=ready.machine,
        telemetry=power,
        prompts=ready.prompts.description,
        token_counts=tuple(sut.tokens.tokens),
        span_s=_span_s(sut),
        concurrency=_concurrency(sut, scenario),
        files=files,
        rerun_of=None if job.previous_attempt is None else str(job.previous_attempt),
        memory=memory,
        converted=ready.variant.converted,
        accuracy=load_accuracy(job.run_dir / ACCURACY_DIR),
    )
    return build_generative_result(job.request, job.run_dir, measured)


def _timed(
    job: Job,
    ready: _Ready,
    plan: TestPlan,
    telemetry: TelemetryWindow | None,
    progress: IO[str] | None,
) -> tuple[GenerativeSUT, Window]:
    """LoadGen's test of the plan (performance or accuracy); telemetry bounds a timed one."""
    generation = job.request.scenario.generation
    assert generation is not None  # a generative job
    store = PromptStore(
        ready.prompts,
        on_window_open=None if telemetry is None else telemetry.open,
        on_window_close=None if telemetry is None else telemetry.close,
    )
    sut = GenerativeSUT(
        ready.model,
        store,
        scenario=job.request.scenario.scenario,
        hold_eos=generation.hold_eos,
        max_active=generation.max_active,
        batch=_row_batch(job, ready),
    )
    window = run_timed_test(plan, load_settings(plan), sut, store, progress=progress)
    if isinstance(sut.error, KeyboardInterrupt):
        raise sut.error
    if sut.error is not None:
        raise RunError(f"{job.run_dir}: generation failed during LoadGen: {sut.error}")
    if store.hook_errors:
        raise RunError(f"{job.run_dir}: telemetry failed: {store.hook_errors[0]}")
    return sut, window


def _row_batch(job: Job, ready: _Ready) -> ContinuousBatch | None:
    """Server's continuous batch over the model's decoder, unless the scenario interleaves."""
    generation = job.request.scenario.generation
    assert generation is not None  # a generative job
    if job.request.scenario.scenario != "Server" or generation.server_batching != "continuous":
        return None
    threads = job.request.scenario.runtime.intra_op_threads
    return ContinuousBatch(ready.model.directory, intra_op_threads=threads)


def _prepare(job: Job, progress: IO[str] | None, phases: Phases) -> _Ready:
    phases.enter("prepare")
    scenario = job.request.scenario
    generation = scenario.generation
    name = scenario.model.zoo
    if generation is None or name is None:
        raise ConfigError("generation: this job has no generative model")  # config refuses it
    if name not in GENERATIVE:
        known = ", ".join(sorted(GENERATIVE))
        raise ConfigError(f"model.zoo: '{name}' is not a generative model (known: {known})")
    if scenario.model.precision not in GENERATIVE_PRECISIONS:
        raise ConfigError(
            f"model.precision: generative models run in {', '.join(GENERATIVE_PRECISIONS)}, "
            f"got '{scenario.model.precision}'"
        )
    if job.request.hw not in GENAI_PROVIDERS:
        raise ConfigError(
            f"--hw {job.request.hw}: generative models run on onnxruntime-genai's CPU and CUDA "
            f"builds (--hw {' or --hw '.join(GENAI_PROVIDERS)}); no genai build for this target"
        )
    check_buildable(name, job.request.hw)
    gpus, gpu_missing = gpu_inventory(job.request.hw)
    machine = survey(
        gpus=gpus,
        gpu_missing=gpu_missing,
        profile=job.request.profile,
        strict=job.request.strict,
        checks=job.test == "performance",
    )
    variant = generative_variant(name, scenario.model.precision)
    directory = variant.directory
    model = GenaiModel(
        directory,
        provider=GENAI_PROVIDERS[job.request.hw][0],
        intra_op_threads=scenario.runtime.intra_op_threads,
    )
    count = scenario.data.total_sample_count
    vocab = int(json.loads((directory / GENAI_CONFIG).read_text())["model"]["vocab_size"])
    seed = scenario.data.seed
    if generation.prompts == "text":
        prompts = text_prompts(generation, encode=model.encode, count=count, seed=seed)
    elif generation.path is not None:
        ids, budgets, described = file_prompts(
            generation,
            Path(generation.path),
            encode=model.encode,
            vocab=vocab,
            count=count,
            seed=seed,
        )
        prompts = Prompts(ids=ids, budgets=budgets, description=described)
    else:
        prompts = synthetic_prompts(generation, vocab=vocab, count=count, seed=seed)
    if progress is not None:
        progress.write(f"  prompts: {prompts.description}\n")
    return _Ready(
        machine=machine, directory=directory, variant=variant, model=model, prompts=prompts
    )


def _warm_up(ready: _Ready, scenario: Scenario) -> WarmUpStats:
    """Whole generations, untimed by LoadGen, until min_queries and min_duration_ms are met."""
    generation = scenario.generation
    assert generation is not None
    latencies: list[int] = []
    start = time.monotonic_ns()
    deadline = start + scenario.warmup.min_duration_ms * 1_000_000
    while len(latencies) < scenario.warmup.min_queries or time.monotonic_ns() < deadline:
        index = len(latencies) % ready.prompts.count
        budget = ready.prompts.budgets[index]
        t0 = time.monotonic_ns()
        sequence = ready.model.start(
            ready.prompts.ids[index],
            max_new_tokens=budget,
            min_new_tokens=budget if generation.hold_eos else 2,
        )
        sequence.first()  # as the SUT runs a query one at a time
        sequence.finish(lambda: False)
        sequence.output()
        latencies.append(time.monotonic_ns() - t0)
    duration_ns = time.monotonic_ns() - start
    median = statistics.median(latencies)
    return WarmUpStats(
        queries=len(latencies),
        duration_ms=round(duration_ns / 1e6, 3),
        median_latency_ns=float(median),
        min_latency_ns=min(latencies),
        samples_per_second=1e9 / median,
    )


def _concurrency(sut: GenerativeSUT, scenario: Scenario) -> Concurrency | None:
    """Server's continuous batch over the run (None for any other scheduler)."""
    generation = scenario.generation
    if sut.batching is None or generation is None:
        return None
    return sut.batching.record(generation.max_active)


def _span_s(sut: GenerativeSUT) -> float | None:
    """From the first query's issue to the last answer (s), as the SUT stamped them."""
    times = sut.tokens
    if not times.end_ns:
        return None
    return (max(times.end_ns) - min(times.issue_ns)) / 1e9


def _token_span(sut: GenerativeSUT) -> TokenSpan | None:
    """The SUT's own output tokens, LoadGen's first issue and last completion, as it stamped them.

    The tokens are what the SUT generated, never what it told LoadGen: energy per token
    divides by them. None when no query completed.
    """
    times = sut.tokens
    if not times.end_ns:
        return None
    return TokenSpan(
        output_tokens=sum(times.tokens),
        first_issue_ns=min(times.issue_ns),
        last_completion_ns=max(times.end_ns),
    )


def _write_token_times(run_dir: Path, sut: GenerativeSUT) -> str:
    """token_times.npz: per completed query, issue, start, first-token and end (ns), its tokens."""
    times = sut.tokens
    with (run_dir / TOKEN_TIMES_FILE).open("wb") as handle:
        np.savez(
            handle,
            format=np.asarray(TOKEN_TIMES_FORMAT),
            issue_ns=np.asarray(times.issue_ns, dtype=np.int64),
            first_ns=np.asarray(times.first_ns, dtype=np.int64),
            end_ns=np.asarray(times.end_ns, dtype=np.int64),
            tokens=np.asarray(times.tokens, dtype=np.int64),
            start_ns=np.asarray(times.start_ns, dtype=np.int64),
        )
    return TOKEN_TIMES_FILE
