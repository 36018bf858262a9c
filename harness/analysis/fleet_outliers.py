"""Fleet analysis: nodes whose results are far from their peers' on one configuration."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, TypeGuard

from harness.analysis.fleet import NodeRun, natural_key
from harness.errors import ConfigError, ResultError

MIN_NODES: Final = 3


@dataclass(frozen=True, kw_only=True)
class Outlier:
    """A node whose result is far from its peers' on the same configuration and hardware."""

    config: str
    hw: str
    node: str
    task: int
    metric: str
    value: float
    peers_median: float  # the median of every node's value on this configuration
    deviation: float  # signed relative deviation from that median (0.25 = 25 % above)
    slower: bool  # worse than peers, given higher_is_better
    threshold: float  # the relative deviation that flagged it
    peers: int


@dataclass(frozen=True, kw_only=True)
class _NodeValue:
    node: str
    task: int  # its lowest task index for this configuration
    value: float  # the median of its tasks' values


@dataclass(frozen=True, kw_only=True)
class _Comparison:
    """The nodes with a value for one (config, hw) and the threshold that applies to them."""

    config: str
    hw: str
    metric: str
    higher_is_better: bool
    nodes: tuple[_NodeValue, ...]
    threshold: float


def outliers(
    runs: Sequence[NodeRun], *, min_deviation: float = 0.10, spread_factor: float = 3.0
) -> list[Outlier]:
    """Nodes far from the median of the other nodes on the same (config, hw).

    Needs values from at least MIN_NODES distinct nodes. Each node's value is compared with
    the median of every node's value (its own included: with three nodes, a leave-one-out
    median is pulled halfway to the far node and makes the two normal ones read 11 % off
    too), and flagged when its relative
    deviation exceeds max(min_deviation, spread_factor x the group's pooled trial CoV), the
    root mean square of the runs' spread_covs (0 when none has one). A node with several tasks
    of one configuration counts once, with the median of their values, and reports its lowest
    task index. Runs without a (finite) value are skipped. Flags faster nodes as well as
    slower ones; ordered by config, hw, then largest deviation first. Raises ResultError when
    runs of one (config, hw) disagree on the metric or its direction.
    """
    found = []
    for comparison in _comparisons(runs, min_deviation, spread_factor):
        if len(comparison.nodes) >= MIN_NODES:
            found.extend(_flagged(comparison))
    return found


def too_few_peers(
    runs: Sequence[NodeRun], *, min_deviation: float = 0.10, spread_factor: float = 3.0
) -> list[str]:
    """Notes for configurations run on exactly 2 nodes whose values differ beyond the threshold.

    Two nodes cannot say which one is off, so `outliers` flags neither; the note gives the
    slower node's deviation from the faster one, e.g. "tiny fp32 SingleStream batch 1 / cpu:
    node2 is 23.4 % slower than node1 (p90 latency (ms) 41.2 vs 33.4); with only 2 nodes
    neither can be called the odd one: run it on a third".
    """
    notes = []
    for comparison in _comparisons(runs, min_deviation, spread_factor):
        if len(comparison.nodes) == 2:
            notes.extend(_pair_note(comparison))
    return notes


def _comparisons(
    runs: Sequence[NodeRun], min_deviation: float, spread_factor: float
) -> list[_Comparison]:
    _check_limits(min_deviation, spread_factor)
    grouped: dict[tuple[str, str], list[NodeRun]] = {}
    for run in runs:
        if _finite(run.value):
            grouped.setdefault((run.config, run.hw), []).append(run)
    return [
        _comparison(config, hw, grouped[(config, hw)], min_deviation, spread_factor)
        for config, hw in sorted(grouped)
    ]


def _finite(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value)


def _check_limits(min_deviation: float, spread_factor: float) -> None:
    if not min_deviation >= 0:
        raise ConfigError(
            f"fleet outliers: min_deviation {min_deviation} is not a relative deviation >= 0; "
            "give e.g. 0.10 for 10 %"
        )
    if not spread_factor >= 0:
        raise ConfigError(
            f"fleet outliers: spread_factor {spread_factor} is not >= 0; give e.g. 3.0"
        )


def _comparison(
    config: str, hw: str, runs: list[NodeRun], min_deviation: float, spread_factor: float
) -> _Comparison:
    kinds = {(run.metric, run.higher_is_better) for run in runs}
    if len(kinds) > 1:
        shown = ", ".join(
            f"{m!r} ({'higher' if h else 'lower'} is better)" for m, h in sorted(kinds)
        )
        raise ResultError(
            f"fleet results for {config} / {hw} disagree on the metric ({shown}); "
            "merge tasks of one configuration with one headline metric"
        )
    (metric, higher_is_better) = kinds.pop()
    covs = [run.spread_cov for run in runs if _finite(run.spread_cov)]
    pooled_cov = math.sqrt(statistics.fmean([c * c for c in covs])) if covs else 0.0
    return _Comparison(
        config=config,
        hw=hw,
        metric=metric,
        higher_is_better=higher_is_better,
        nodes=_node_values(runs),
        threshold=max(min_deviation, spread_factor * pooled_cov),
    )


def _node_values(runs: list[NodeRun]) -> tuple[_NodeValue, ...]:
    by_node: dict[str, list[NodeRun]] = {}
    for run in runs:
        by_node.setdefault(run.node, []).append(run)
    return tuple(
        _NodeValue(
            node=node,
            task=min(run.task for run in by_node[node]),
            value=statistics.median(run.value for run in by_node[node] if run.value is not None),
        )
        for node in sorted(by_node, key=natural_key)
    )


def _flagged(comparison: _Comparison) -> list[Outlier]:
    found = []
    fleet_median = statistics.median(node.value for node in comparison.nodes)
    if fleet_median == 0:
        return []  # no relative deviation from zero; latencies and rates are positive
    peers = len(comparison.nodes) - 1
    for candidate in comparison.nodes:
        deviation = (candidate.value - fleet_median) / abs(fleet_median)
        if abs(deviation) > comparison.threshold:
            found.append(_outlier(comparison, candidate, fleet_median, deviation, peers))
    return sorted(found, key=lambda o: (-abs(o.deviation), natural_key(o.node)))


def _outlier(
    comparison: _Comparison,
    candidate: _NodeValue,
    peers_median: float,
    deviation: float,
    peers: int,
) -> Outlier:
    return Outlier(
        config=comparison.config,
        hw=comparison.hw,
        node=candidate.node,
        task=candidate.task,
        metric=comparison.metric,
        value=candidate.value,
        peers_median=peers_median,
        deviation=deviation,
        slower=deviation < 0 if comparison.higher_is_better else deviation > 0,
        threshold=comparison.threshold,
        peers=peers,
    )


def _pair_note(comparison: _Comparison) -> list[str]:
    first, second = comparison.nodes
    second_better = (second.value > first.value) == comparison.higher_is_better
    slow, fast = (first, second) if second_better else (second, first)
    if fast.value == 0:
        return []
    deviation = abs(slow.value - fast.value) / abs(fast.value)
    if deviation <= comparison.threshold:
        return []
    return [
        f"{comparison.config} / {comparison.hw}: {slow.node} is {_percent(deviation)} slower "
        f"than {fast.node} ({comparison.metric} {_number(slow.value)} vs "
        f"{_number(fast.value)}); with only 2 nodes neither can be called the odd one: "
        "run it on a third"
    ]


def describe_outlier(o: Outlier) -> str:
    """One line: how far the node is from its peers' median, which way, on what.

    e.g. "node3 is 23.4 % slower than its 4 peers on tiny fp32 SingleStream batch 1 / cpu
    (p90 latency (ms) 41.2 vs median 33.4)".
    """
    direction = "slower" if o.slower else "faster"
    return (
        f"{o.node} is {_percent(o.deviation)} {direction} than its {o.peers} peers on "
        f"{o.config} / {o.hw} ({o.metric} {_number(o.value)} vs median {_number(o.peers_median)})"
    )


def _percent(deviation: float) -> str:
    return f"{abs(deviation) * 100:.1f} %"


def _number(value: float) -> str:
    """Three significant digits without an exponent; thousands separated from 100 up."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
