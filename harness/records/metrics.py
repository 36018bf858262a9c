"""The metric catalogue: every metric's key, label, unit, scale, direction and spread rule.

One row per metric. Its key is what trials.json records and compare shows, and the dotted
path of its value in result.json and in RunResult (`harness.analysis.values` reads it there);
`published` is the path of the same quantity in published.json, where an imported MLPerf
result has it. Per scenario, SCENARIOS names MLPerf's headline metric and the others reported.
Show, report, compare, trials, sweeps, fleet and site ask here and keep no table of their own.
A new metric (a generative model's tokens/s, TTFT, TPOT) is a row, not a code path.

MLPerf's headline per scenario, as the submission checker reads it (RESULT_FIELD_NEW for
v5.0 to v6.0) and LoadGen 6.0's summary states it on its first lines:

- SingleStream: ``early_stopping_latency_ss``, LoadGen's early-stopping estimate of the p90;
- MultiStream: ``early_stopping_latency_ms``, the early-stopping estimate of the p99 per query;
- Offline: ``result_samples_per_second``;
- Server: ``result_completed_samples_per_sec``, "Completed samples per second" (before v4.1
  the scheduled rate, now one of LoadGen's "Additional Stats"), valid only in a VALID run:
  one whose latency at its bound's percentile (p99 for ResNet-50) is within the bound.

Earlier rounds judged Server and SingleStream otherwise: EARLIER, round_headline.

Key grammar: a key of ROWS, or ``telemetry.sources.<source>.<value>`` with a non-empty
<source> and <value> one of SOURCE_VALUES. Anything else is refused (ResultError).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass

from harness.errors import ResultError
from harness.records.metric import Metric as Metric
from harness.records.metric import SpreadRule as SpreadRule
from harness.records.metric import number as number
from harness.records.metric import percent as percent

SOURCE_PREFIX = "telemetry.sources."
NS_TO_MS = 1e-6
# Units of a time or a rate: a ratio of them reads "1.8x faster", others "better" or "worse".


def _latency(name: str, label: str) -> Metric:
    key = f"latency_ns.{name}"
    return Metric(
        key=key,
        label=label,
        unit="ms",
        higher_is_better=False,
        scale=NS_TO_MS,
        spec=",.3f",
        published=key,
        stored_unit="ns",
    )


def _rate(key: str, label: str, published: str | None, unit: str = "samples/s") -> Metric:
    return Metric(
        key=key, label=label, unit=unit, higher_is_better=True, spec=",.1f", published=published
    )


def _share(key: str, label: str, spread: SpreadRule = "beside") -> Metric:
    return Metric(
        key=key,
        label=label,
        unit="%",
        higher_is_better=True,
        scale=100.0,
        spec=".2f",
        spread=spread,
        stored_unit="fraction",
    )


def _tflops(key: str, label: str, spread: SpreadRule = "beside") -> Metric:
    return Metric(
        key=key, label=label, unit="TFLOP/s", higher_is_better=True, spec=".3f", spread=spread
    )


def _mib(key: str, label: str) -> Metric:
    return Metric(
        key=key,
        label=label,
        unit="MiB",
        higher_is_better=False,
        scale=1 / 2**20,
        spec=",.1f",
        spread="none",
        stored_unit="bytes",
    )


THROUGHPUT = _rate("samples_per_second", "throughput", "samples_per_second")
P50 = _latency("p50", "p50 latency")
P90 = _latency("p90", "p90 latency")
P95 = _latency("p95", "p95 latency")
P97 = _latency("p97", "p97 latency")
P99 = _latency("p99", "p99 latency")
P999 = _latency("p999", "p99.9 latency")
MEAN = _latency("mean", "mean latency")
MIN = _latency("min", "min latency")
MAX = _latency("max", "max latency")
ES_P90 = _latency("early_stopping_p90", "early-stopping p90 latency")
ES_P99 = _latency("early_stopping_p99", "early-stopping p99 latency")
# An imported Server result's samples_per_second is LoadGen's completed rate.
COMPLETED = _rate("server.completed_samples_per_second", "completed rate", "samples_per_second")
SCHEDULED = _rate(
    "server.scheduled_samples_per_second", "scheduled rate", "scheduled_samples_per_second"
)
WARMUP = dataclasses.replace(
    _rate("warmup.samples_per_second", "warm-up throughput", None), spread="none"
)
TOP1_AGREEMENT = _share(
    "accuracy.against_fp32.top1_agreement", "top-1 agreement with FP32", "trials"
)
COSINE = Metric(
    key="accuracy.against_fp32.cosine_similarity",
    label="cosine similarity with FP32",
    unit="1",
    higher_is_better=True,
    spec=".6f",
)
TOP1 = _share("accuracy.against_labels.top1", "top-1 accuracy", "trials")
ACHIEVED = _tflops("utilization.achieved_tflops", "achieved")
PEAK = _tflops("utilization.peak_tflops", "peak", "none")
OF_PEAK = _share("utilization.fraction_of_peak", "utilization of peak")
ATTAINABLE = _tflops("utilization.attainable_tflops", "attainable")
OF_ATTAINABLE = _share("utilization.fraction_of_attainable", "utilization of attainable")
# Generative models' (harness.records.generation): LoadGen's tokens/s, TTFT and TPOT.
# Their `published` paths are the same: an imported LLM result has a generation block too.
TOKENS = _rate(
    "generation.tokens_per_second",
    "token throughput",
    "generation.tokens_per_second",
    unit="tokens/s",
)


def _token(kind: str, name: str) -> Metric:
    label = f"{kind.split('_')[0].upper()} {name}"
    key = f"generation.{kind}.{name}"
    return dataclasses.replace(P99, key=key, label=label, published=key)


TTFT_P50, TTFT_P90, TTFT_P99 = (_token("ttft_ns", p) for p in ("p50", "p90", "p99"))
TPOT_P50, TPOT_P90, TPOT_P99 = (_token("tpot_ns", p) for p in ("p50", "p90", "p99"))


def _token_es(kind: str, pct: str) -> Metric:
    """LoadGen's early-stopping estimate of a token latency (SingleStream only in 6.0.17)."""
    return dataclasses.replace(
        P99,
        key=f"generation.{kind}_early_stopping.{pct}_ns",
        label=f"{kind.upper()} early-stopping {pct}",
        published=None,  # published results keep no token early-stopping estimates
    )


TTFT_ES_P90, TTFT_ES_P99 = (_token_es("ttft", p) for p in ("p90", "p99"))
TPOT_ES_P90, TPOT_ES_P99 = (_token_es("tpot", p) for p in ("p90", "p99"))
TOKEN_EARLY_STOPPING = (TTFT_ES_P90, TTFT_ES_P99, TPOT_ES_P90, TPOT_ES_P99)
OUTPUT_TOKENS = Metric(
    key="generation.output_tokens.mean",
    label="output tokens per query",
    unit="tokens",
    higher_is_better=True,
    spec=",.1f",
    spread="none",
)
GENERATIVE = (TOKENS, TTFT_P50, TTFT_P90, TTFT_P99, TPOT_P50, TPOT_P90, TPOT_P99, OUTPUT_TOKENS)

# The worker's memory over the window (result.json's memory block), stored in bytes.
PEAK_RSS = _mib("memory.peak_rss_bytes", "peak RSS")
DEVICE_MEMORY = _mib("memory.device_used_bytes", "device memory used")
MEMORY = (PEAK_RSS, DEVICE_MEMORY)  # what show, report and compare set beside the others

_LATENCIES = (P50, P90, P95, P97, P99, P999, MEAN, MIN, MAX, ES_P90, ES_P99)
_SERVER_AND_ACCURACY = (COMPLETED, SCHEDULED, WARMUP, TOP1_AGREEMENT, COSINE, TOP1)
_COMPUTE = (ACHIEVED, PEAK, OF_PEAK, ATTAINABLE, OF_ATTAINABLE)
ROWS: Mapping[str, Metric] = {
    m.key: m
    for m in (
        THROUGHPUT,
        *_LATENCIES,
        *_SERVER_AND_ACCURACY,
        *_COMPUTE,
        *GENERATIVE,
        *TOKEN_EARLY_STOPPING,
        *MEMORY,
    )
}
ACCURACY = (TOP1_AGREEMENT, COSINE)  # what compare sets beside MLPerf's metrics
UTILIZATION = (ACHIEVED, OF_PEAK, OF_ATTAINABLE)  # what compare and the report show
# A power source's values, as templates: per_source gives each source's row.
SOURCE_VALUES: Mapping[str, Metric] = {
    m.key: m
    for m in (
        Metric(key="avg_power_w", label="average power", unit="W", higher_is_better=False),
        Metric(key="energy_j", label="energy", unit="J", higher_is_better=False),
        Metric(
            key="energy_per_inference_mj",
            label="energy per inference",
            unit="mJ",
            higher_is_better=False,
        ),
        Metric(
            key="samples_per_second_per_watt",
            label="efficiency",
            unit="samples/s/W",
            higher_is_better=True,
        ),
        Metric(key="peak_temp_c", label="peak temperature", unit="°C", higher_is_better=False),
        # A generative run's, over the SUT's own count of output tokens (never LoadGen's).
        Metric(
            key="energy_per_token_mj",
            label="energy per output token",
            unit="mJ",
            higher_is_better=False,
            spec=",.3f",
        ),
        Metric(
            key="tokens_per_joule",
            label="tokens per joule",
            unit="tokens/J",
            higher_is_better=True,
            spec=",.2f",
        ),
    )
}
PER_INFERENCE = "energy_per_inference_mj"
PER_WATT = "samples_per_second_per_watt"
PER_TOKEN = "energy_per_token_mj"
TOKENS_PER_JOULE = "tokens_per_joule"
# A generative run's energy values, set beside its scenario's metrics in every scenario.
PER_TOKEN_VALUES = (PER_TOKEN, TOKENS_PER_JOULE)


@dataclass(frozen=True, kw_only=True)
class ScenarioMetrics:
    """A scenario's metrics: MLPerf's headline, its other numbers, and the harness's beside them.

    `fallback` stands in for the headline where no result of a set has it (LoadGen logged
    no early-stopping estimate: too few queries). `checked` are metrics whose spread over
    trials is checked and recorded too, beyond those shown. With `at_bound`, the first
    reported metric is the latency at the percentile of the scenario's latency bound (see
    bound_latency).
    `energy` is the power-source value that suits the scenario: energy per inference where
    a query's latency is the metric, samples/s per watt where a rate is, energy per output
    token for a generative model (tokens per joule beside it: PER_TOKEN_VALUES).
    `latencies`: whether its latencies are ones anyone sees (Offline's are completion times
    within one query).
    """

    scenario: str
    headline: Metric
    fallback: Metric | None = None
    reported: tuple[Metric, ...] = ()
    beside: tuple[Metric, ...] = ()
    checked: tuple[Metric, ...] = ()  # spread-checked over trials too, in no table
    at_bound: bool = False
    energy: str
    latencies: bool
    note: str  # the headline in a few words, for a table's note


SCENARIOS: Mapping[str, ScenarioMetrics] = {
    s.scenario: s
    for s in (
        ScenarioMetrics(
            scenario="SingleStream",
            headline=ES_P90,
            fallback=P90,
            reported=(P50, P90, P99),
            beside=(THROUGHPUT,),
            checked=(P999, ES_P99),
            energy=PER_INFERENCE,
            latencies=True,
            note="the early-stopping p90 latency, or the p90 where LoadGen logged no estimate",
        ),
        ScenarioMetrics(
            scenario="MultiStream",
            headline=ES_P99,
            fallback=P99,
            reported=(P50, P90, P99),
            checked=(P999, THROUGHPUT),
            energy=PER_INFERENCE,
            latencies=True,
            note="the early-stopping p99 latency per query",
        ),
        ScenarioMetrics(
            scenario="Offline",
            headline=THROUGHPUT,
            energy=PER_WATT,
            latencies=False,
            note="samples/s",
        ),
        ScenarioMetrics(
            scenario="Server",
            headline=COMPLETED,
            reported=(P99, SCHEDULED),
            checked=(P50, P90, P999),
            at_bound=True,
            energy=PER_WATT,
            latencies=True,
            note=(
                "the completed rate, LoadGen's Completed samples per second, valid only where "
                "the latency bound is met"
            ),
        ),
    )
}
# Per scenario, the first round judged by today's headline and the one before it (the
# checker's RESULT_FIELD_NEW: Server's scheduled rate up to v4.0; early stopping since v2.0,
# before which MultiStream's metric was samples per query, a metric of no row here).
EARLIER: Mapping[str, tuple[tuple[int, int], Metric | None]] = {
    "Server": ((4, 1), SCHEDULED),
    "SingleStream": ((2, 0), P90),
    "MultiStream": ((2, 0), None),
}
_AT_PERCENTILE: Mapping[float, Metric] = {
    50.0: P50,
    90.0: P90,
    95.0: P95,
    97.0: P97,
    99.0: P99,
    99.9: P999,
}


def scenario_metrics(scenario: str) -> ScenarioMetrics:
    """A scenario's metrics; ResultError for a name that is not one of LoadGen's four."""
    found = SCENARIOS.get(scenario)
    if found is None:
        raise ResultError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
    return found


def round_headline(scenario: str, mlperf_version: str | None) -> Metric:
    """MLPerf's headline of a scenario in a round ("4.0"); today's where the round is unknown.

    ResultError for an unknown scenario, a version not like 4.1, or MultiStream before v2.0.
    """
    today = scenario_metrics(scenario).headline
    if mlperf_version is None:
        return today
    found = re.fullmatch(r"(\d+)\.(\d+)", mlperf_version, re.ASCII)
    if found is None:
        raise ResultError(f"MLPerf round {mlperf_version!r}: not a round like 4.1")
    since, before = EARLIER.get(scenario, ((0, 0), today))
    if (int(found[1]), int(found[2])) >= since:
        return today
    if before is None:
        raise ResultError(f"MLPerf v{mlperf_version}: {scenario}'s metric then has no row here")
    return before


def bound_latency(percentile: float | None) -> Metric:
    """The latency at a bound's percentile (LoadGen's target_latency_percentile); p99 if unsaid."""
    return _AT_PERCENTILE.get(99.0 if percentile is None else percentile, P99)


def per_source(source: str, value: str) -> Metric:
    """One power source's value as a metric, e.g. its energy per inference."""
    template = SOURCE_VALUES.get(value)
    if template is None:
        raise ResultError(
            f"unknown power-source metric {value!r}; known: {', '.join(SOURCE_VALUES)}"
        )
    return dataclasses.replace(
        template,
        key=f"{SOURCE_PREFIX}{source}.{value}",
        label=f"{template.label}, {source}",
        path=("telemetry", "sources", source, value),
    )


def metric(key: str) -> Metric:
    """The catalogue's row for a key; ResultError, with the grammar, for any other."""
    found = ROWS.get(key)
    if found is not None:
        return found
    source, _, value = key.removeprefix(SOURCE_PREFIX).rpartition(".")
    if key.startswith(SOURCE_PREFIX) and source and value in SOURCE_VALUES:
        return per_source(source, value)
    raise ResultError(
        f"unknown metric {key!r}; known: {', '.join(ROWS)}, "
        f"and {SOURCE_PREFIX}<source>.<{'|'.join(SOURCE_VALUES)}>"
    )
