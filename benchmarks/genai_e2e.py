"""onnxruntime-genai's own end-to-end benchmark's measurement, reimplemented for genai 0.18.

What microsoft/onnxruntime-genai's ``benchmark/python/benchmark_e2e.py`` measures, written
here from reading it (not copied), for ``benchmarks/llm.py`` to set the harness beside:

- the prompt: the model itself generates ``prompt_length`` tokens after "a" (search options
  min_length = max_length = prompt_length), the text is decoded and tokenized again, and the
  same prompt is used for every row of the batch and every repetition;
- warm-up: ``warmup`` whole generations (5 by default) with the benchmark's own options;
- per repetition (10 by default): tokenization of the prompt text (timed), a new generator
  (untimed), prompt processing (timed), the first token's sampling (timed apart), then
  ``generation_length - 1`` more tokens, each timed; the wall clock spans the repetition;
- sampling: top-k 50 and temperature 1 by default; ``top_k=1`` is greedy, as the harness;
  max_length = min_length = prompt + generation length, so end-of-text never ends a row early;
- the figures are means over repetitions (over steps for token generation): prompt
  processing latency per prompt token and its throughput (batch x 1000 / that), token
  generation latency and throughput (batch / latency), sampling latency, wall-clock time and
  its throughput: batch x **max_length** / wall clock, which counts the prompt's tokens too.

genai 0.18 has no ``compute_logits``: ``append_tokens`` runs the prompt through the model
(the script's timed ``compute_logits`` on the prompt), the first ``generate_next_token`` only
samples from those logits (the script's first sampling), and each later one runs the model on
the last token and samples, so its "token generation" step here includes its sampling, which
the script timed apart. Memory monitoring, CSV output and graph capture are left out.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np
import onnxruntime_genai as og


@dataclass(frozen=True)
class E2EFigures:
    """benchmark_e2e's figures for one (batch, prompt length, generation length)."""

    batch_size: int
    prompt_tokens: int  # the prompt's length as tokenized for the timed runs
    generation_length: int
    max_length: int
    tokenization_ms: float  # mean per repetition
    prompt_ms: float  # mean prompt processing per repetition (the whole prompt)
    first_sampling_ms: float  # mean sampling of the first token
    token_generation_ms: float  # mean per step after the first token (model + sampling)
    token_generation_steps: int  # the steps that mean is over (repetitions x (length - 1))
    token_generation_p50_ms: float  # not the script's: their median, beside its mean
    sampling_ms: float  # mean over every timed sampling (here: the first token's)
    wall_clock_s: float  # mean per repetition

    @property
    def prompt_ms_per_token(self) -> float:
        """The script's "prompt processing latency (per token)"."""
        return self.prompt_ms / self.prompt_tokens

    @property
    def prompt_tokens_per_second(self) -> float:
        """The script's prompt processing throughput."""
        return self.batch_size * 1000 / self.prompt_ms_per_token

    @property
    def token_generation_tokens_per_second(self) -> float:
        """The script's token generation throughput (batch / mean step)."""
        return self.batch_size * 1000 / self.token_generation_ms

    @property
    def wall_clock_tokens_per_second(self) -> float:
        """The script's wall-clock throughput: batch x max_length (prompt included) / time."""
        return self.batch_size * self.max_length / self.wall_clock_s

    @property
    def generated_tokens_per_second(self) -> float:
        """New tokens only per wall-clock second (what LoadGen's tokens/s counts)."""
        return self.batch_size * self.generation_length / self.wall_clock_s

    @property
    def ttft_ms(self) -> float:
        """Time to the first token as the script's parts add up: prompt plus first sampling."""
        return self.prompt_ms + self.first_sampling_ms


def e2e_prompt(model: og.Model, tokenizer: og.Tokenizer, prompt_length: int) -> str:
    """The script's prompt: the model's own continuation of "a", ``prompt_length`` tokens."""
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=prompt_length, min_length=prompt_length)
    generator = og.Generator(model, params)
    generator.append_tokens(np.asarray(tokenizer.encode("a"), dtype=np.int32))
    while not generator.is_done():
        generator.generate_next_token()
    return str(tokenizer.decode(generator.get_sequence(0)))


def _generator(model: og.Model, max_length: int, top_k: int, batch_size: int) -> og.GeneratorParams:
    params = og.GeneratorParams(model)
    params.set_search_options(
        do_sample=top_k > 1,
        top_k=top_k,
        top_p=1.0,
        temperature=1.0,
        max_length=max_length,
        min_length=max_length,
        batch_size=batch_size,
    )
    return params


def run_e2e(
    model: og.Model,
    tokenizer: og.Tokenizer,
    prompt: str,
    *,
    generation_length: int,
    batch_size: int = 1,
    repetitions: int = 10,
    warmup: int = 5,
    top_k: int = 1,
) -> E2EFigures:
    """The script's run_benchmark on ``prompt`` (its timing, adapted to genai 0.18's API)."""
    prompts = [prompt] * batch_size
    tokens = tokenizer.encode_batch(prompts)
    prompt_tokens = int(tokens.shape()[-1])  # an og.Tensor [batch, length]
    max_length = prompt_tokens + generation_length
    for _ in range(warmup):  # whole generations with the benchmark's options
        generator = og.Generator(model, _generator(model, max_length, top_k, batch_size))
        generator.append_tokens(tokens)
        while not generator.is_done():
            generator.generate_next_token()
        del generator
    tokenize: list[float] = []
    prompt_s: list[float] = []
    first_s: list[float] = []
    steps: list[float] = []
    walls: list[float] = []
    for _ in range(repetitions):
        wall_start = time.time()  # the script's wall clock is time.time(), the parts perf_counter
        t0 = time.perf_counter()
        tokens = tokenizer.encode_batch(prompts)
        tokenize.append(time.perf_counter() - t0)
        generator = og.Generator(model, _generator(model, max_length, top_k, batch_size))
        t0 = time.perf_counter()
        generator.append_tokens(tokens)  # prompt processing
        prompt_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        generator.generate_next_token()  # samples the first token from the prompt's logits
        first_s.append(time.perf_counter() - t0)
        made = 1
        while not generator.is_done() and made < generation_length:
            t0 = time.perf_counter()
            generator.generate_next_token()
            steps.append(time.perf_counter() - t0)
            made += 1
        walls.append(time.time() - wall_start)
        del generator
    return E2EFigures(
        batch_size=batch_size,
        prompt_tokens=prompt_tokens,
        generation_length=generation_length,
        max_length=max_length,
        tokenization_ms=statistics.fmean(tokenize) * 1e3,
        prompt_ms=statistics.fmean(prompt_s) * 1e3,
        first_sampling_ms=statistics.fmean(first_s) * 1e3,
        token_generation_ms=statistics.fmean(steps) * 1e3,
        token_generation_steps=len(steps),
        token_generation_p50_ms=statistics.median(steps) * 1e3,
        sampling_ms=statistics.fmean(first_s) * 1e3,
        wall_clock_s=statistics.fmean(walls),
    )
