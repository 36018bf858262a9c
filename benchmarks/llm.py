"""The harness against a bare onnxruntime-genai loop and against genai's own benchmark.

Per model and round, in turn: the harness's Offline run (LoadGen in a worker, the generative
SUT), a bare ``og.Generator`` loop over the same seeded prompts and output budgets (greedy,
end-of-text held off to the budget, one sequence at a time, as the harness's Offline runs
them, for as long as the harness's LoadGen window lasted), and the harness's SingleStream run;
then (c): onnxruntime-genai's own ``benchmark_e2e.py`` measurement (benchmarks/genai_e2e.py)
on its own prompt, and the harness's Offline and SingleStream runs on that same prompt and
generation length (a JSONL prompt file). It prints:
(a) Offline tokens/s, harness / plain (target >= 0.97);
(b) TTFT and TPOT p50, harness / plain (target <= 1.03): LoadGen's SingleStream figures
    against the bare loop's per-prompt time to first token (generator made, prompt appended,
    one step, the token read back) and time per output token after it (to the output read
    back: the harness reads both to answer LoadGen);
(c) harness / benchmark_e2e: Offline tokens/s against its new tokens per wall-clock second,
    TTFT p50 against its prompt processing plus first sampling, TPOT p50 against its mean
    token generation step (its figures are means over 10 repetitions after 5 warm-ups).
(d) the harness against the smallest LoadGen SUT there is (benchmarks/lg_floor.py: the bare
    loop inline in LoadGen's issue callback, from the main thread), and that minimal SUT
    against the bare loop: what LoadGen itself costs a Python SUT here, and what the harness
    adds on top of it. On a model whose token takes ~75 us (llm-tiny), LoadGen's own share
    is a few per cent, which (b)'s 1.03 cannot absorb; (d) is the harness's own part.
Medians over the rounds, each round's ratio quoted. On a shared machine read the spread too.

Usage: python benchmarks/llm.py [--models llm-tiny smollm2-135m-instruct] [--rounds 3]
       [--seconds 4] [--e2e-prompt 16] [--e2e-generation 16] [--no-e2e] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime_genai as og
from genai_e2e import E2EFigures, e2e_prompt, run_e2e
from lg_floor import FloorFigures, floor_run, query_seconds

from harness.config import (
    DataConfig,
    ModelConfig,
    QuickConfig,
    RuntimeConfig,
    Scenario,
    ScenarioName,
    WarmupConfig,
)
from harness.datasets.prompts import Prompts, synthetic_prompts
from harness.execution.pipeline import new_run_dir, run_one
from harness.generation import GenerationConfig, TokenRange
from harness.models.llm.store import generative_model_dir
from harness.records.layout import GENAI_CONFIG, TOKEN_TIMES_FILE
from harness.records.request import RunRequest
from harness.results.runfile import load_result
from harness.runtime.genai import session_overlay

SAMPLES = 16
SEED = 0
# "short": a few tokens in and out, so a round on a 135M model stays within seconds
GENERATION = GenerationConfig(
    input_tokens=TokenRange(min=16, max=32),
    output_tokens=TokenRange(min=8, max=16),
    hold_eos=True,
)
WARMUP_S = 0.5  # each side warms up this long: the bare loop once, each harness run in its worker
TARGETS = {"tokens/s": ">= 0.97", "TTFT p50": "<= 1.03", "TPOT p50": "<= 1.03"}


@dataclass(frozen=True)
class Figures:
    tokens_per_second: float
    ttft_ms: float
    tpot_ms: float
    span_s: float = 0.0  # the harness's LoadGen window: first issue to last answer
    # per query, one at a time: generation (start to answer), p50 and mean, and the mean gap
    # from one answer to the next start (LoadGen's completion, the SUT's queue, the loop)
    query_p50_ms: float = float("nan")
    query_mean_ms: float = float("nan")
    gap_mean_ms: float = float("nan")


def _query_figures(start_ns: np.ndarray, end_ns: np.ndarray) -> dict[str, float]:
    """Per query generation time (p50, mean) and the mean gap between queries, in ms."""
    order = np.argsort(start_ns)
    start, end = start_ns[order], end_ns[order]
    gaps = start[1:] - end[:-1]
    return {
        "query_p50_ms": float(np.median(end - start)) / 1e6,
        "query_mean_ms": float(np.mean(end - start)) / 1e6,
        "gap_mean_ms": float(np.mean(gaps)) / 1e6 if len(gaps) else float("nan"),
    }


def scenario(
    kind: ScenarioName,
    zoo: str,
    seconds: float,
    generation: GenerationConfig = GENERATION,
    threads: int = 0,
) -> Scenario:
    return Scenario(
        name=f"llm-bench-{zoo}-{kind}",
        scenario=kind,
        model=ModelConfig(zoo=zoo),
        data=DataConfig(total_sample_count=SAMPLES, seed=SEED),
        # as long as the bare loop's warm-up (WARMUP_S), in the worker's fresh process
        warmup=WarmupConfig(min_queries=4, min_duration_ms=int(WARMUP_S * 1000)),
        quick=QuickConfig(
            min_duration_ms=int(seconds * 1000),
            min_query_count=4,
            performance_sample_count=SAMPLES,
        ),
        generation=generation,
        runtime=RuntimeConfig(intra_op_threads=threads),
    )


def harness_run(
    kind: ScenarioName,
    zoo: str,
    seconds: float,
    out: Path,
    generation: GenerationConfig = GENERATION,
    threads: int = 0,
) -> Figures:
    """One harness run (quick profile); LoadGen's figures and the SUT's own window."""
    sc = scenario(kind, zoo, seconds, generation, threads)
    request = RunRequest(scenario=sc, scenario_path=None, profile="quick", hw="cpu")
    run_dir = run_one(request, new_run_dir(request, out))
    result = load_result(run_dir).generation
    if result is None or result.tokens_per_second is None:
        raise SystemExit(f"error: {run_dir}: the harness recorded no tokens/s")
    with np.load(run_dir / TOKEN_TIMES_FILE, allow_pickle=False) as times:
        span_s = float(times["end_ns"].max() - times["issue_ns"].min()) / 1e9
        queries = _query_figures(times["start_ns"], times["end_ns"])
    ttft = result.ttft_ns.p50 if result.ttft_ns else None
    tpot = result.tpot_ns.p50 if result.tpot_ns else None
    return Figures(
        tokens_per_second=result.tokens_per_second,
        ttft_ms=float("nan") if ttft is None else ttft / 1e6,
        tpot_ms=float("nan") if tpot is None else tpot / 1e6,
        span_s=span_s,
        **queries,
    )


def plain_run(model: og.Model, prompts: Prompts, seconds: float) -> Figures:
    """Whole passes over the prompts, one generation at a time, for at least ``seconds``.

    TTFT counts from making the generator to the first token read back (the harness reads
    it to answer LoadGen); the end is stamped once the output is read back (the harness reads
    it to answer). The previous generator is freed before the next start (the harness frees
    it after answering its query, before the next issue).
    """
    made, ttfts, tpots = 0, list[float](), list[float]()
    starts, ends = list[int](), list[int]()
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or len(ttfts) < prompts.count:
        index = len(ttfts) % prompts.count
        ids, budget = prompts.ids[index], prompts.budgets[index]
        starts.append(time.perf_counter_ns())
        t0 = time.perf_counter()
        params = og.GeneratorParams(model)
        total = len(ids) + budget
        params.set_search_options(max_length=total, min_length=total)
        generator = og.Generator(model, params)
        generator.append_tokens(ids)
        generator.generate_next_token()
        generator.get_next_tokens()  # the first token in hand
        first = time.perf_counter()
        n = 1
        while not generator.is_done():
            generator.generate_next_token()
            n += 1
        generator.get_sequence(0)  # the output in hand
        end = time.perf_counter()
        ends.append(time.perf_counter_ns())
        del generator
        ttfts.append(first - t0)
        tpots.append((end - first) / max(n - 1, 1))
        made += n
    elapsed = time.perf_counter() - start
    return Figures(
        tokens_per_second=made / elapsed,
        ttft_ms=statistics.median(ttfts) * 1e3,
        tpot_ms=statistics.median(tpots) * 1e3,
        **_query_figures(np.asarray(starts), np.asarray(ends)),
    )


def ratios_of(harness_offline: Figures, harness_single: Figures, other: Figures) -> list[float]:
    """tokens/s, TTFT p50 and TPOT p50, harness / other (TARGETS' order)."""
    return [
        harness_offline.tokens_per_second / other.tokens_per_second,
        harness_single.ttft_ms / other.ttft_ms,
        harness_single.tpot_ms / other.tpot_ms,
    ]


def e2e_figures(e2e: E2EFigures) -> Figures:
    """benchmark_e2e's figures as the harness's: new tokens/s, TTFT, mean step."""
    return Figures(
        tokens_per_second=e2e.generated_tokens_per_second,
        ttft_ms=e2e.ttft_ms,
        tpot_ms=e2e.token_generation_ms,
    )


def e2e_generation(prompt_file: Path, generation_length: int) -> GenerationConfig:
    """The harness's generation block for benchmark_e2e's prompt and length."""
    budget = TokenRange(min=generation_length, max=generation_length)
    return GenerationConfig(
        prompts="file", path=str(prompt_file), output_tokens=budget, hold_eos=True
    )


def floor_figures(offline: FloorFigures, single: FloorFigures) -> Figures:
    """The minimal LoadGen SUT's tokens/s (Offline) and TTFT/TPOT p50 (SingleStream)."""
    return Figures(
        tokens_per_second=offline.tokens_per_second, ttft_ms=single.ttft_ms, tpot_ms=single.tpot_ms
    )


def line(zoo: str, n: int, what: str, harness: tuple[Figures, Figures], other: Figures) -> str:
    offline, single = harness
    return (
        f"  {zoo} round {n} {what}: tokens/s harness {offline.tokens_per_second:,.1f} / "
        f"{other.tokens_per_second:,.1f}; TTFT p50 harness {single.ttft_ms:.3f} / "
        f"{other.ttft_ms:.3f} ms; TPOT p50 harness {single.tpot_ms:.3f} / {other.tpot_ms:.3f} ms"
    )


@dataclass(frozen=True)
class E2ESetup:
    prompt: str
    prompt_file: Path
    generation_length: int


def e2e_setup(model: og.Model, out: Path, prompt_length: int, generation_length: int) -> E2ESetup:
    """benchmark_e2e's prompt, and a JSONL file holding its token ids for the harness."""
    tokenizer = og.Tokenizer(model)
    prompt = e2e_prompt(model, tokenizer, prompt_length)
    ids = [int(t) for t in tokenizer.encode_batch([prompt]).as_numpy()[0]]
    prompt_file = out / "e2e-prompt.jsonl"
    prompt_file.write_text(json.dumps({"input_ids": ids, "max_new_tokens": generation_length}))
    return E2ESetup(prompt=prompt, prompt_file=prompt_file, generation_length=generation_length)


def bench(
    zoo: str, rounds: int, seconds: float, out: Path, e2e: tuple[int, int] | None, threads: int
) -> dict[str, dict[str, list[float]]]:
    """Per comparison ("plain", "e2e"), per figure, each round's harness/other ratio."""
    directory = generative_model_dir(zoo)
    vocab = int(json.loads((directory / GENAI_CONFIG).read_text())["model"]["vocab_size"])
    prompts = synthetic_prompts(GENERATION, vocab=vocab, count=SAMPLES, seed=SEED)
    config = og.Config(str(directory))
    config.overlay(session_overlay(threads))  # the harness's session options, on both sides
    model = og.Model(config)
    plain_run(model, prompts, WARMUP_S)  # warm-up, as the harness's worker warms up
    query_s = query_seconds(model, prompts)  # the minimal SUT's LoadGen settings
    setup = None if e2e is None else e2e_setup(model, out, *e2e)
    ratios: dict[str, dict[str, list[float]]] = {}
    for n in range(1, rounds + 1):
        offline = harness_run("Offline", zoo, seconds, out, threads=threads)
        plain = plain_run(model, prompts, max(offline.span_s, seconds))  # the same window
        single = harness_run("SingleStream", zoo, seconds, out, threads=threads)
        record(ratios, "plain", ratios_of(offline, single, plain))
        print(line(zoo, n, "vs plain", (offline, single), plain), flush=True)
        # (d) LoadGen's own floor: the bare loop inside a minimal LoadGen SUT
        floor = floor_figures(
            floor_run(model, prompts, "Offline", seconds, query_s),
            floor_run(model, prompts, "SingleStream", seconds, query_s),
        )
        record(ratios, "minimal-SUT", ratios_of(offline, single, floor))
        record(ratios, "minimal-SUT/plain", ratios_of(floor, floor, plain))
        print(line(zoo, n, "vs minimal LoadGen SUT", (offline, single), floor), flush=True)
        print(
            f"    Offline per query, harness / plain: generation p50 {offline.query_p50_ms:.3f} / "
            f"{plain.query_p50_ms:.3f} ms, mean {offline.query_mean_ms:.3f} / "
            f"{plain.query_mean_ms:.3f} ms; gap to the next {offline.gap_mean_ms * 1e3:.1f} / "
            f"{plain.gap_mean_ms * 1e3:.1f} us",
            flush=True,
        )
        if setup is None:
            continue
        generation = e2e_generation(setup.prompt_file, setup.generation_length)
        offline = harness_run("Offline", zoo, seconds, out, generation, threads)
        tokenizer = og.Tokenizer(model)
        theirs = run_e2e(model, tokenizer, setup.prompt, generation_length=setup.generation_length)
        single = harness_run("SingleStream", zoo, seconds, out, generation, threads)
        record(ratios, "benchmark_e2e", ratios_of(offline, single, e2e_figures(theirs)))
        print(line(zoo, n, "vs benchmark_e2e", (offline, single), e2e_figures(theirs)))
        print(
            f"    benchmark_e2e's own figures: prompt {theirs.prompt_tokens} tokens "
            f"{theirs.prompt_ms_per_token:.4f} ms/token ({theirs.prompt_tokens_per_second:,.0f} "
            f"tps), token generation {theirs.token_generation_ms:.4f} ms "
            f"({theirs.token_generation_tokens_per_second:,.1f} tps; median step "
            f"{theirs.token_generation_p50_ms:.4f} ms), first sampling "
            f"{theirs.first_sampling_ms:.4f} ms, wall clock {theirs.wall_clock_s * 1e3:.2f} ms "
            f"({theirs.wall_clock_tokens_per_second:,.1f} tps counting the prompt)",
            flush=True,
        )
    return ratios


def record(ratios: dict[str, dict[str, list[float]]], against: str, values: list[float]) -> None:
    figures = ratios.setdefault(against, {key: [] for key in TARGETS})
    for key, value in zip(TARGETS, values, strict=True):
        figures[key].append(value)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["llm-tiny", "smollm2-135m-instruct"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--e2e-prompt", type=int, default=16, help="benchmark_e2e's -l")
    parser.add_argument("--e2e-generation", type=int, default=16, help="benchmark_e2e's -g")
    parser.add_argument("--no-e2e", action="store_true", help="leave (c) out")
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="intra-op threads on both sides (runtime.intra_op_threads; 0: onnxruntime's default)",
    )
    args = parser.parse_args(argv)
    e2e = None if args.no_e2e else (args.e2e_prompt, args.e2e_generation)
    with tempfile.TemporaryDirectory(prefix="llm-bench-") as tmp:
        for zoo in args.models:
            for against, figures in bench(
                zoo, args.rounds, args.seconds, Path(tmp), e2e, args.threads
            ).items():
                for key, values in figures.items():
                    rounds = ", ".join(f"{v:.3f}" for v in values)
                    target = TARGETS[key] if against == "plain" else "none"
                    label = against if "/" in against else f"harness/{against}"
                    print(
                        f"{zoo}: {key} {label} median {statistics.median(values):.3f} "
                        f"(target {target}; rounds {rounds})"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
