"""Side-by-side comparison of groups: metrics, ratios, significance, differences in tiers.

The tiers (not comparable, intended differences, caveats) are harness.analysis.compare_tiers',
re-exported here for the callers of this module.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.analysis.compare_tiers import (
    IGNORED_SETTINGS,
    SPEED_DERIVED_SETTINGS,
    Tiers,
    comparability_problems,
    environment_differences,
    hardware_differences,
    published_differences,
    published_tiers,
    tiers,
)
from harness.analysis.published_side import Side, published_column
from harness.analysis.trust import group_trust, published_trust
from harness.analysis.values import (
    energy_metrics,
    headline,
    published_value_of,
    reported,
    value_of,
)
from harness.analysis.welch import ratio_interval, welch_t_test
from harness.errors import ConfigError
from harness.records.group import Group
from harness.records.metrics import (
    ACCURACY,
    MEMORY,
    UTILIZATION,
    Metric,
)
from harness.records.published import PublishedResult
from harness.records.result import RunResult
from harness.records.trust import Trust

NO_RESULTS = "no results to compare (the sweep measured no point)"
__all__ = [
    "IGNORED_SETTINGS",
    "SPEED_DERIVED_SETTINGS",
    "Cell",
    "Comparison",
    "Pair",
    "Row",
    "comparability_problems",
    "compare",
    "environment_differences",
    "hardware_differences",
    "published_differences",
    "tiers",
]


@dataclass(frozen=True, kw_only=True)
class Cell:
    """One group's value of one metric: the median over its trials, and against the first."""

    values: tuple[float, ...]
    value: float | None
    ratio: float | None
    p_value: float | None
    significant: bool | None  # None: fewer than two trials on a side, or the first column
    interval: tuple[float, float] | None = None  # of the ratio (ratio_interval); infinite: any


@dataclass(frozen=True, kw_only=True)
class Row:
    """One metric across the groups."""

    metric: Metric  # the catalogue's row (harness.records.metrics)
    cells: tuple[Cell, ...]
    headline: bool = False  # MLPerf's metric of the scenario
    mlperf: bool = True  # one MLPerf defines for the scenario; False: the harness's own


@dataclass(frozen=True, kw_only=True)
class Pair:
    """One side against the first, its differences graded in three tiers.

    ``not_comparable``: a different model or scenario (nothing to compare). ``intended``:
    precision, batch size, hardware, runtime: what a user compares on purpose. ``caveats``:
    what weakens the numbers without forbidding the comparison (per-round seeds and other
    LoadGen settings, the LoadGen release, a quick profile, the division).
    """

    index: int  # the other side's place in Comparison.labels
    first: str
    other: str
    not_comparable: tuple[str, ...]
    intended: tuple[str, ...]
    caveats: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """Everything `harness compare` shows; rendered by harness.report.compare_render."""

    labels: tuple[str, ...]
    info: tuple[tuple[str, tuple[str, ...]], ...]
    rows: tuple[Row, ...]
    problems: tuple[str, ...]
    hardware: tuple[str, ...]
    environment: tuple[str, ...]
    alpha: float
    scenarios: tuple[str | None, ...] = ()  # per side; None: a sweep that measured nothing
    confidence: float = 0.95
    pairs: tuple[Pair, ...] = ()

    @property
    def comparable(self) -> bool:
        """Whether every side has the first's model and scenario (`problems` is empty).

        Intended differences and caveats do not make a comparison "not comparable".
        """
        return not self.problems

    @property
    def scenario(self) -> str | None:
        """The scenario every side shares, or None when they differ (nothing is compared)."""
        known = set(self.scenarios)
        return self.scenarios[0] if len(known) == 1 and None not in known else None

    @property
    def nothing_compared(self) -> str | None:
        """Why no metric is compared, or None when the sides share a scenario."""
        if not self.scenarios or self.scenario is not None:
            return None
        names = ", ".join(s or "nothing measured" for s in self.scenarios)
        return (
            f"nothing is compared: the scenarios differ ({names}), and MLPerf defines "
            "different metrics for each (latency for SingleStream and MultiStream, samples/s "
            "for Offline, QPS at a latency bound for Server)"
        )


def _generated(side: Side) -> bool:
    """Whether a side is a generative model's: each run generated, or a published LLM record."""
    if isinstance(side, Group):
        return bool(side.results) and all(r.generation is not None for r in side.results)
    return side.generation is not None


def compare(
    groups: Sequence[Side], *, alpha: float = 0.05, trust: Sequence[Trust] | None = None
) -> Comparison:
    """Each metric's median per group, its ratio to the first group and Welch's significance.

    A published MLPerf result (harness.records.published) stands beside local groups as one
    value per metric; the rules that flag an unfair comparison are the same (see
    published_problems), and its hardware is never called the same as any other. `trust`:
    each side's (harness.inspect.trust reads its files); without it, what the results say
    (harness.analysis.trust). It is the sides' "trust" row.
    """
    if len(groups) < 2:
        raise ConfigError("compare needs at least two results, trials or sweep directories")
    results = [r for g in groups if isinstance(g, Group) for r in g.results]
    scenarios = tuple(_scenario(g) for g in groups)
    shared = scenarios[0] if len(set(scenarios)) == 1 else None
    rows: list[Row] = []
    if shared is not None:
        generative = all(_generated(g) for g in groups)  # LLMs, local or published: tokens
        mlperf = [
            headline(shared, results, generative=generative),
            *reported(shared, results, generative=generative),
        ]
        mlperf = list({m.key: m for m in mlperf}.values())  # the fallback is reported too
        energy = energy_metrics(shared, results, generative=generative)
        extra = [*energy, *ACCURACY, *UTILIZATION, *MEMORY]
        rows = [_row(m, groups, alpha, mlperf=True, headline=i == 0) for i, m in enumerate(mlperf)]
        rows += [_row(m, groups, alpha, mlperf=False) for m in extra]
    pairs, hardware, environment = _differences(groups)
    problems = [f"{p.first} vs {p.other}: {line}" for p in pairs for line in p.not_comparable]
    return Comparison(
        labels=tuple(g.label for g in groups),
        info=(*_info(groups), ("trust", _trust_row(groups, trust))),
        rows=tuple(r for r in rows if r.headline or any(c.values for c in r.cells)),
        problems=tuple(problems),
        hardware=tuple(hardware),
        environment=tuple(environment),
        alpha=alpha,
        scenarios=scenarios,
        pairs=tuple(pairs),
    )


def _scenario(side: Side) -> str | None:
    if isinstance(side, PublishedResult):
        return side.scenario
    return side.results[0].scenario if side.results else None


def _values(side: Side, metric: Metric) -> list[float]:
    if isinstance(side, PublishedResult):
        value = published_value_of(side, metric)
        return [] if value is None else [value]
    return [v for r in side.results if (v := value_of(r, metric)) is not None]


def _row(
    metric: Metric, groups: Sequence[Side], alpha: float, *, mlperf: bool, headline: bool = False
) -> Row:
    first = _values(groups[0], metric)
    first_value = statistics.median(first) if first else None
    reference = Cell(
        values=tuple(first),
        value=first_value,
        ratio=1.0 if first_value else None,
        p_value=None,
        significant=None,
    )
    others = [_cell(first, first_value, _values(g, metric), alpha) for g in groups[1:]]
    return Row(metric=metric, cells=(reference, *others), headline=headline, mlperf=mlperf)


def _cell(first: list[float], first_value: float | None, values: list[float], alpha: float) -> Cell:
    value = statistics.median(values) if values else None
    ratio = value / first_value if value is not None and first_value else None
    p_value = welch_t_test(first, values)[1] if len(first) > 1 and len(values) > 1 else None
    return Cell(
        values=tuple(values),
        value=value,
        ratio=ratio,
        p_value=p_value,
        significant=None if p_value is None else p_value < alpha,
        interval=ratio_interval(first, values) if ratio is not None else None,
    )


def _differences(groups: Sequence[Side]) -> tuple[list[Pair], list[str], list[str]]:
    pairs: list[Pair] = []
    hardware: list[str] = []
    environment: list[str] = []
    first = groups[0]
    for index, group in enumerate(groups[1:], start=1):
        prefix = f"{first.label} vs {group.label}: "  # values follow in this order
        found: Tiers
        if isinstance(group, PublishedResult) or isinstance(first, PublishedResult):
            found, hw, env = published_tiers(first, group)
        elif not group.results or not first.results:
            found, hw, env = (
                (["no results to compare (the sweep measured no point)"], [], []),
                [],
                [],
            )
        else:
            a, b = first.results[0], group.results[0]
            found, hw, env = tiers(a, b), hardware_differences(a, b), environment_differences(a, b)
        hardware += [prefix + line for line in hw]
        environment += [prefix + line for line in env]
        pairs.append(
            Pair(
                index=index,
                first=first.label,
                other=group.label,
                not_comparable=tuple(found[0]),
                intended=tuple(found[1]),
                caveats=tuple(found[2]),
            )
        )
    return pairs, hardware, environment


INFO_ROWS: tuple[str, ...] = (
    "kind",
    "scenario",
    "batch size",
    "trials",
    "profile",
    "LoadGen verdict",
    "providers",
    "model",
    "fingerprint",
)


def _trust_row(groups: Sequence[Side], trust: Sequence[Trust] | None) -> tuple[str, ...]:
    """Each side's tier and badges, one cell each."""
    found = list(trust) if trust is not None else [_trust(g) for g in groups]
    if len(found) != len(groups):
        raise ValueError("trust: one record per side, in order")
    return tuple(f"{t.tier}: {' | '.join(b.text for b in t.badges)}" for t in found)


def _trust(side: Side) -> Trust:
    return group_trust(side) if isinstance(side, Group) else published_trust(side)


def _info(groups: Sequence[Side]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    columns = [_column(g) for g in groups]
    names: tuple[str, ...] = INFO_ROWS
    if any(isinstance(g, PublishedResult) for g in groups):
        names = ("source", *INFO_ROWS)
    if "Server" in {_scenario(g) for g in groups}:
        names = (*names, "latency bound")
    return tuple((name, tuple(c.get(name, "n/a") for c in columns)) for name in names)


def _column(side: Side) -> dict[str, str]:
    if isinstance(side, PublishedResult):
        return published_column(side)
    g = side
    return {
        "source": "local",
        "kind": g.kind,
        "scenario": _first(g, lambda r: f"{r.scenario_name} ({r.scenario})"),
        "batch size": _first(g, lambda r: str(r.batch_size)),
        "trials": _trials(g),
        "profile": _first(g, lambda r: r.outcome.profile),
        "LoadGen verdict": _verdict(g.results),
        "providers": _first(g, lambda r: ",".join(r.providers)),
        "model": _first(g, _model),
        "fingerprint": _first(g, lambda r: r.fingerprint.fingerprint_id),
        "latency bound": _first(g, _bound),
    }


def _bound(result: RunResult) -> str:
    server = result.server
    if server is None or server.latency_bound_ns is None:
        return "n/a"
    return f"{server.latency_bound_ns / 1e6:.3f} ms at p{server.latency_percentile or 99:g}"


def _first(group: Group, text: Callable[[RunResult], str]) -> str:
    return text(group.results[0]) if group.results else "n/a"


def _model(result: RunResult) -> str:
    return f"{result.model.name} {result.model.precision}"


def _trials(group: Group) -> str:
    done, asked = len(group.results), group.runs.requested
    return str(done) if done >= asked else f"{done} of {asked}"


def _verdict(results: Sequence[RunResult]) -> str:
    invalid = sum(not r.outcome.valid for r in results)
    if not results:
        return "n/a"
    return "VALID" if not invalid else f"INVALID ({invalid} of {len(results)})"
