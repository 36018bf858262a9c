"""`harness compare --json` and `--csv`: a comparison's records as a versioned document, or rows.

Built from harness.analysis.compare's Comparison and the gate's Regression, never from the
printed text. COMPARE_FORMAT is the document's schema_version; its history: 1, the first
(#26). The CSV's columns (COMPARE_COLUMNS) change with it.
"""

from __future__ import annotations

import math
from typing import Final

from harness.analysis.compare import Cell, Comparison, Row
from harness.records.metrics import metric
from harness.records.regression import Regression
from harness.records.scripting import (
    CompareCell,
    CompareDocument,
    CompareMetric,
    ComparePair,
    CompareSide,
    GateEntry,
    Interval,
)
from harness.report.csvtext import CsvCell
from harness.report.regression import regression_line

COMPARE_FORMAT = 1
COMPARE_KIND: Final = "beyond-tops.compare"
COMPARE_COLUMNS = (
    "metric",
    "metric_label",
    "unit",
    "higher_is_better",
    "headline",
    "mlperf",
    "side",
    "label",
    "n",
    "value",
    "ratio",
    "interval_low",
    "interval_high",
    "p_value",
    "significant",
)


def compare_document(comparison: Comparison, gate: Regression | None = None) -> CompareDocument:
    """The document `compare --json` prints."""
    return CompareDocument(
        kind=COMPARE_KIND,
        schema_version=COMPARE_FORMAT,
        comparable=comparison.comparable,
        scenario=comparison.scenario,
        nothing_compared=comparison.nothing_compared,
        problems=comparison.problems,
        alpha=comparison.alpha,
        confidence=comparison.confidence,
        sides=tuple(_side(comparison, i) for i in range(len(comparison.labels))),
        metrics=tuple(_metric(row, comparison.labels) for row in comparison.rows),
        pairs=tuple(
            ComparePair(
                index=p.index,
                first=p.first,
                other=p.other,
                not_comparable=p.not_comparable,
                intended=p.intended,
                caveats=p.caveats,
            )
            for p in comparison.pairs
        ),
        gate=None if gate is None else _gate(gate),
    )


def compare_rows(document: CompareDocument) -> list[tuple[CsvCell, ...]]:
    """One row per metric and side, COMPARE_COLUMNS' order."""
    rows: list[tuple[CsvCell, ...]] = []
    for m in document.metrics:
        meta = (m.key, m.label, m.unit, m.higher_is_better, m.headline, m.mlperf)
        for c in m.cells:
            low, high = c.interval or (None, None)
            cells = (c.side, c.label, len(c.values), c.value, c.ratio, low, high)
            rows.append((*meta, *cells, c.p_value, c.significant))
    return rows


def _side(comparison: Comparison, index: int) -> CompareSide:
    scenarios = comparison.scenarios
    return CompareSide(
        index=index,
        label=comparison.labels[index],
        scenario=scenarios[index] if index < len(scenarios) else None,
        info={name: cells[index] for name, cells in comparison.info},
    )


def _metric(row: Row, labels: tuple[str, ...]) -> CompareMetric:
    m = row.metric
    return CompareMetric(
        key=m.key,
        label=m.label,
        unit=m.unit,
        higher_is_better=m.higher_is_better,
        headline=row.headline,
        mlperf=row.mlperf,
        cells=tuple(
            _cell(row, cell, side, label)
            for side, (cell, label) in enumerate(zip(row.cells, labels, strict=True))
        ),
    )


def _cell(row: Row, cell: Cell, side: int, label: str) -> CompareCell:
    shown = row.metric.shown
    return CompareCell(
        side=side,
        label=label,
        values=tuple(shown(v) for v in cell.values),
        value=None if cell.value is None else shown(cell.value),
        ratio=cell.ratio,
        interval=_interval(cell.interval),
        p_value=cell.p_value,
        significant=cell.significant,
    )


def _interval(interval: tuple[float, float] | None) -> Interval | None:
    if interval is None:
        return None
    low, high = interval
    return (low if math.isfinite(low) else None, high if math.isfinite(high) else None)


def _gate(verdict: Regression) -> GateEntry:
    shown = metric(verdict.metric).shown
    return GateEntry(
        metric=verdict.metric,
        label=verdict.label,
        unit=metric(verdict.metric).unit,
        higher_is_better=verdict.higher_is_better,
        base=verdict.base,
        new=verdict.new,
        base_value=shown(verdict.base_value),
        new_value=shown(verdict.new_value),
        threshold=verdict.threshold,
        ratio=verdict.ratio,
        limit=verdict.limit,
        interval=verdict.interval,
        confidence=verdict.confidence,
        noise=verdict.noise,
        interval_beyond=verdict.interval_beyond,
        slower=verdict.slower,
        line=regression_line(verdict),
    )
