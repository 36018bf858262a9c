"""Which power sources a machine offers for a hardware target, and why the others are missing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.hardware import HW_NAMES, TARGETS, HardwareTarget, TelemetrySource
from harness.telemetry.amd import amd_inventory, amd_sources
from harness.telemetry.base import Closable, PowerSource
from harness.telemetry.external import command_meter, csv_meter
from harness.telemetry.nvml import nvml_sources
from harness.telemetry.nvml_inventory import nvml_inventory
from harness.telemetry.rapl import rapl_sources

NO_WALL_METER = (
    "no external meter given (a command printing watts, or a timestamp,watts CSV); "
    "wall power, which MLPerf Power reports, is not measured"
)


def discover_sources(
    *,
    hw: str,
    root: Path = Path("/"),
    external_command: Sequence[str] | None = None,
    external_csv: Path | None = None,
) -> tuple[list[PowerSource], list[tuple[str, str]]]:
    """Usable sources and (source, reason) for each unavailable one.

    The target's telemetry sources are tried in its order (harness.hardware: RAPL for every
    target, NVML for nvidia, amdsmi for rocm), the external meter when one is given (an argv,
    run without a shell: the caller checks the user allowed it). GPU sources hold a vendor
    session: release it with close_sources().
    """
    sources: list[PowerSource] = []
    missing: list[tuple[str, str]] = []
    for kind in _target(hw).telemetry:
        found, why = _sources(kind, root)
        sources += found
        missing += why
    if external_command is not None:
        meter, reason = command_meter(external_command)
        _add(sources, missing, meter, reason)
    if external_csv is not None:
        logged, reason = csv_meter(external_csv)
        _add(sources, missing, logged, reason)
    if external_command is None and external_csv is None:
        missing.append(("wall", NO_WALL_METER))
    return sources, missing


def _sources(
    kind: TelemetrySource, root: Path
) -> tuple[Sequence[PowerSource], list[tuple[str, str]]]:
    """The sources, and reasons for the missing ones, of one of harness.hardware's kinds."""
    if kind == "nvml":
        return nvml_sources()
    if kind == "amdsmi":
        return amd_sources()
    return rapl_sources(root)


def _add(
    sources: list[PowerSource],
    missing: list[tuple[str, str]],
    source: PowerSource | None,
    reason: str,
) -> None:
    if source is None:
        missing.append(("wall", reason))
    elif any(s.name == source.name for s in sources):
        missing.append((source.name, "a second wall meter was given; only the first is used"))
    else:
        sources.append(source)


def gpu_inventory(hw: str) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Static GPU facts for the fingerprint, and (field, reason) for each that failed.

    Each dict has index, vendor, name, uuid, driver and memory facts, power limits, clocks,
    ECC, persistence and MIG modes, PCIe, compute mode, "processes" and
    "throttle_reasons_active"; an unreadable field is None with its reason listed.
    """
    for kind in _target(hw).telemetry:
        if kind == "nvml":
            return nvml_inventory()
        if kind == "amdsmi":
            return amd_inventory()
    return [], []


def close_sources(sources: Iterable[object]) -> None:
    """Release the vendor sessions the sources hold (NVML, amdsmi)."""
    for source in sources:
        if isinstance(source, Closable):
            source.close()


def _target(hw: str) -> HardwareTarget:
    if hw not in TARGETS:
        raise ConfigError(
            f"telemetry: unknown hardware target '{hw}' (allowed: {', '.join(HW_NAMES)})"
        )
    return TARGETS[hw]
