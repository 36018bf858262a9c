"""A generative model's scenario metrics: the catalogue's rows as MLPerf judges its LLMs.

Beside harness.records.metrics (the rows, and every other model's scenario metrics): Offline
and Server are judged by tokens/s ("Tokens per second", "Completed tokens per second"), with
p99 TTFT and TPOT beside Server's; SingleStream (llama3.1-8b-edge) by the p90 end-to-end
latency, with TTFT and TPOT. A set of results is judged so when every one has a generation block.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from harness.errors import ResultError
from harness.records.metrics import (
    COMPLETED,
    OUTPUT_TOKENS,
    P50,
    P90,
    P99,
    PER_TOKEN,
    SCENARIOS,
    TOKENS,
    TPOT_ES_P90,
    TPOT_ES_P99,
    TPOT_P50,
    TPOT_P99,
    TTFT_ES_P90,
    TTFT_ES_P99,
    TTFT_P50,
    TTFT_P99,
    ScenarioMetrics,
)

_TOKEN_LATENCIES = (TTFT_P50, TTFT_P99, TPOT_P50, TPOT_P99)
GENERATIVE_SCENARIOS: Mapping[str, ScenarioMetrics] = {
    # LoadGen 6.0.17 states token early-stopping estimates in SingleStream only (Server: a
    # verdict, the plain p99 being what MLPerf holds to the limit): shown beside the plain ones
    "SingleStream": dataclasses.replace(
        SCENARIOS["SingleStream"],
        reported=(P50, P90, *_TOKEN_LATENCIES, TTFT_ES_P90, TTFT_ES_P99, TPOT_ES_P90, TPOT_ES_P99),
        beside=(TOKENS,),
        energy=PER_TOKEN,
    ),
    "Offline": dataclasses.replace(
        SCENARIOS["Offline"],
        headline=TOKENS,
        beside=(OUTPUT_TOKENS,),
        energy=PER_TOKEN,
        note="tokens/s",
    ),
    "Server": dataclasses.replace(
        SCENARIOS["Server"],
        headline=TOKENS,
        reported=(TTFT_P99, TPOT_P99, COMPLETED),
        checked=(TTFT_P50, TPOT_P50, P99),
        at_bound=False,
        energy=PER_TOKEN,
        note="completed tokens/s, valid only where the p99 TTFT and TPOT limits are met",
    ),
}


def generative_metrics(scenario: str) -> ScenarioMetrics:
    """A generative model's metrics in a scenario; ResultError for MultiStream or another name."""
    found = GENERATIVE_SCENARIOS.get(scenario)
    if found is None:
        known = ", ".join(GENERATIVE_SCENARIOS)
        raise ResultError(f"no generative metrics for scenario {scenario!r}; known: {known}")
    return found
