"""A plain onnxruntime-genai greedy loop over the generative zoo: build time, size, tokens/s.

For each model: the time to build it into an empty cache (generate or dequantize, write,
hash), the directory's size, then ``--repeats`` greedy generations of ``--new-tokens`` from
one fixed chat prompt (end-of-text held off by min_length, so every run makes as many tokens):
time to first token (prefill and one step) and decode tokens/s after it, medians.
No LoadGen: this is the floor the harness's generative scenarios are compared with.

Usage: python benchmarks/llm_greedy.py [--models llm-tiny smollm2-135m-instruct]
       [--new-tokens 64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime_genai as og

from harness.models.llm.store import generative_model_dir

PROMPT = (
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
    "<|im_end|>\n<|im_start|>user\nWrite one sentence about the ocean.<|im_end|>\n"
    "<|im_start|>assistant\n"
)


def one_run(model: og.Model, ids: np.ndarray, new_tokens: int) -> tuple[float, float]:
    """(time to first token in s, decode tokens/s after it) of one greedy generation."""
    params = og.GeneratorParams(model)
    total = len(ids) + new_tokens
    params.set_search_options(max_length=total, min_length=total)
    generator = og.Generator(model, params)
    start = time.perf_counter()
    generator.append_tokens(ids)
    generator.generate_next_token()
    first = time.perf_counter()
    made = 1
    while not generator.is_done():
        generator.generate_next_token()
        made += 1
    end = time.perf_counter()
    return first - start, (made - 1) / (end - first)


def measure(name: str, root: Path, new_tokens: int, repeats: int) -> None:
    """Builds ``name`` into ``root`` and prints its figures."""
    start = time.perf_counter()
    directory = generative_model_dir(name, root=root)
    build_s = time.perf_counter() - start
    size_mb = sum(p.stat().st_size for p in directory.iterdir()) / 1e6
    model = og.Model(str(directory))
    ids = np.asarray(og.Tokenizer(model).encode(PROMPT), dtype=np.int32)
    one_run(model, ids, 4)  # warm-up
    runs = [one_run(model, ids, new_tokens) for _ in range(repeats)]
    ttft_ms = statistics.median(r[0] for r in runs) * 1e3
    rate = statistics.median(r[1] for r in runs)
    print(
        f"{name}: build {build_s:.1f} s, {size_mb:.1f} MB; prompt {len(ids)} tokens, "
        f"{new_tokens} new: TTFT {ttft_ms:.1f} ms, decode {rate:.1f} tokens/s "
        f"(median of {repeats}; runs {', '.join(f'{r[1]:.1f}' for r in runs)})"
    )


def main(argv: list[str]) -> int:
    """Measures each model in a fresh cache."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["llm-tiny", "smollm2-135m-instruct"])
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="llm-greedy-") as tmp:
        for name in args.models:
            measure(name, Path(tmp), args.new_tokens, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
