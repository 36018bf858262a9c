"""A generative group's plotted section: TTFT and TPOT by percentile, tokens over time.

Read from each run's token_times.npz; a group with no generative run, or whose runs kept no
stamps, gets no section (the other reports are unchanged).
"""

from __future__ import annotations

from harness.records.group import Group
from harness.records.layout import TOKEN_TIMES_FILE
from harness.report import genplots
from harness.report.blocks import Block, Heading, Image, Para
from harness.telemetry.tokentimes import read_token_times

TTFT_CAPTION = (
    "Every query's time to first token (its first token minus its issue, as the SUT stamped "
    "them in token_times.npz) against its percentile, on HdrHistogram's 1/(1-q) tail axis; "
    "the dotted line is the scenario's p99 limit."
)
TPOT_CAPTION = (
    "Every query's time per output token ((end - first token) / (tokens - 1), queries of two "
    "tokens or more) against its percentile; the dotted line is the scenario's p99 limit."
)
TOKENS_CAPTION = (
    "Output tokens of the queries completed in each time bin, per second, from "
    "token_times.npz; the dashed line is each run's average over its span."
)


def token_plot_blocks(g: Group, prefix: str) -> list[Block]:
    """The group's token plots; none for a group that is not generative or kept no stamps."""
    runs = [
        genplots.TokenRun(
            label=label,
            times=read_token_times(run_dir / TOKEN_TIMES_FILE),
            ttft_limit_ns=r.generation.ttft_limit_ns,
            tpot_limit_ns=r.generation.tpot_limit_ns,
        )
        for label, run_dir, r in g.labelled(g.runs)
        if r.generation is not None and (run_dir / TOKEN_TIMES_FILE).is_file()
    ]
    if not runs:
        return []
    blocks: list[Block] = [Heading(3, "Token latencies and tokens over time")]
    if g.results[0].scenario != "Offline":  # Offline issues every query at once: no TTFT
        blocks += [
            Image(
                f"{prefix}-ttft.png", genplots.ttft_plot(runs), "TTFT by percentile", TTFT_CAPTION
            ),
            Image(
                f"{prefix}-tpot.png", genplots.tpot_plot(runs), "TPOT by percentile", TPOT_CAPTION
            ),
        ]
    else:
        blocks.append(Para("Offline issues every query at once: TTFT and TPOT are not drawn."))
    tokens = genplots.tokens_plot(runs)
    return [
        *blocks,
        Image(f"{prefix}-tokens-over-time.png", tokens, "tokens over time", TOKENS_CAPTION),
    ]
