"""A local group or a published MLPerf result as one side of a comparison: what the rules read."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from harness.records.group import Group
from harness.records.published import PublishedResult
from harness.records.result import SettingValue

# What `harness compare` puts side by side: local groups, and published MLPerf results.
Side = Group | PublishedResult


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What the fairness rules read of a local run or a published result."""

    model: str  # LoadGen's model key
    precision: str | None
    scenario: str
    division: str | None  # None: a local run, in no division
    profile: str  # published results ran under MLPerf's rules: "submission"
    loadgen: str | None  # release, major.minor
    settings: Mapping[str, SettingValue]
    hardware: str
    software: str


def facts(side: Side) -> Facts | None:
    """The facts of a side; None for a sweep that measured no point."""
    if isinstance(side, PublishedResult):
        s = side.system
        return Facts(
            model=side.model,
            precision=side.harness_precision,
            scenario=side.scenario,
            division=side.division,
            profile="submission",
            loadgen=_release(side.loadgen_version),
            settings=side.settings,
            hardware=f"{side.org} {s.id}: "
            + (", ".join(s.devices) or "not stated")
            + " (published; not this machine)",
            software="; ".join(x for x in (s.framework, s.software) if x) or "not stated",
        )
    if not side.results:
        return None
    r = side.results[0]
    gpus = f", {', '.join(r.hardware.gpus)}" if r.hardware.gpus else ""
    return Facts(
        model=r.loadgen_config.model_key,
        precision=r.model.precision,
        scenario=r.scenario,
        division=None,
        profile=r.outcome.profile,
        loadgen=_release(r.versions.loadgen),
        settings=r.settings,
        hardware=f"local {r.hardware.target}: {r.hardware.cpu_model or 'CPU not read'} "
        f"({r.hardware.usable_cpus} usable CPUs){gpus}",
        software=f"onnxruntime {r.versions.onnxruntime} ({', '.join(r.providers)})",
    )


def _release(version: str | None) -> str | None:
    """LoadGen's major.minor: "6.0" of "6.0.17" and of a detail log's "6.0 @ 1a2b3c"."""
    match = re.match(r"\s*(\d+\.\d+)", version or "")
    return match.group(1) if match else version


def published_column(p: PublishedResult) -> dict[str, str]:
    """A published result's values of the comparison's info rows, labelled as published."""
    return {
        "source": p.label,
        "kind": "published",
        "scenario": f"{p.benchmark} ({p.scenario})",
        "batch size": "n/a (published)",
        "trials": "n/a (published)",
        "profile": f"MLPerf rules, {p.division} division",
        "LoadGen verdict": p.verdict,
        "providers": p.system.framework or "not stated",
        "model": f"{p.model} {p.harness_precision or '(precision not stated)'}",
        "fingerprint": "n/a (not measured here)",
    }
