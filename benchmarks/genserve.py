"""What continuous batching buys a generative Server: capacity against one-at-a-time and queueing.

Each round, interleaved, on the same model, prompts and limits:
(a) the per-step cost of a genai batch of 1, 2, 4, 8 sequences and the prefill cost (what
    batching can buy here: a step of b rows against b steps of one);
(b) the capacity search (`harness run`, no target_qps: harness.analysis.capsearch on the
    token latencies, short runs, then confirming runs) with generation.server_batching
    "interleave" (one genai sequence per query, a token each in turn: no batching gain) and
    "continuous" (harness.loadgen.genbatcher: rows join the running batch between decode steps);
(c) the one-at-a-time queueing ceiling (harness.analysis.queueing, M/D/1) for the measured
    prefill and per-token costs: a query costs D = prefill + (mean tokens - 1) x step, its TTFT
    is its wait + prefill, so TTFT p99 <= L holds while wait + D <= L + D - prefill.

It prints, per scheduler, the confirmed peak rate, completed tokens/s, p99 TTFT and TPOT at the
peak and the concurrency at the peak, then the ratios continuous / interleave and continuous /
ceiling. A peak counts only where LoadGen said VALID.

Usage: python benchmarks/genserve.py [--model llm-tiny] [--rounds 1] [--max-active 8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from harness.analysis.queueing import ceiling_qps
from harness.cli import main as harness_main
from harness.models.llm.variants import generative_variant
from harness.records.capacity import RateTried
from harness.records.layout import GENAI_CONFIG, RESULT_FILE
from harness.results.capacity import capacity_of
from harness.results.runfile import load_result
from harness.runtime.genai import GenaiModel

SCENARIO = """
name: {model}-genserve-{batching}
scenario: Server
model: {{zoo: {model}}}
trials: 1
generation:
  input_tokens: {{min: 16, max: 64}}
  output_tokens: {{min: 8, max: 32}}
  hold_eos: true
  limits: {{ttft_ms: {ttft}, tpot_ms: {tpot}}}
  max_active: {max_active}
  server_batching: {batching}
data: {{total_sample_count: 64}}
warmup: {{min_queries: 8, min_duration_ms: 500}}
quick: {{min_duration_ms: 3000, min_query_count: 200, performance_sample_count: 64}}
"""
PROMPT_TOKENS, NEW_TOKENS = 40, 20  # the scenario's mean prompt and output lengths


def step_costs_ms(model: GenaiModel, vocab: int, batch: int) -> tuple[float, float]:
    """(prefill, median decode step) in ms of a genai batch of ``batch`` greedy sequences."""
    rng = np.random.default_rng(batch)
    ids = rng.integers(3, vocab - 1, size=(batch, PROMPT_TOKENS)).astype(np.int32)
    generator = model.generator(PROMPT_TOKENS + NEW_TOKENS, PROMPT_TOKENS + NEW_TOKENS, batch)
    started = time.perf_counter()
    generator.append_tokens(ids)
    generator.generate_next_token()
    prefill = time.perf_counter() - started
    steps = []
    for _ in range(NEW_TOKENS - 1):
        began = time.perf_counter()
        generator.generate_next_token()
        generator.get_next_tokens()
        steps.append(time.perf_counter() - began)
    return prefill * 1e3, statistics.median(steps) * 1e3


def _median_costs(
    model: GenaiModel, vocab: int, batch: int, repeats: int = 5
) -> tuple[float, float]:
    runs = [step_costs_ms(model, vocab, batch) for _ in range(5)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def capacity(tmp: Path, model: str, batching: str, args: argparse.Namespace) -> RateTried | None:
    """The confirmed VALID peak of one capacity search (None when no run was VALID)."""
    text = SCENARIO.format(
        model=model, batching=batching, ttft=args.ttft_ms, tpot=args.tpot_ms,
        max_active=args.max_active,
    )  # fmt: skip
    path = tmp / f"{batching}.yaml"
    path.write_text(text)
    out = tmp / f"runs-{batching}"
    harness_main(["run", str(path), "--out", str(out)])
    runs = [p.parent for p in out.rglob(RESULT_FILE) if p.parent.parent == out]
    found = capacity_of(runs[0]) if runs else None
    if found is None:
        return None
    if found.peak is not None:
        result = load_result(runs[0] / RESULT_FILE)
        batch = None if result.generation is None else result.generation.concurrency
        if batch is not None:
            print(
                f"    {batching}: rows per step at the final run: mean {batch.mean:.2f}, "
                f"p50 {batch.p50}, p99 {batch.p99}, histogram {list(batch.histogram)}"
            )
    return found.peak


def _row(name: str, peak: RateTried | None) -> str:
    if peak is None:
        return f"  {name:<11} no confirmed VALID peak"
    ttft = "n/a" if peak.ttft_p99_ns is None else f"{peak.ttft_p99_ns / 1e6:.1f} ms"
    tpot = "n/a" if peak.tpot_p99_ns is None else f"{peak.tpot_p99_ns / 1e6:.2f} ms"
    tokens = peak.tokens_per_second or 0.0
    return (
        f"  {name:<11} peak {peak.target_qps:8.2f} QPS  {tokens:9.1f} tokens/s  "
        f"TTFT p99 {ttft}  TPOT p99 {tpot}"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="llm-tiny")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--max-active", type=int, default=8)
    parser.add_argument("--ttft-ms", type=float, default=100)
    parser.add_argument("--tpot-ms", type=float, default=20)
    args = parser.parse_args(argv)
    directory = generative_variant(args.model, "fp32").directory
    genai = GenaiModel(directory)
    config = json.loads((directory / GENAI_CONFIG).read_text())
    vocab = int(config["model"]["vocab_size"])
    for round_no in range(1, args.rounds + 1):
        print(f"round {round_no}: {args.model}, max_active {args.max_active}")
        step_costs_ms(genai, vocab, 1)  # warm: the first generator pays for allocations
        costs = {b: _median_costs(genai, vocab, b) for b in (1, 2, 4, 8)}
        prefill, step = costs[1]
        for b, (pre, cost) in costs.items():
            print(
                f"  genai batch {b}: prefill {pre:.2f} ms, step {cost:.3f} ms "
                f"({cost / b:.3f} ms per row; batching gain {b * step / cost:.2f}x)"
            )
        query_ms = prefill + (NEW_TOKENS - 1) * step
        ceiling = ceiling_qps(query_ms, args.ttft_ms + query_ms - prefill)
        print(f"  one-at-a-time ceiling: {ceiling:.2f} QPS (query {query_ms:.2f} ms, M/D/1)")
        with tempfile.TemporaryDirectory(prefix="genserve-") as tmp:
            peaks = {
                b: capacity(Path(tmp), args.model, b, args) for b in ("interleave", "continuous")
            }
        for name, peak in peaks.items():
            print(_row(name, peak))
        inter, cont = peaks["interleave"], peaks["continuous"]
        if cont is not None and inter is not None:
            print(f"  continuous / interleave: {cont.target_qps / inter.target_qps:.2f}x rate")
        if cont is not None and ceiling > 0:
            print(f"  continuous / ceiling:    {cont.target_qps / ceiling:.2f}x rate")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
