"""A generative run's record: tokens/s, TTFT and TPOT from LoadGen, output lengths counted."""

from __future__ import annotations

from dataclasses import dataclass

# token_times.npz (harness.execution.genrunner writes it): per completed query, issue_ns,
# first_ns, end_ns (monotonic ns, as the SUT stamped them) and tokens (as it counted them);
# start_ns (generation began: the queueing delay's end) is absent from older files.
TOKEN_TIMES_FORMAT = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenPercentiles:
    """Percentiles of a token latency in ns, as LoadGen's detail log states them."""

    p50: int | None
    p90: int | None
    p99: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenEarlyStopping:
    """LoadGen's early-stopping result for a token latency, as it wrote it, and its estimates.

    ``text``: ``early_stopping_ttft_result`` / ``_tpot_result`` (whitespace folded).
    ``p90_ns`` / ``p99_ns``: the estimates it states. LoadGen 6.0.17 states them in
    SingleStream only; in Server it writes a verdict (" * Run successful.", or how many more
    queries a run needs), and the p99 MLPerf holds to the limit is the plain one.
    """

    text: str
    p90_ns: int | None
    p99_ns: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputTokens:
    """Tokens generated per completed query, as the SUT counted them (not as it reported)."""

    queries: int
    total: int
    mean: float
    min: int
    p50: int
    max: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Concurrency:
    """Server's continuous batch over the measured run: how many rows each decode step ran.

    ``histogram[b]`` counts the decode steps that ran b rows (b = 0 .. max_active); the
    percentiles are over steps (nearest rank). ``admitted``: queries that joined the batch;
    ``joined_running``: those admitted while other rows were mid-generation (iteration-level
    admission; a batch-at-a-time server has none).
    """

    scheduler: str
    steps: int
    histogram: tuple[int, ...]
    mean: float
    p50: int
    p90: int
    p99: int
    max: int
    admitted: int
    joined_running: int


@dataclass(frozen=True, slots=True, kw_only=True)
class GenerationRecord:
    """A generative model's run: LoadGen's token figures and the harness's checks of them.

    ``tokens_per_second`` is LoadGen's: Offline "Tokens per second", the others' "Completed
    tokens per second". ``ttft_ns`` and ``tpot_ns`` are LoadGen's time to first token and
    time per output token (None in Offline, where LoadGen measures neither).
    ``output_tokens_per_query`` is what LoadGen was told (its tokens/s times the span from the
    first query's issue to the last answer, per query);
    ``output_tokens`` what the SUT generated. ``ttft_limit_ns`` / ``tpot_limit_ns`` are
    Server's p99 limits and ``limits_source`` where they came from (mlperf.conf or the
    scenario, which then says they are not MLPerf's). ``token_problems``: the token checks'
    findings (harness.analysis.tokens); any one makes the run INVALID.
    ``ttft_early_stopping`` / ``tpot_early_stopping``: LoadGen's early-stopping result for
    each (None where it wrote none: Offline, and results before schema 12).
    ``concurrency``: Server's continuous batch, rows per decode step (None: another
    scenario or scheduler).
    """

    engine: str
    prompts: str
    max_active: int
    tokens_per_second: float | None
    ttft_ns: TokenPercentiles | None
    tpot_ns: TokenPercentiles | None
    output_tokens_per_query: float | None
    output_tokens: OutputTokens | None
    ttft_limit_ns: int | None
    tpot_limit_ns: int | None
    limits_source: str | None
    token_problems: tuple[str, ...]
    ttft_early_stopping: TokenEarlyStopping | None = None
    tpot_early_stopping: TokenEarlyStopping | None = None
    concurrency: Concurrency | None = None
