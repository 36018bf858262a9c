"""What makes a reproduction not comparable with its record, and what may explain a difference.

Pure functions over two results (recorded first): each difference is one line,
`what: recorded != reproduced`, as `harness compare` writes them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from harness.analysis.compare import IGNORED_SETTINGS
from harness.config import ScenarioName
from harness.records.fingerprint import compare_fingerprints
from harness.records.measures import CalibrationRecord
from harness.records.result import RunResult, SettingValue

Settings = Mapping[str, SettingValue]
# Clocks are not in the fingerprint's comparability fields (the current one changes by the
# second), yet a lower maximum or a throttled clock explains a slower reproduction.
CLOCK_KEYS = ("max_mhz", "scaling_max_mhz")
CURRENT_CLOCK_KEY = "current_mhz"
CURRENT_CLOCK_CHANGE = 0.05  # the current clock is listed when it moved by more than this
HARNESS_KEYS = ("git_commit", "git_dirty")


def comparability_problems(
    recorded: RunResult,
    reproduced: RunResult,
    recorded_settings: Settings,
    reproduced_settings: Settings,
) -> list[str]:
    """Each difference in what was measured (model, precision, settings): not comparable."""
    r, p = recorded, reproduced
    lines = [
        *_differs("model sha256 (the measured file)", r.model.sha256, p.model.sha256),
        *_differs("source model sha256", r.precision.source_sha256, p.precision.source_sha256),
        *_differs("precision", r.model.precision, p.model.precision),
        *_differs("precision recipe", _recipe(r), _recipe(p)),
        *_differs(
            "calibration",
            _calibration(r.precision.calibration),
            _calibration(p.precision.calibration),
        ),
        *_differs("scenario", r.scenario, p.scenario),
        *_differs("profile", r.outcome.profile, p.outcome.profile),
        *_differs("batch size", r.batch_size, p.batch_size),
        *_differs("model dims", dict(r.model.dims), dict(p.model.dims)),
        *_differs("hardware target", r.hardware.target, p.hardware.target),
        *_differs("providers", list(r.providers), list(p.providers)),
    ]
    return lines + settings_differences(r.scenario, recorded_settings, reproduced_settings)


def settings_differences(
    scenario: ScenarioName, recorded: Settings, reproduced: Settings
) -> list[str]:
    """LoadGen's effective settings that differ, leaving out those derived from the speed.

    The expected QPS or latency comes from each run's own warm-up (and the Offline query size
    from it). Server's target_qps is the exception: the job fixes the rate.
    """
    ignored = IGNORED_SETTINGS - {"target_qps"} if scenario == "Server" else IGNORED_SETTINGS
    lines: list[str] = []
    for key in sorted((set(recorded) | set(reproduced)) - ignored):
        lines += _differs(f"LoadGen setting {key}", recorded.get(key), reproduced.get(key))
    return lines


def explanations(recorded: RunResult, reproduced: Sequence[RunResult]) -> list[str]:
    """Hardware, software and machine-state differences: what could explain another number.

    The fingerprint's comparability fields (CPU model, ISA, usable CPUs, governor, turbo,
    memory, kernel, packages, providers, GPUs and their drivers, the image), the clocks, the
    harness's version and commit, LoadGen's mlperf.conf, and the preflight problems one side
    had and the other did not (a busy machine). Listed always, never used to refuse.
    """
    if not reproduced:
        return []
    r, p = recorded, reproduced[0]
    lines = [*compare_fingerprints(r.fingerprint, p.fingerprint), *_clocks(r, p)]
    for key in HARNESS_KEYS:
        lines += _differs(
            f"harness.{key}",
            r.fingerprint.section("harness").get(key),
            p.fingerprint.section("harness").get(key),
        )
    lines += _differs("harness version", r.versions.harness, p.versions.harness)
    lines += _differs(
        "official mlperf.conf sha256",
        r.loadgen_config.mlperf_conf_sha256[:12],
        p.loadgen_config.mlperf_conf_sha256[:12],
    )
    lines += _differs("image", _image(r), _image(p))
    before, after = _preflight([r]), _preflight(reproduced)
    lines += [f"recorded preflight: {m}" for m in before if m not in after]
    lines += [f"reproduction preflight: {m}" for m in after if m not in before]
    return lines


def _clocks(r: RunResult, p: RunResult) -> list[str]:
    left, right = r.fingerprint.section("cpu"), p.fingerprint.section("cpu")
    lines: list[str] = []
    for key in CLOCK_KEYS:
        lines += _differs(f"cpu.{key}", left.get(key), right.get(key))
    a, b = left.get(CURRENT_CLOCK_KEY), right.get(CURRENT_CLOCK_KEY)
    if not (isinstance(a, int | float) and isinstance(b, int | float) and a > 0):
        return lines
    if abs(b - a) / a > CURRENT_CLOCK_CHANGE:
        lines.append(f"cpu.{CURRENT_CLOCK_KEY} (at collection): {a!r} != {b!r}")
    return lines


def _preflight(results: Sequence[RunResult]) -> list[str]:
    seen: dict[str, None] = {}
    for result in results:
        for record in result.preflight:
            seen.setdefault(record.message, None)
    return list(seen)


def _image(result: RunResult) -> str | None:
    return None if result.image is None else result.image.tag


def _recipe(result: RunResult) -> str:
    recipe = result.precision.recipe
    return f"{recipe.method} {json.dumps(dict(recipe.params), sort_keys=True)}"


def _calibration(record: CalibrationRecord | None) -> str | None:
    """The calibration set in one line: its size, seed, data and the hash of its indices."""
    if record is None:
        return None
    return (
        f"{record.count} samples, seed {record.seed}, from {record.source}, "
        f"sha256 {record.sha256[:12]}, indices {_indices(record.indices)}"
    )


def _indices(indices: Sequence[int]) -> str:
    """The indices by count and hash: two sets differ here whenever they differ at all."""
    digest = hashlib.sha256(json.dumps(list(indices)).encode()).hexdigest()
    return f"{len(indices)} (sha256 {digest[:12]})"


def _differs(what: str, a: Any, b: Any) -> list[str]:
    return [] if a == b else [f"{what}: {a!r} != {b!r}"]
