"""`harness reproduce PUBLISHED_RECORD`: a published MLPerf result run here, shown beside it.

The record is read as hostile input (harness.reproduce.published_source), the run planned from
it (harness.reproduce.published_plan) and measured as trials in a new group under `--out`.
Published and local then stand side by side with their comparability graded as `harness
compare` grades it (harness.analysis.compare: not comparable, intended differences, caveats).
Another system is an intended difference, not a failure: only `--same-system` (the user says
this is the machine the result was published from) asks for a verdict, REPRODUCED or NOT
REPRODUCED by the tolerance, with reproduce's exit codes; otherwise the answer is "compared,
not judged" and the exit code 0.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from harness.analysis.compare import Comparison, Row, compare
from harness.errors import HarnessError
from harness.execution.campaign import Campaign, run_trials
from harness.execution.pipeline import Launcher
from harness.files import atomic_write_text, create_run_dir
from harness.records.group import Group
from harness.records.layout import REPRODUCTION_TEXT
from harness.records.metrics import Metric
from harness.records.published import PublishedResult
from harness.reproduce.codes import VERDICT_CODES, Verdict
from harness.reproduce.published_plan import Plan, plan_published
from harness.reproduce.published_source import open_published
from harness.reproduce.tolerance import Tolerance
from harness.reproduce.verdict import tolerance_key
from harness.results.groups import load_group

NOT_JUDGED = "compared, not judged: a different system"
LABEL_WIDTH = 16


@dataclass(frozen=True, kw_only=True)
class PublishedRequest:
    """What `harness reproduce` was asked of a published record."""

    source: Path
    out: Path
    model: Path | None = None
    quick: bool = False
    same_system: bool = False
    trials: int = 1  # a published result is one run
    tolerance: Tolerance = field(default_factory=Tolerance)


@dataclass(frozen=True, kw_only=True)
class PublishedOutcome:
    """The side by side, the group it measured, and the verdict (None: not judged)."""

    text: str
    group: Path
    verdict: Verdict | None
    exit_code: int


def reproduce_published(
    request: PublishedRequest, *, launch: Launcher | None = None, stream: IO[str] | None = None
) -> PublishedOutcome:
    """Run the published benchmark here, then compare; errors before a trial leave nothing."""
    source = open_published(request.source)
    plan = plan_published(source, model=request.model, quick=request.quick)
    record = source.record
    if stream is not None:
        stream.write(f"reproduce {record.label}: {request.trials} trial(s) here\n")
        stream.flush()
    group = create_run_dir(
        request.out, model=plan.request.model_name, scenario=f"{record.scenario}-reproduce"
    )
    campaign = Campaign(request=plan.request, out_root=request.out, launch=launch)
    try:
        run_trials(campaign, request.trials, root=group, stream=stream)
    except HarnessError:
        if not any(p.name.startswith("trial-") for p in group.iterdir()):
            shutil.rmtree(group, ignore_errors=True)  # nothing was measured
        raise
    local = load_group(group)
    comparison = compare([record, local])
    verdict, lines = _judge(comparison, local, request)
    text = "\n".join(
        [_heading(record, plan), *_side_by_side(record, local, comparison, group), *lines]
    )
    atomic_write_text(group / REPRODUCTION_TEXT, text + "\n")
    code = 0 if verdict is None else VERDICT_CODES[verdict].code
    return PublishedOutcome(text=text, group=group, verdict=verdict, exit_code=code)


def _heading(record: PublishedResult, plan: Plan) -> str:
    lines = [f"reproduce {record.label}: {record.benchmark} {record.scenario}, run here"]
    lines.append(_row("model", plan.model))
    lines += [_row("settings" if i == 0 else "", line) for i, line in enumerate(plan.settings)]
    return "\n".join(lines)


def _side_by_side(
    record: PublishedResult, local: Group, comparison: Comparison, group: Path
) -> list[str]:
    head = _headline(comparison)
    results = local.results
    verdicts = sorted({"VALID" if r.outcome.valid else "INVALID" for r in results}) or ["none"]
    columns = [
        ("", "published", "local"),
        ("result", f"{record.verdict} per LoadGen", f"{'/'.join(verdicts)} per LoadGen"),
    ]
    if head is not None:
        published, here = head.cells[0].value, head.cells[1].value
        columns.append(
            (head.metric.label, _value(head.metric, published), _value(head.metric, here))
        )
    columns += [
        ("profile", "submission (MLPerf's rules)", results[0].outcome.profile if results else "-"),
        ("system", record.system.id, "this machine"),
        ("trials", "1 (published)", f"{len(results)} of {local.runs.requested}"),
    ]
    width = max(len(c[1]) for c in columns) + 2
    lines = ["", *(_row(name, f"{a:<{width}}{b}".rstrip()) for name, a, b in columns)]
    if head is not None and head.cells[1].ratio is not None:
        lines.append(_row("ratio", f"{head.cells[1].ratio:.3f} local / published"))
    lines.append(_row("run dir", str(group)))
    (pair,) = comparison.pairs
    graded = (
        ("not comparable", pair.not_comparable),
        ("intended", pair.intended),
        ("caveats", pair.caveats),
    )
    lines.append(_row("comparability", "graded as `harness compare` grades it:"))
    for name, found in graded:
        lines.append(_row(name, "; ".join(found) if found else "none"))
    return lines


def _judge(
    comparison: Comparison, local: Group, request: PublishedRequest
) -> tuple[Verdict | None, list[str]]:
    """The verdict, only with --same-system; the lines that state it."""
    if not request.same_system:
        lines = [
            _row("verdict", NOT_JUDGED),
            _row("", "(pass --same-system when this is the machine it was published from)"),
            _row("exit code", "0"),
        ]
        return None, lines
    head = _headline(comparison)
    verdict: Verdict
    if comparison.problems:
        verdict, why = "NOT COMPARABLE", "; ".join(comparison.problems)
    elif head is None or head.cells[0].value is None or head.cells[1].value is None:
        verdict, why = "NOT REPRODUCED", "no local value of the published metric"
    elif not all(r.outcome.valid for r in local.results):
        verdict, why = "NOT REPRODUCED", "a local trial is not VALID per LoadGen"
    else:
        limit = request.tolerance.fraction(tolerance_key(head.metric))
        apart = abs(head.cells[1].value / head.cells[0].value - 1)
        verdict = "REPRODUCED" if apart <= limit else "NOT REPRODUCED"
        why = f"{apart:.2%} apart; tolerance {limit:.0%} (--tolerance)"
    code = VERDICT_CODES[verdict].code
    return verdict, [
        _row("verdict", f"{verdict} (--same-system: {why})"),
        _row("exit code", f"{code} ({verdict})"),
    ]


def _headline(comparison: Comparison) -> Row | None:
    return next((r for r in comparison.rows if r.headline), None)


def _value(metric: Metric, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * metric.scale:{metric.spec}} {metric.unit}"


def _row(name: str, text: str) -> str:
    return f"  {name:<{LABEL_WIDTH}}{text}"
