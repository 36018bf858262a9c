"""CPU frequency policy: scaling driver, governor, maximum clocks, turbo/boost and SMT."""

from __future__ import annotations

from dataclasses import dataclass

from harness.fingerprint.probe import Probe

SYSCPU = "sys/devices/system/cpu"
NO_CPUFREQ = "no cpufreq driver (VM?)"
# (file, value meaning "turbo on"): intel_pstate inverts the sense of the generic boost switch.
TURBO_CONTROLS = (
    (f"{SYSCPU}/intel_pstate/no_turbo", "0"),
    (f"{SYSCPU}/cpufreq/boost", "1"),
    (f"{SYSCPU}/cpu0/cpufreq/boost", "1"),
)


@dataclass(frozen=True, kw_only=True)
class CpuFreq:
    """cpu0's frequency policy (clocks in MHz), the governor of all CPUs, turbo and SMT."""

    max_mhz: int | None
    scaling_max_mhz: int | None
    scaling_driver: str | None
    governor: str | None
    turbo: bool | None
    turbo_control: str | None
    smt_control: str | None
    smt_active: bool | None


def collect_cpufreq(probe: Probe) -> CpuFreq:
    """Frequency policy of cpu0 (and the governor of every CPU) plus turbo and SMT state."""
    base = f"{SYSCPU}/cpu0/cpufreq"
    max_khz = probe.integer(f"{base}/cpuinfo_max_freq", "cpu.max_mhz", NO_CPUFREQ)
    scaling_khz = probe.integer(f"{base}/scaling_max_freq", "cpu.scaling_max_mhz", NO_CPUFREQ)
    turbo, control = _turbo(probe)
    smt_active = probe.text(f"{SYSCPU}/smt/active", "cpu.smt_active", "kernel too old?")
    return CpuFreq(
        max_mhz=None if max_khz is None else max_khz // 1000,
        scaling_max_mhz=None if scaling_khz is None else scaling_khz // 1000,
        scaling_driver=probe.text(f"{base}/scaling_driver", "cpu.scaling_driver", NO_CPUFREQ),
        governor=_governor(probe),
        turbo=turbo,
        turbo_control=control,
        smt_control=probe.text(f"{SYSCPU}/smt/control", "cpu.smt_control", "kernel too old?"),
        smt_active=None if smt_active is None else smt_active == "1",
    )


def _governor(probe: Probe) -> str | None:
    """The governor all CPUs share, or "mixed (a, b)" when they differ."""
    paths = probe.path(SYSCPU).glob("cpu[0-9]*/cpufreq/scaling_governor")
    values = {probe.optional(probe.relative(path)) for path in paths} - {None}
    if not values:
        probe.text(f"{SYSCPU}/cpu0/cpufreq/scaling_governor", "cpu.governor", NO_CPUFREQ)
        return None
    names = sorted(str(value) for value in values)
    return names[0] if len(names) == 1 else f"mixed ({', '.join(names)})"


def _turbo(probe: Probe) -> tuple[bool | None, str | None]:
    """Whether turbo/boost is enabled, and the sysfs file that says so."""
    for rel, enabled in TURBO_CONTROLS:
        text = probe.optional(rel)
        if text is not None:
            return text == enabled, "/" + rel
    probe.note(
        "cpu.turbo",
        f"neither /{TURBO_CONTROLS[0][0]} nor /{TURBO_CONTROLS[1][0]} present: {NO_CPUFREQ}",
    )
    return None, None
