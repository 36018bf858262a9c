"""Checks run before every benchmark: each finding is a one-line warning that says how to fix it."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import PreflightError
from harness.fingerprint.busy import Sleep, other_busy_cpus
from harness.fingerprint.own_process import OwnProcess, own_process
from harness.fingerprint.probe import Probe
from harness.records.fingerprint import Fingerprint
from harness.records.fingerprint_sections import CpuInfo, GpuInfo, GpuProcess, MemoryInfo

# The warning every quick-profile run carries (the command says it once; result.json keeps it).
QUICK_PROFILE = "quick_profile"
DEFAULT_LOAD_THRESHOLD = 0.5  # of the usable CPUs busy with other work than this harness
# How to switch turbo off, by the sysfs file that reported it on.
TURBO_OFF = {
    "/sys/devices/system/cpu/intel_pstate/no_turbo": "1",
    "/sys/devices/system/cpu/cpufreq/boost": "0",
    "/sys/devices/system/cpu/cpu0/cpufreq/boost": "0",
}
# Where the throttle reasons are shown in full, by the inventory's "vendor".
THROTTLE_TOOLS = {"nvidia": "nvidia-smi -q -d PERFORMANCE", "amd": "amd-smi metric --throttle"}


@dataclass(frozen=True, kw_only=True)
class PreflightWarning:
    """Something about the machine that can distort a benchmark, and how to fix it."""

    code: str
    message: str

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, str]:
        """JSON form: {"code": ..., "message": ...}."""
        return {"code": self.code, "message": self.message}


def preflight(
    fp: Fingerprint,
    *,
    root: Path = Path("/"),
    profile: str = "quick",
    load_threshold: float = DEFAULT_LOAD_THRESHOLD,
    pid: int | None = None,
    sleep: Sleep = time.sleep,
) -> list[PreflightWarning]:
    """Every warning for a run on the machine `fp` describes, in a fixed order.

    `pid` is the harness's process (default: this one), whose own GPU context is no
    "other process" and whose process tree's CPU time is no "other work"; `sleep` waits
    out the window the CPU load is sampled over.
    """
    cpu, memory = fp.cpu, fp.memory
    probe = Probe(root)
    found = [
        _governor(cpu),
        _turbo(cpu),
        _load(other_busy_cpus(probe, pid, sleep=sleep), cpu, load_threshold),
        _cgroup_quota(cpu),
        _swap(memory),
    ]
    me = own_process(probe, pid)
    for index, gpu in enumerate(fp.gpu_info):
        label = _gpu_label(gpu, index)
        found.append(_gpu_processes(gpu, label, me))
        found.extend(check(gpu, label) for check in GPU_CHECKS)
    if profile == "quick":
        found.append(
            PreflightWarning(
                code=QUICK_PROFILE,
                message="quick profile: shortened LoadGen run, NOT valid for an MLPerf "
                "submission; use `--profile submission` for a valid result",
            )
        )
    return [warning for warning in found if warning is not None]


def enforce_strict(warnings: Sequence[PreflightWarning]) -> None:
    """Raise PreflightError listing the warnings, if there are any (for `--strict`)."""
    if warnings:
        listed = "; ".join(str(w) for w in warnings)
        raise PreflightError(f"preflight failed under --strict ({len(warnings)}): {listed}")


def _governor(cpu: CpuInfo) -> PreflightWarning | None:
    governor = cpu.governor
    if governor is None or governor == "performance":
        return None
    return PreflightWarning(
        code="governor",
        message=f"CPU governor is {governor!r}, not 'performance': "
        "run `sudo cpupower frequency-set -g performance`",
    )


def _turbo(cpu: CpuInfo) -> PreflightWarning | None:
    control = cpu.turbo_control
    if cpu.turbo is not True or control is None or control not in TURBO_OFF:
        return None
    return PreflightWarning(
        code="turbo",
        message=f"turbo/boost is on ({control}): clocks follow temperature and load, so "
        f"results vary; for steadier numbers run `echo {TURBO_OFF[control]} | sudo tee {control}`",
    )


def _load(busy: float | None, cpu: CpuInfo, threshold: float) -> PreflightWarning | None:
    if busy is None:
        return PreflightWarning(
            code="load",
            message="cannot read /proc/stat: whether other work is running is unknown",
        )
    usable = cpu.usable_cpus or 1
    limit = threshold * usable
    if busy <= limit:
        return None
    return PreflightWarning(
        code="load",
        message=f"other processes keep {busy:.2f} CPUs busy, above {limit:g} ({threshold:g} x "
        f"{usable} usable CPUs, this harness not counted): other work is running; stop it or "
        "wait for it before benchmarking",
    )


def _cgroup_quota(cpu: CpuInfo) -> PreflightWarning | None:
    quota = cpu.cgroup_cpu_quota
    visible = cpu.affinity_cpus or cpu.online_cpus
    if quota is None or visible is None or quota >= visible:
        return None
    return PreflightWarning(
        code="cgroup_quota",
        message=f"cgroup CPU quota is {quota:g} CPUs but {visible} CPUs are visible: thread "
        f"pools sized to {visible} get throttled; raise the quota (`docker run "
        f"--cpus {visible}`) or set runtime.intra_op_threads to {cpu.usable_cpus}",
    )


def _swap(memory: MemoryInfo) -> PreflightWarning | None:
    used = memory.swap_used_bytes
    if not used:
        return None
    return PreflightWarning(
        code="swap",
        message=f"{used / 2**20:.0f} MiB of swap in use: paging can stall the run; free memory "
        "and run `sudo swapoff -a && sudo swapon -a` to bring it back into RAM",
    )


def _gpu_label(gpu: GpuInfo, position: int) -> str:
    index = position if gpu.index is None else gpu.index
    name = gpu.name
    return f"GPU {index} ({name})" if name else f"GPU {index}"


def _gpu_processes(gpu: GpuInfo, label: str, me: OwnProcess) -> PreflightWarning | None:
    """Processes on the GPU other than this harness.

    In a container the driver's PIDs are host PIDs that this process cannot map to itself;
    then, if a GPU runtime is up here, one of them may be the harness (a session from an
    earlier run in this process): a lone one is not flagged, more are, with that caveat.
    """
    listed = _distinct(gpu.processes)
    others = [p for p in listed if p.pid not in me.pids]
    maybe_me = not me.host_pids and me.gpu_runtime and len(others) == len(listed)
    if len(others) <= (1 if maybe_me else 0):
        return None
    shown = ", ".join(_process_text(p) for p in others[:3])
    more = f" and {len(others) - 3} more" if len(others) > 3 else ""
    count = f"{len(others) - 1} or {len(others)}" if maybe_me else f"{len(others)}"
    note = "" if me.host_pids else "; host PIDs"
    note += ", one of them maybe this harness" if maybe_me else ""
    return PreflightWarning(
        code="gpu_processes",
        message=f"{label} runs {count} other process(es) ({shown}{more}{note}): stop them "
        "or pick another GPU with CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES",
    )


def _distinct(processes: Sequence[GpuProcess]) -> list[GpuProcess]:
    """One entry per PID: NVML lists a process with compute and graphics work twice."""
    seen: set[int] = set()
    kept = []
    for process in processes:
        if process.pid is None or process.pid not in seen:
            kept.append(process)
        if process.pid is not None:
            seen.add(process.pid)
    return kept


def _process_text(process: GpuProcess) -> str:
    pid, name = process.pid, process.name
    return " ".join(part for part in (f"pid {pid}" if pid else "", name or "") if part) or "?"


def _gpu_throttling(gpu: GpuInfo, label: str) -> PreflightWarning | None:
    # An idle GPU always reports "idle"; before the run that is expected, not throttling.
    reasons = [r for r in gpu.throttle_reasons_active if "idle" not in r.lower()]
    if not reasons:
        return None
    tool = THROTTLE_TOOLS.get(str(gpu.vendor), THROTTLE_TOOLS["nvidia"])
    return PreflightWarning(
        code="gpu_throttling",
        message=f"{label} is already throttling ({', '.join(reasons)}): let it cool down "
        f"and check its power cap and clocks (`{tool}`)",
    )


def _gpu_persistence(gpu: GpuInfo, label: str) -> PreflightWarning | None:
    if gpu.persistence_mode is not False:
        return None
    return PreflightWarning(
        code="gpu_persistence",
        message=f"{label} has persistence mode off: the driver re-initialises the GPU "
        "between runs; run `sudo nvidia-smi -pm 1`",
    )


# Checks of one GPU's mapping alone (the processes check also needs this process).
GPU_CHECKS: tuple[Callable[[GpuInfo, str], PreflightWarning | None], ...] = (
    _gpu_throttling,
    _gpu_persistence,
)
