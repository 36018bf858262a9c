"""The harness against a bare onnxruntime-genai loop, side by side and interleaved.

Per model and round, in turn: the harness's Offline run (LoadGen in a worker, the generative
SUT), a bare ``og.Generator`` loop over the same seeded prompts and output budgets (greedy,
end-of-text held off to the budget, one sequence at a time, as the harness's Offline runs
them), and the harness's SingleStream run. It prints:
(a) Offline tokens/s, harness / plain (target >= 0.97);
(b) TTFT and TPOT p50, harness / plain (target <= 1.03): LoadGen's SingleStream figures
    against the bare loop's per-prompt time to first token (generator made, prompt appended,
    one step) and time per output token after it.
Medians over the rounds, each round's ratio quoted. On a shared machine read the spread too.

Usage: python benchmarks/llm.py [--models llm-tiny smollm2-135m-instruct] [--rounds 3] [--seconds 4]
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

import onnxruntime_genai as og

from harness.config import (
    DataConfig,
    ModelConfig,
    QuickConfig,
    Scenario,
    ScenarioName,
    WarmupConfig,
)
from harness.datasets.prompts import Prompts, synthetic_prompts
from harness.execution.pipeline import new_run_dir, run_one
from harness.generation import GenerationConfig, TokenRange
from harness.models.llm.store import generative_model_dir
from harness.records.layout import GENAI_CONFIG
from harness.records.request import RunRequest
from harness.results.runfile import load_result

SAMPLES = 16
SEED = 0
# "short": a few tokens in and out, so a round on a 135M model stays within seconds
GENERATION = GenerationConfig(
    input_tokens=TokenRange(min=16, max=32),
    output_tokens=TokenRange(min=8, max=16),
    hold_eos=True,
)


@dataclass(frozen=True)
class Figures:
    tokens_per_second: float
    ttft_ms: float
    tpot_ms: float


def scenario(kind: ScenarioName, zoo: str, seconds: float) -> Scenario:
    return Scenario(
        name=f"llm-bench-{zoo}-{kind}",
        scenario=kind,
        model=ModelConfig(zoo=zoo),
        data=DataConfig(total_sample_count=SAMPLES, seed=SEED),
        warmup=WarmupConfig(min_queries=4, min_duration_ms=0),
        quick=QuickConfig(
            min_duration_ms=int(seconds * 1000),
            min_query_count=4,
            performance_sample_count=SAMPLES,
        ),
        generation=GENERATION,
    )


def harness_run(kind: ScenarioName, zoo: str, seconds: float, out: Path) -> Figures:
    sc = scenario(kind, zoo, seconds)
    request = RunRequest(scenario=sc, scenario_path=None, profile="quick", hw="cpu")
    run_dir = run_one(request, new_run_dir(request, out))
    generation = load_result(run_dir).generation
    assert generation is not None and generation.tokens_per_second is not None
    ttft = generation.ttft_ns.p50 if generation.ttft_ns else None
    tpot = generation.tpot_ns.p50 if generation.tpot_ns else None
    return Figures(
        tokens_per_second=generation.tokens_per_second,
        ttft_ms=float("nan") if ttft is None else ttft / 1e6,
        tpot_ms=float("nan") if tpot is None else tpot / 1e6,
    )


def plain_run(model: og.Model, prompts: Prompts, seconds: float) -> Figures:
    """Whole passes over the prompts, one generation at a time, for at least ``seconds``."""
    made, ttfts, tpots = 0, list[float](), list[float]()
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or len(ttfts) < prompts.count:
        index = len(ttfts) % prompts.count
        ids, budget = prompts.ids[index], prompts.budgets[index]
        t0 = time.perf_counter()
        params = og.GeneratorParams(model)
        total = len(ids) + budget
        params.set_search_options(max_length=total, min_length=total)
        generator = og.Generator(model, params)
        generator.append_tokens(ids)
        generator.generate_next_token()
        first = time.perf_counter()
        n = 1
        while not generator.is_done():
            generator.generate_next_token()
            n += 1
        end = time.perf_counter()
        ttfts.append(first - t0)
        tpots.append((end - first) / max(n - 1, 1))
        made += n
    elapsed = time.perf_counter() - start
    return Figures(
        tokens_per_second=made / elapsed,
        ttft_ms=statistics.median(ttfts) * 1e3,
        tpot_ms=statistics.median(tpots) * 1e3,
    )


def bench(zoo: str, rounds: int, seconds: float, out: Path) -> dict[str, list[float]]:
    directory = generative_model_dir(zoo)
    vocab = int(json.loads((directory / GENAI_CONFIG).read_text())["model"]["vocab_size"])
    prompts = synthetic_prompts(GENERATION, vocab=vocab, count=SAMPLES, seed=SEED)
    model = og.Model(str(directory))
    plain_run(model, prompts, 0.5)  # warm-up, as the harness's worker warms up
    ratios: dict[str, list[float]] = {"tokens/s": [], "TTFT p50": [], "TPOT p50": []}
    for n in range(1, rounds + 1):
        offline = harness_run("Offline", zoo, seconds, out)
        plain = plain_run(model, prompts, seconds)
        single = harness_run("SingleStream", zoo, seconds, out)
        ratios["tokens/s"].append(offline.tokens_per_second / plain.tokens_per_second)
        ratios["TTFT p50"].append(single.ttft_ms / plain.ttft_ms)
        ratios["TPOT p50"].append(single.tpot_ms / plain.tpot_ms)
        print(
            f"  {zoo} round {n}: tokens/s harness {offline.tokens_per_second:,.1f} / plain "
            f"{plain.tokens_per_second:,.1f}; TTFT p50 harness {single.ttft_ms:.3f} / plain "
            f"{plain.ttft_ms:.3f} ms; TPOT p50 harness {single.tpot_ms:.3f} / plain "
            f"{plain.tpot_ms:.3f} ms",
            flush=True,
        )
    return ratios


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["llm-tiny", "smollm2-135m-instruct"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="llm-bench-") as tmp:
        for zoo in args.models:
            ratios = bench(zoo, args.rounds, args.seconds, Path(tmp))
            targets = {"tokens/s": ">= 0.97", "TTFT p50": "<= 1.03", "TPOT p50": "<= 1.03"}
            for key, values in ratios.items():
                rounds = ", ".join(f"{v:.3f}" for v in values)
                print(
                    f"{zoo}: {key} harness/plain median {statistics.median(values):.3f} "
                    f"(target {targets[key]}; rounds {rounds})"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
