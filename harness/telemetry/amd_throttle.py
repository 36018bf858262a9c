"""AMD throttle reasons from amdsmi's gpu_metrics: status bits and residency accumulators."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# ASIC-independent throttlers in gpu_metrics' indep_throttle_status: (first bit, names of it
# and the bits after it), as the Linux amdgpu driver defines them (SMU_THROTTLER_*_BIT).
_THROTTLER_GROUPS = (
    (0, "ppt0 ppt1 ppt2 ppt3 spl fppt sppt sppt_apu"),
    (16, "tdc_gfx tdc_soc tdc_mem tdc_vdd tdc_cvip edc_cpu edc_gfx apcc"),
    (32, "temp_gpu temp_core temp_mem temp_edge temp_hotspot temp_soc temp_vr_gfx temp_vr_soc"),
    (40, "temp_vr_mem0 temp_vr_mem1 temp_liquid0 temp_liquid1 vrhot0 vrhot1"),
    (46, "prochot_cpu prochot_gfx"),
    (56, "ppm fit"),
)
INDEP_THROTTLE_BITS = {
    first + offset: name
    for first, names in _THROTTLER_GROUPS
    for offset, name in enumerate(names.split())
}
# MI300-class GPUs (gpu_metrics 1.6 and newer) count throttling in residency accumulators and
# may leave the status bits "N/A": (gpu_metrics accumulator, amdsmi_get_violation_status flag,
# our name in the style of the bits above). An accumulator grows while its limiter holds the
# clocks down.
VIOLATIONS = (
    ("prochot_residency_acc", "active_prochot_thrm", "prochot"),
    ("ppt_residency_acc", "active_ppt_pwr", "ppt"),
    ("socket_thm_residency_acc", "active_socket_thrm", "temp_socket"),
    ("vr_thm_residency_acc", "active_vr_thrm", "temp_vr"),
    ("hbm_thm_residency_acc", "active_hbm_thrm", "temp_hbm"),
)
ACCUMULATION_KEY = "accumulation_counter"  # firmware ticks: counters only move when it does
THROTTLED = "throttled"  # throttling whose reason amdsmi does not name


def decode_indep_throttle(mask: int) -> tuple[str, ...]:
    """Names of the throttlers set in an indep_throttle_status bitmask."""
    return tuple(
        INDEP_THROTTLE_BITS.get(bit, f"unknown_bit{bit}") for bit in range(64) if mask >> bit & 1
    )


def throttle_reasons(
    metrics: Mapping[str, Any] | None, previous: Mapping[str, int] | None = None
) -> tuple[str, ...] | None:
    """Active throttlers from gpu_metrics: () when none, None when amdsmi cannot tell.

    amdsmi reports indep_throttle_status as a bool (older releases: the raw bitmask, decoded
    here), or "N/A". The residency accumulators that grew since `previous` (the residency()
    of the last read) name the reasons a bool leaves out, and stand in for an "N/A" status.
    """
    if metrics is None:
        return None
    status = _throttle_status(metrics)
    if isinstance(status, tuple):
        return status
    grown = None if previous is None else grown_residency(previous, residency(metrics))
    if status is None:
        return grown
    return (grown or (THROTTLED,)) if status else ()


def _throttle_status(metrics: Mapping[str, Any]) -> bool | tuple[str, ...] | None:
    indep = metrics.get("indep_throttle_status")
    if isinstance(indep, int) and not isinstance(indep, bool):
        return decode_indep_throttle(indep)
    # throttle_status is the ASIC-specific mask (a bool in amdsmi 7): only whether any bit is set
    for value in (indep, metrics.get("throttle_status")):
        if isinstance(value, int):
            return bool(value)
    return None


def residency(metrics: Mapping[str, Any] | None) -> dict[str, int]:
    """The residency accumulators and the accumulation counter a gpu_metrics read reports."""
    keys = [*((acc, name) for acc, _, name in VIOLATIONS), (ACCUMULATION_KEY, ACCUMULATION_KEY)]
    values = {name: (metrics or {}).get(key) for key, name in keys}
    return {k: v for k, v in values.items() if isinstance(v, int) and not isinstance(v, bool)}


def grown_residency(before: Mapping[str, int], after: Mapping[str, int]) -> tuple[str, ...] | None:
    """Throttlers whose residency grew between two reads; None when the reads cannot tell."""
    ticks = (before.get(ACCUMULATION_KEY), after.get(ACCUMULATION_KEY))
    if ticks[0] is not None and ticks[1] is not None and ticks[1] <= ticks[0]:
        return None  # the firmware has not updated the metrics (or restarted) in between
    shared = [name for _, _, name in VIOLATIONS if name in before and name in after]
    if not shared:
        return None
    return tuple(name for name in shared if after[name] > before[name])


def active_violations(status: Mapping[str, Any] | None) -> tuple[str, ...] | None:
    """Throttlers an amdsmi_get_violation_status result flags active; None when it flags none."""
    flags = {name: (status or {}).get(flag) for _, flag, name in VIOLATIONS}
    known = {name: flag for name, flag in flags.items() if isinstance(flag, bool)}
    return tuple(name for name, flag in known.items() if flag) if known else None
