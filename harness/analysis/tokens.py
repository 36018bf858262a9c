"""The token checks: LoadGen's token figures against what the generative SUT generated.

LoadGen believes what the SUT reports: a wrong token count inflates tokens/s and deflates
TPOT, and a SUT that never reports a first token leaves TTFT and TPOT at 0, and neither is
an error to LoadGen. So the SUT also counts, apart from what it reports, the tokens it made
per query; these checks compare, and any finding makes the run INVALID.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from harness.records.generation import OutputTokens
from harness.records.loadgen_log import TokenFigures

# LoadGen's tokens/s is its token count over the span from the first query's issue to the last
# answer: times the SUT's own span (as it stamped them) it gives back the tokens LoadGen was
# told to 4 digits in every run measured here (its samples/s is over another span, so the
# ratio of the two rates is off by up to 7 % in a short, slow Server run: not used).
TOKENS_PER_QUERY_TOLERANCE = 0.02


def output_tokens(counts: Sequence[int]) -> OutputTokens | None:
    """The distribution of tokens per query, or None when no query completed."""
    if not counts:
        return None
    ordered = sorted(counts)
    return OutputTokens(
        queries=len(ordered),
        total=sum(ordered),
        mean=round(statistics.fmean(ordered), 3),
        min=ordered[0],
        p50=ordered[(len(ordered) - 1) // 2],
        max=ordered[-1],
    )


def told_tokens_per_query(
    figures: TokenFigures, counted: OutputTokens | None, span_s: float | None
) -> float | None:
    """The tokens per query LoadGen was told: its tokens/s times the run's span, per query."""
    rate = figures.tokens_per_second
    if rate is None or not span_s or counted is None or not counted.queries:
        return None
    return round(rate * span_s / counted.queries, 3)


def token_problems(
    *,
    scenario: str,
    figures: TokenFigures,
    counted: OutputTokens | None,
    span_s: float | None,
) -> tuple[str, ...]:
    """What is wrong with a generative run's token figures (empty when consistent).

    ``span_s``: from the first query's issue to the last answer, as the SUT stamped them.
    """
    problems: list[str] = []
    if figures.tokens_per_second is None:
        problems.append("LoadGen logged no tokens per second (use_token_latencies was off)")
    ttft = figures.ttft_ns
    if scenario != "Offline" and (ttft is None or not ttft.get("p50")):
        problems.append(
            "LoadGen measured no time to first token (TTFT p50 is 0): the SUT did not report "
            "first tokens (lg.FirstTokenComplete), so TTFT and TPOT mean nothing"
        )
    if counted is None:
        problems.append("the SUT completed no query with tokens")
        return tuple(problems)
    if counted.min < 2:
        problems.append(
            f"a query produced {counted.min} token(s): LoadGen's time per output token needs 2 "
            "or more per query"
        )
    told = told_tokens_per_query(figures, counted, span_s)
    if told is not None and abs(told - counted.mean) > TOKENS_PER_QUERY_TOLERANCE * counted.mean:
        problems.append(
            f"LoadGen was told {told:.2f} tokens per query (its tokens/s over the run) but the "
            f"SUT generated {counted.mean:.2f} on average: the token counts reported to LoadGen "
            "are wrong, and so are its tokens/s and TPOT"
        )
    return tuple(problems)
