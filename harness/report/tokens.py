"""A generative run's token figures as text: tokens/s, TTFT, TPOT, limits, output lengths."""

from __future__ import annotations

from harness.analysis.values import value_of
from harness.records.generation import Concurrency, TokenEarlyStopping, TokenPercentiles
from harness.records.group import Group
from harness.records.metrics import GENERATIVE
from harness.records.result import RunResult
from harness.report.blocks import Block, Heading, Para, Table


def _ms(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 1e6:.3f} ms"


def _percentiles(
    name: str, values: TokenPercentiles | None, early: TokenEarlyStopping | None = None
) -> str:
    if values is None:
        return f"{name} n/a"
    text = f"{name} p50 {_ms(values.p50)} p90 {_ms(values.p90)} p99 {_ms(values.p99)}"
    if early is not None and (early.p90_ns is not None or early.p99_ns is not None):
        text += (
            f" (LoadGen early-stopping estimates p90 {_ms(early.p90_ns)} p99 {_ms(early.p99_ns)})"
        )
    elif early is not None:
        text += f" (LoadGen early stopping: {early.text.lstrip('* ')})"
    return text


def token_rows(result: RunResult) -> list[tuple[str, str]]:
    """The summary's rows for a generative run ("tokens", "prompts"); none for other runs."""
    gen = result.generation
    if gen is None:
        return []
    rate = "n/a" if gen.tokens_per_second is None else f"{gen.tokens_per_second:,.1f} tokens/s"
    parts = [rate]
    if result.scenario != "Offline":
        parts += [
            _percentiles("TTFT", gen.ttft_ns, gen.ttft_early_stopping),
            _percentiles("TPOT", gen.tpot_ns, gen.tpot_early_stopping),
        ]
    if gen.ttft_limit_ns is not None and gen.tpot_limit_ns is not None:
        parts.append(
            f"limits p99 TTFT {_ms(gen.ttft_limit_ns)} / TPOT {_ms(gen.tpot_limit_ns)} "
            f"({gen.limits_source})"
        )
    out = gen.output_tokens
    if out is not None:
        parts.append(
            f"output {out.mean:,.1f} tokens/query ({out.min}-{out.max}, {out.queries} queries)"
        )
    prompts = f"{gen.prompts}; {gen.engine}, {gen.max_active} sequence(s) at once"
    rows = [("tokens", "; ".join(parts)), ("prompts", prompts)]
    if gen.concurrency is not None:
        rows.append(("batch", concurrency_text(gen.concurrency)))
    return rows


def concurrency_text(batch: Concurrency) -> str:
    """Server's continuous batch: rows per decode step, and the queries that joined mid-run."""
    shown = ", ".join(f"{rows}:{count}" for rows, count in enumerate(batch.histogram) if count)
    return (
        f"{batch.scheduler}: rows per decode step mean {batch.mean:.2f}, p50 {batch.p50}, "
        f"p90 {batch.p90}, p99 {batch.p99}, max {batch.max} over {batch.steps} steps "
        f"(rows:steps {shown}); {batch.joined_running} of {batch.admitted} queries joined "
        "a running batch"
    )


def token_blocks(group: Group) -> list[Block]:
    """The report's table of a generative group's token figures (catalogue rows), per run."""
    rows = tuple(
        (label, *(row.format(value_of(r, row)) for row in GENERATIVE))
        for label, _, r in group.labelled(group.runs)
        if r.generation is not None
    )
    if not rows:
        return []
    header = ("run", *(row.title for row in GENERATIVE))
    note = (
        "LoadGen's token figures (use_token_latencies): tokens/s is its Offline \"Tokens per "
        'second" or Server\'s "Completed tokens per second"; TTFT the time to the first '
        "token, TPOT the time per output token after it; output tokens as the SUT counted."
    )
    return [Heading(3, "Tokens"), Table(header, rows), Para(note)]
