"""Collecting the environment fingerprint: each collector's section, and what was missing."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.fingerprint.cpu import collect_cpu
from harness.fingerprint.memory import collect_memory
from harness.fingerprint.probe import Probe
from harness.fingerprint.provenance import collect_harness
from harness.fingerprint.software import collect_env, collect_software
from harness.fingerprint.system import collect_container, collect_os
from harness.records.fingerprint import Fingerprint, Sections, build_fingerprint
from harness.strictjson import JsonObject


def collect_fingerprint(
    *,
    root: Path = Path("/"),
    environ: Mapping[str, str] | None = None,
    gpus: Sequence[Mapping[str, object]] = (),
    gpu_missing: Sequence[tuple[str, str]] = (),
    repo_dir: Path | None = None,
    pid: int | None = None,
) -> Fingerprint:
    """Collect the fingerprint of the machine under `root` (and of this interpreter).

    `gpus` are telemetry's inventories (fingerprint and telemetry are sibling layers), and
    `gpu_missing` the (field, reason) of what they could not read.
    """
    probe = Probe(root)
    env = os.environ if environ is None else environ
    sections = Sections(
        cpu=collect_cpu(probe, pid=pid),
        memory=collect_memory(probe, pid=pid),
        os=collect_os(probe),
        container=collect_container(probe, env, pid=pid),
        software=collect_software(probe),
        env=collect_env(env),
        gpus=tuple(_json_ready(gpu) for gpu in gpus),
        harness=collect_harness(probe, repo_dir),
    )
    for field, reason in gpu_missing:
        probe.note(field if field.startswith("gpu") else f"gpus.{field}", reason)
    return build_fingerprint(sections, probe.missing)


def _json_ready(gpu: Mapping[str, object]) -> JsonObject:
    """A plain-JSON copy of a telemetry adapter's GPU mapping (odd values become strings)."""
    result: JsonObject = json.loads(json.dumps(dict(gpu), default=str))
    return result
