"""`harness submission` as one call: plan the runs, describe the system, write the tree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import ConfigError
from harness.records.job import read_job
from harness.records.layout import JOB_FILE
from harness.submission.documents import weights_statement
from harness.submission.plan import Division, Plan, plan_export
from harness.submission.system import check_name, system_json, unknown_fields
from harness.submission.tree import compliance_verdicts, write_tree

# Closed-division benchmarks per system type (MLPerf v6.1's required scenarios): ResNet-50 is
# an edge benchmark; a "datacenter" system has none, and the checker stops on it.
_SYSTEM_TYPES_OF = {"resnet": ("edge", "datacenter,edge", "edge,datacenter")}


@dataclass(frozen=True, kw_only=True)
class ExportRequest:
    """What `harness submission` was asked: the runs, the tree's names and where it goes."""

    sources: tuple[Path, ...]
    division: Division
    org: str
    system: str
    out: Path
    description: Mapping[str, str] = field(default_factory=dict)
    force_quick: bool = False
    # The zoo models with trained weights (harness.models.zoo entries with synthetic=False).
    real_weights: frozenset[str] = frozenset()


@dataclass(frozen=True, kw_only=True)
class Exported:
    """The written tree: its root, what went where, the system JSON and notes for the user."""

    root: Path
    plan: Plan
    system: Mapping[str, str]
    notes: tuple[str, ...]

    @property
    def unknown(self) -> list[str]:
        """System fields nobody could fill: what a --system-description should add."""
        return unknown_fields(self.system)


def export_submission(request: ExportRequest) -> Exported:
    """Check everything, then write the tree at ``request.out`` in one piece.

    Raises:
        ConfigError: bad names, or runs or a description a division refuses (see plan_export).
        ResultError: unreadable runs, or an ``out`` that exists and is not empty.
    """
    org = check_name(request.org, "--org")
    system = check_name(request.system, "--system")
    plan = plan_export(
        request.sources,
        division=request.division,
        org=org,
        system=system,
        force_quick=request.force_quick,
        real_weights=request.real_weights,
    )
    data = system_json(
        plan.results,
        division=plan.division,
        submitter=org,
        system=system,
        described=request.description,
        notes=(*_quick_notes(plan), *_weights_notes(plan), *_compliance_notes(plan)),
    )
    _check_system_type(plan, data["system_type"])
    notes = write_tree(plan, data, request.out)
    return Exported(root=request.out, plan=plan, system=data, notes=tuple(notes))


def _quick_notes(plan: Plan) -> Sequence[str]:
    quick = [f"{e.benchmark} {e.scenario}" for e in plan.entries if e.quick]
    if not quick:
        return ()
    listed = ", ".join(quick)
    return (f"Quick-profile results (shortened LoadGen runs, NOT submission-valid): {listed}.",)


def _weights_notes(plan: Plan) -> Sequence[str]:
    """The synthetic-weights statement, once per statement, naming the results it covers."""
    covered: dict[str, list[str]] = {}
    for entry in plan.entries:
        statement = weights_statement(read_job(entry.run_dir / JOB_FILE), plan.real_weights)
        if statement is not None:
            covered.setdefault(statement, []).append(f"{entry.benchmark} {entry.scenario}")
    return tuple(f"{' and '.join(names)}: {statement}." for statement, names in covered.items())


def _compliance_notes(plan: Plan) -> Sequence[str]:
    """Each exported result's compliance verdicts, failures as plainly as passes."""
    parts = []
    for entry in plan.entries:
        verdicts = compliance_verdicts(plan, entry)
        if verdicts:
            listed = ", ".join(f"{t} {'PASS' if ok else 'FAIL'}" for t, ok in verdicts.items())
            parts.append(f"{entry.benchmark} {entry.scenario} {listed}")
    return (f"Compliance: {'; '.join(parts)}.",) if parts else ()


def _check_system_type(plan: Plan, system_type: str) -> None:
    if plan.division != "closed":
        return
    for entry in plan.entries:
        allowed = _SYSTEM_TYPES_OF.get(entry.benchmark)
        if allowed is not None and system_type not in allowed:
            raise ConfigError(
                f"system_type: {system_type!r} has no {entry.benchmark} in MLPerf's closed "
                f"division (allowed: {', '.join(allowed)}); set system_type: edge in the "
                "--system-description"
            )
