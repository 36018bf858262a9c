"""Side-by-side comparison of groups: metrics, ratios, significance and what makes it unfair."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.analysis.published_side import Side, facts, published_column
from harness.analysis.values import (
    headline,
    published_value_of,
    reported,
    source_names,
    value_of,
)
from harness.analysis.welch import ratio_interval, welch_t_test
from harness.errors import ConfigError
from harness.records.fingerprint import compare_fingerprints
from harness.records.group import Group
from harness.records.metrics import ACCURACY, UTILIZATION, Metric, per_source, scenario_metrics
from harness.records.published import PublishedResult
from harness.records.result import RunResult, Versions

# LoadGen settings the harness derives from the measured speed (expected QPS or latency from
# the warm-up, and the Offline query size that follows from it): they differ whenever the
# hardware does, so they are not a reason to refuse. `scenario` is reported on its own line.
# Everything else, the RNG seeds included (official seeds vs custom ones), must match.
# Batch size, providers and the LoadGen verdict are shown in the info rows, not refused: each
# target's own best batch and provider are what a cross-hardware comparison is about.
SPEED_DERIVED_SETTINGS = frozenset(
    {"target_qps", "target_latency_ns", "samples_per_query", "min_sample_count"}
)
IGNORED_SETTINGS = SPEED_DERIVED_SETTINGS | {"scenario"}
# (package, its version in a result): the runtime packages that must match.
RUNTIME_PACKAGES: tuple[tuple[str, Callable[[Versions], str]], ...] = (
    ("onnxruntime", lambda v: v.onnxruntime),
    ("mlcommons-loadgen", lambda v: v.loadgen),
)
HARDWARE_PREFIXES = ("cpu.", "memory.", "gpus")


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

    @property
    def comparable(self) -> bool:
        """Whether nothing makes the comparison unfair."""
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


def comparability_problems(a: RunResult, b: RunResult) -> list[str]:
    """Each difference that makes comparing a with b unfair, one line each (a's value first)."""
    problems = [
        *_differs("model checksum", a.model.sha256[:12], b.model.sha256[:12]),
        *_differs("precision", a.model.precision, b.model.precision),
        *_differs("scenario", a.scenario, b.scenario),
        *_differs("profile (quick vs submission)", a.outcome.profile, b.outcome.profile),
    ]
    for package, version in RUNTIME_PACKAGES:
        problems += _differs(f"{package} version", version(a.versions), version(b.versions))
    problems += _differs(
        "official mlperf.conf sha256",
        a.loadgen_config.mlperf_conf_sha256[:12],
        b.loadgen_config.mlperf_conf_sha256[:12],
    )
    for key in sorted((set(a.settings) | set(b.settings)) - IGNORED_SETTINGS):
        problems += _differs(f"LoadGen setting {key}", a.settings.get(key), b.settings.get(key))
    return problems


def hardware_differences(a: RunResult, b: RunResult) -> list[str]:
    """Fingerprint differences that describe only the hardware (CPU, memory, GPUs)."""
    return [line for line in _fingerprint_lines(a, b) if line.startswith(HARDWARE_PREFIXES)]


def environment_differences(a: RunResult, b: RunResult) -> list[str]:
    """The other fingerprint differences (OS, Python, packages, container): shown, not refused.

    The runtime packages are left out: comparability_problems reports them.
    """
    runtime = tuple(f"software.packages.{package}:" for package, _ in RUNTIME_PACKAGES)
    return [
        line
        for line in _fingerprint_lines(a, b)
        if not line.startswith(HARDWARE_PREFIXES) and not line.startswith(runtime)
    ]


def compare(groups: Sequence[Side], *, alpha: float = 0.05) -> Comparison:
    """Each metric's median per group, its ratio to the first group and Welch's significance.

    A published MLPerf result (harness.records.published) stands beside local groups as one
    value per metric; the rules that flag an unfair comparison are the same (see
    published_problems), and its hardware is never called the same as any other.
    """
    if len(groups) < 2:
        raise ConfigError("compare needs at least two results, trials or sweep directories")
    results = [r for g in groups if isinstance(g, Group) for r in g.results]
    scenarios = tuple(_scenario(g) for g in groups)
    shared = scenarios[0] if len(set(scenarios)) == 1 else None
    rows: list[Row] = []
    if shared is not None:
        mlperf = [headline(shared, results), *reported(shared, results)]
        mlperf = list({m.key: m for m in mlperf}.values())  # the fallback is reported too
        extra = [*_energy_metrics(shared, results), *ACCURACY, *UTILIZATION]
        rows = [_row(m, groups, alpha, mlperf=True, headline=i == 0) for i, m in enumerate(mlperf)]
        rows += [_row(m, groups, alpha, mlperf=False) for m in extra]
    problems, hardware, environment = _differences(groups)
    return Comparison(
        labels=tuple(g.label for g in groups),
        info=_info(groups),
        rows=tuple(r for r in rows if r.headline or any(c.values for c in r.cells)),
        problems=tuple(problems),
        hardware=tuple(hardware),
        environment=tuple(environment),
        alpha=alpha,
        scenarios=scenarios,
    )


def _scenario(side: Side) -> str | None:
    if isinstance(side, PublishedResult):
        return side.scenario
    return side.results[0].scenario if side.results else None


def _energy_metrics(scenario: str, results: Sequence[RunResult]) -> list[Metric]:
    """Each power source's value that suits the scenario (the catalogue's `energy`)."""
    wanted = scenario_metrics(scenario).energy
    return [per_source(name, wanted) for name in source_names(results)]


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


def _differences(groups: Sequence[Side]) -> tuple[list[str], list[str], list[str]]:
    problems: list[str] = []
    hardware: list[str] = []
    environment: list[str] = []
    first = groups[0]
    for group in groups[1:]:
        prefix = f"{first.label} vs {group.label}: "  # values follow in this order
        if isinstance(group, PublishedResult) or isinstance(first, PublishedResult):
            found = published_differences(first, group)
            problems += [prefix + line for line in found[0]]
            hardware += [prefix + line for line in found[1]]
            environment += [prefix + line for line in found[2]]
            continue
        if not group.results or not first.results:
            problems.append(f"{prefix}no results to compare (the sweep measured no point)")
            continue
        a, b = first.results[0], group.results[0]
        problems += [prefix + line for line in comparability_problems(a, b)]
        hardware += [prefix + line for line in hardware_differences(a, b)]
        environment += [prefix + line for line in environment_differences(a, b)]
    return problems, hardware, environment


def published_differences(a: Side, b: Side) -> tuple[list[str], list[str], list[str]]:
    """(problems, hardware, environment) of a pair where one side or both are published.

    The local rules, read from both sides: benchmark (LoadGen's model key), precision,
    scenario, profile (a published result ran under MLPerf's rules: submission), LoadGen
    release and the LoadGen settings both logged; and the division when both have one.
    A published side's hardware is always listed: it is never the same machine.
    """
    fa, fb = facts(a), facts(b)
    if fa is None or fb is None:
        return ["no results to compare (the sweep measured no point)"], [], []
    problems = [
        *_differs("benchmark (LoadGen model key)", fa.model, fb.model),
        *_precision(fa.precision, fb.precision),
        *_differs("scenario", fa.scenario, fb.scenario),
        *(_differs("division", fa.division, fb.division) if fa.division and fb.division else []),
        *_differs("profile (quick vs submission)", fa.profile, fb.profile),
        *_differs("mlcommons-loadgen release", fa.loadgen, fb.loadgen),
    ]
    both = (set(fa.settings) & set(fb.settings)) - IGNORED_SETTINGS
    for key in sorted(both):
        problems += _differs(f"LoadGen setting {key}", fa.settings[key], fb.settings[key])
    environment = [f"software: {fa.software} vs {fb.software}"]
    one_side = sorted((set(fa.settings) ^ set(fb.settings)) - IGNORED_SETTINGS)
    if one_side:
        environment.append(
            "LoadGen settings only one side logged (another LoadGen): " + ", ".join(one_side)
        )
    return problems, [f"{fa.hardware} vs {fb.hardware}"], environment


def _precision(a: str | None, b: str | None) -> list[str]:
    if a is None and b is None:
        return ["precision: stated by neither published result"]
    if a is None or b is None:
        return [f"precision: {a!r} != {b!r} (the published result does not state its own)"]
    return _differs("precision", a, b)


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


def _differs(what: str, a: Any, b: Any) -> list[str]:
    return [] if a == b else [f"{what}: {a!r} != {b!r}"]


def _fingerprint_lines(a: RunResult, b: RunResult) -> list[str]:
    return compare_fingerprints(a.fingerprint, b.fingerprint)
