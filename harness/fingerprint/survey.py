"""The machine a run is about to use: its fingerprint, and what is wrong with it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.config import ProfileName
from harness.fingerprint.fingerprint import collect_fingerprint
from harness.fingerprint.preflight import PreflightWarning, enforce_strict, preflight
from harness.records.fingerprint import Fingerprint


@dataclass(frozen=True, kw_only=True)
class Survey:
    """The machine a run is about to use, and what is wrong with it."""

    fingerprint: Fingerprint
    warnings: tuple[PreflightWarning, ...]


def survey(
    *,
    gpus: Sequence[Mapping[str, object]],
    gpu_missing: Sequence[tuple[str, str]],
    profile: ProfileName | None,
    strict: bool = False,
    checks: bool = True,
) -> Survey:
    """Fingerprint the machine and run the preflight checks; `strict` turns warnings into errors.

    The GPUs come from telemetry's vendor adapters (`telemetry.gpu_inventory`), read by the
    caller: fingerprint and telemetry are sibling layers. `checks=False` skips the preflight
    (it samples the CPUs for half a second) where nobody reads its warnings.
    """
    fingerprint = collect_fingerprint(gpus=list(gpus), gpu_missing=list(gpu_missing))
    warnings = preflight(fingerprint, profile=profile or "none") if checks or strict else []
    if strict:
        enforce_strict(warnings)
    return Survey(fingerprint=fingerprint, warnings=tuple(warnings))


def image_info(environ: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The harness image this run is in, as the container launcher handed it over."""
    env = os.environ if environ is None else environ
    image_id = env.get("BEYOND_TOPS_IMAGE_ID")
    if not image_id:
        return None
    return {"id": image_id, "tag": env.get("BEYOND_TOPS_IMAGE_TAG", "")}
