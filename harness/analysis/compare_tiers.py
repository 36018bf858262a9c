"""Comparability graded in tiers: what makes two results not comparable, intended, or a caveat.

*Not comparable*: another model (its source file) or scenario. *Intended differences*:
precision, batch size, hardware, runtime (providers, onnxruntime): what a user compares on
purpose. *Caveats*: per-round seeds and other LoadGen settings, the LoadGen release, the
official mlperf.conf, a quick profile, the division of a published result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.analysis.published_side import Side, facts
from harness.records.fingerprint import compare_fingerprints
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


Tiers = tuple[list[str], list[str], list[str]]  # (not comparable, intended, caveats)


def comparability_problems(a: RunResult, b: RunResult) -> list[str]:
    """Each difference that makes comparing a with b meaningless: another model or scenario."""
    return tiers(a, b)[0]


def tiers(a: RunResult, b: RunResult) -> Tiers:
    """A against b, each difference in its tier, one line each (a's value first)."""
    same_precision = a.model.precision == b.model.precision
    not_comparable = [
        *(
            _differs("model checksum", a.model.sha256[:12], b.model.sha256[:12])
            if same_precision
            else _differs("model (source sha256)", _source(a), _source(b))
        ),
        *_differs("scenario", a.scenario, b.scenario),
    ]
    intended = [
        *_differs("precision", a.model.precision, b.model.precision),
        *_differs("batch size", a.batch_size, b.batch_size),
        *_differs("providers", ",".join(a.providers), ",".join(b.providers)),
        *_differs("onnxruntime version", a.versions.onnxruntime, b.versions.onnxruntime),
    ]
    if hardware_differences(a, b):
        intended.append("hardware: differs (listed under hardware differences)")
    caveats = [
        *_quick(a.outcome.profile, b.outcome.profile),
        *_differs("mlcommons-loadgen release", a.versions.loadgen, b.versions.loadgen),
        *_differs(
            "official mlperf.conf sha256",
            a.loadgen_config.mlperf_conf_sha256[:12],
            b.loadgen_config.mlperf_conf_sha256[:12],
        ),
    ]
    for key in sorted((set(a.settings) | set(b.settings)) - IGNORED_SETTINGS):
        caveats += _differs(f"LoadGen setting {key}", a.settings.get(key), b.settings.get(key))
    return not_comparable, intended, caveats


def _source(r: RunResult) -> str:
    """The model a run measured, as its source file: a converted precision keeps its source."""
    return f"{r.model.name} {(r.precision.source_sha256 or r.model.sha256)[:12]}"


def _quick(a: str, b: str) -> list[str]:
    """A quick profile on either side: a shortened run, not valid for a submission."""
    if "quick" not in (a, b):
        return []
    if a == b:
        return ["quick profile on both sides: shortened LoadGen runs, NOT submission-valid"]
    return [f"profile: {a!r} != {b!r} (the quick run is shortened, NOT submission-valid)"]


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


def published_differences(a: Side, b: Side) -> tuple[list[str], list[str], list[str]]:
    """(not comparable, hardware, environment) of a pair where one side or both are published."""
    found, hardware, environment = published_tiers(a, b)
    return found[0], hardware, environment


def published_tiers(a: Side, b: Side) -> tuple[Tiers, list[str], list[str]]:
    """(tiers, hardware, environment) of a pair where one side or both are published.

    The local rules, read from both sides: benchmark (LoadGen's model key), precision,
    scenario, profile (a published result ran under MLPerf's rules: submission), LoadGen
    release and the LoadGen settings both logged; and the division when both have one.
    A published side's hardware is always listed: it is never the same machine.
    """
    fa, fb = facts(a), facts(b)
    if fa is None or fb is None:
        return (["no results to compare (the sweep measured no point)"], [], []), [], []
    not_comparable = [
        *_differs("benchmark (LoadGen model key)", fa.model, fb.model),
        *_differs("scenario", fa.scenario, fb.scenario),
    ]
    intended = [*_precision(fa.precision, fb.precision), "hardware: another system"]
    caveats = [
        *(_differs("division", fa.division, fb.division) if fa.division and fb.division else []),
        *_quick(fa.profile, fb.profile),
        *_differs("mlcommons-loadgen release", fa.loadgen, fb.loadgen),
    ]
    both = (set(fa.settings) & set(fb.settings)) - IGNORED_SETTINGS
    for key in sorted(both):
        caveats += _differs(f"LoadGen setting {key}", fa.settings[key], fb.settings[key])
    environment = [f"software: {fa.software} vs {fb.software}"]
    one_side = sorted((set(fa.settings) ^ set(fb.settings)) - IGNORED_SETTINGS)
    if one_side:
        environment.append(
            "LoadGen settings only one side logged (another LoadGen): " + ", ".join(one_side)
        )
    found = (not_comparable, intended, caveats)
    return found, [f"{fa.hardware} vs {fb.hardware}"], environment


def _precision(a: str | None, b: str | None) -> list[str]:
    if a is None and b is None:
        return ["precision: stated by neither published result"]
    if a is None or b is None:
        return [f"precision: {a!r} != {b!r} (the published result does not state its own)"]
    return _differs("precision", a, b)


def _differs(what: str, a: Any, b: Any) -> list[str]:
    return [] if a == b else [f"{what}: {a!r} != {b!r}"]


def _fingerprint_lines(a: RunResult, b: RunResult) -> list[str]:
    return compare_fingerprints(a.fingerprint, b.fingerprint)
