"""What `show --json` and `compare --json` print: typed views of results, for scripts.

Each is built from the records (groups, published records, trust, a comparison) by
harness.report.scripted and harness.report.scripted_compare, and written through the
records' codec; harness/schemas/show.schema.json and compare.schema.json describe them.
Values are in each metric's shown unit (the catalogue's `unit`: ms, samples/s, %).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

# A ratio's confidence interval: [low, high]; a bound of None is unbounded.
Interval = tuple[float | None, float | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricSummary:
    """One metric of a result: the catalogue's facts and its values over the result's runs."""

    key: str
    label: str
    unit: str
    higher_is_better: bool
    headline: bool
    mlperf: bool
    values: tuple[float, ...]
    median: float
    best: float
    mean: float
    stdev: float | None  # None with one value: no spread to state
    cov: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunEntry:
    """One run of a result, its values keyed by the metrics' keys (None: not measured)."""

    name: str
    run_id: str
    created_utc: str
    valid: bool
    submission_valid: bool
    profile: str
    batch_size: int
    model: str
    model_sha256: str
    precision: str
    providers: tuple[str, ...]
    fingerprint_id: str
    warnings: tuple[str, ...]
    values: Mapping[str, float | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepPoint:
    """One batch size of a sweep: its statistics of the sweep's metric."""

    batch_size: int
    metric: str
    values: tuple[float, ...]
    median: float
    best: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepSummary:
    """A sweep's points, the batch it chose and why it stopped."""

    best_batch: int | None
    saturation_batch: int | None
    stopped: str
    points: tuple[SweepPoint, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustSummary:
    """A result's trust (harness.records.trust) as its tier and badges' texts."""

    tier: str
    profile: str
    submission_valid: bool | None
    loadgen: str
    badges: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishedSummary:
    """An imported MLPerf result's source: who, which round, which system."""

    org: str
    division: str
    mlperf_version: str | None
    system: str
    accelerator: str | None
    accelerators_per_node: str | None
    nodes: str | None
    benchmark: str
    source_path: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ShowEntry:
    """One result `show` opened: a run, a trials group, a sweep or a published record."""

    path: str
    origin: str | None  # a bundle's verification or a fleet's task, where it came from one
    kind: Literal["run", "trials", "sweep", "published"]
    label: str
    scenario: str | None
    headline: str | None  # the headline metric's key; None: nothing measured
    trust: TrustSummary
    metrics: tuple[MetricSummary, ...]
    runs: tuple[RunEntry, ...]
    sweep: SweepSummary | None
    published: PublishedSummary | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ShowDocument:
    """`harness show --json`: every result named, in order."""

    kind: Literal["beyond-tops.show"]
    schema_version: int
    results: tuple[ShowEntry, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CompareCell:
    """One side's value of one metric, and its ratio to the first side."""

    side: int
    label: str
    values: tuple[float, ...]
    value: float | None  # the median
    ratio: float | None
    interval: Interval | None  # of the ratio; None: fewer than two values on a side
    p_value: float | None
    significant: bool | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompareMetric:
    """One metric across the sides."""

    key: str
    label: str
    unit: str
    higher_is_better: bool
    headline: bool
    mlperf: bool
    cells: tuple[CompareCell, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CompareSide:
    """One side: its label, scenario and the rows of facts compare prints above the metrics."""

    index: int
    label: str
    scenario: str | None
    info: Mapping[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class ComparePair:
    """One side against the first: its differences in tiers."""

    index: int
    first: str
    other: str
    not_comparable: tuple[str, ...]
    intended: tuple[str, ...]
    caveats: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GateEntry:
    """The regression gate's verdict (harness.records.regression), values in shown units."""

    metric: str
    label: str
    unit: str
    higher_is_better: bool
    base: str
    new: str
    base_value: float
    new_value: float
    threshold: float
    ratio: float
    limit: float
    interval: Interval | None
    confidence: float
    noise: Literal["interval", "unknown", "unbounded"]
    interval_beyond: bool | None
    slower: bool
    line: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CompareDocument:
    """`harness compare --json`: the verdict, the sides, the metrics, the pairs, the gate."""

    kind: Literal["beyond-tops.compare"]
    schema_version: int
    comparable: bool
    scenario: str | None
    nothing_compared: str | None
    problems: tuple[str, ...]
    alpha: float
    confidence: float
    sides: tuple[CompareSide, ...]
    metrics: tuple[CompareMetric, ...]
    pairs: tuple[ComparePair, ...]
    gate: GateEntry | None
