"""The NVIDIA GPU inventory for the fingerprint, read through NVML: static facts per GPU."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.telemetry import nvml


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _cuda_version(value: int) -> str:
    return f"{value // 1000}.{value % 1000 // 10}"


def _processes(handle: Any) -> list[dict[str, Any]]:
    calls = (
        ("compute", nvml.pynvml.nvmlDeviceGetComputeRunningProcesses),
        ("graphics", nvml.pynvml.nvmlDeviceGetGraphicsRunningProcesses),
    )
    found = []
    for kind, call in calls:
        try:
            procs = call(handle)
        except nvml._k().not_supported:
            continue
        for proc in procs:
            memory = proc.usedGpuMemory
            mib = None if memory is None else int(memory) // 2**20
            found.append({"pid": int(proc.pid), "type": kind, "used_memory_mib": mib})
    return found


_GPU_FIELDS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("name", lambda h: _text(nvml.pynvml.nvmlDeviceGetName(h))),
    ("uuid", lambda h: _text(nvml.pynvml.nvmlDeviceGetUUID(h))),
    ("pci_bus_id", lambda h: _text(nvml.pynvml.nvmlDeviceGetPciInfo(h).busId)),
    ("memory_total_mib", lambda h: int(nvml.pynvml.nvmlDeviceGetMemoryInfo(h).total) // 2**20),
    ("power_limit_w", lambda h: nvml.pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000),
    (
        "power_limit_default_w",
        lambda h: nvml.pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1000,
    ),
    ("power_limit_enforced_w", lambda h: nvml.pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000),
    (
        "clock_sm_default_mhz",
        lambda h: nvml.pynvml.nvmlDeviceGetDefaultApplicationsClock(h, nvml._k().clock_sm),
    ),
    (
        "clock_mem_default_mhz",
        lambda h: nvml.pynvml.nvmlDeviceGetDefaultApplicationsClock(h, nvml._k().clock_mem),
    ),
    ("clock_sm_max_mhz", lambda h: nvml.pynvml.nvmlDeviceGetMaxClockInfo(h, nvml._k().clock_sm)),
    ("clock_mem_max_mhz", lambda h: nvml.pynvml.nvmlDeviceGetMaxClockInfo(h, nvml._k().clock_mem)),
    ("ecc_enabled", lambda h: nvml.pynvml.nvmlDeviceGetEccMode(h)[0] == nvml._k().feature_enabled),
    (
        "persistence_mode",
        lambda h: nvml.pynvml.nvmlDeviceGetPersistenceMode(h) == nvml._k().feature_enabled,
    ),
    (
        "mig_mode",
        lambda h: (
            "enabled"
            if nvml.pynvml.nvmlDeviceGetMigMode(h)[0] == nvml._k().mig_enabled
            else "disabled"
        ),
    ),
    ("pcie_gen", lambda h: nvml.pynvml.nvmlDeviceGetCurrPcieLinkGeneration(h)),
    ("pcie_width", lambda h: nvml.pynvml.nvmlDeviceGetCurrPcieLinkWidth(h)),
    ("pcie_gen_max", lambda h: nvml.pynvml.nvmlDeviceGetMaxPcieLinkGeneration(h)),
    ("pcie_width_max", lambda h: nvml.pynvml.nvmlDeviceGetMaxPcieLinkWidth(h)),
    (
        "compute_mode",
        lambda h: nvml._k().compute_modes.get(nvml.pynvml.nvmlDeviceGetComputeMode(h), "unknown"),
    ),
    ("processes", _processes),
    ("throttle_reasons_active", lambda h: list(nvml.decode_reasons(nvml.current_reasons_mask(h)))),
)


def nvml_inventory() -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Static facts per NVIDIA GPU for the fingerprint, and (field, reason) for what failed."""
    reason = nvml._init_reason()
    if reason is not None:
        return [], [("nvml", reason)]
    try:
        return _inventory()
    finally:
        nvml._shutdown()


def _inventory() -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    missing: list[tuple[str, str]] = []
    system = {
        "driver_version": _field(
            missing, "driver_version", lambda: _text(nvml.pynvml.nvmlSystemGetDriverVersion())
        ),
        "cuda_driver_version": _field(
            missing,
            "cuda_driver_version",
            lambda: _cuda_version(nvml.pynvml.nvmlSystemGetCudaDriverVersion()),
        ),
    }
    try:
        count = int(nvml.pynvml.nvmlDeviceGetCount())
    except nvml._k().error as err:
        return [], [*missing, ("nvml", f"cannot enumerate GPUs: {nvml._describe(err)}")]
    gpus = []
    for index in range(count):
        try:
            handle = nvml.pynvml.nvmlDeviceGetHandleByIndex(index)
        except nvml._k().error as err:
            missing.append((f"gpu{index}", nvml._describe(err)))
            continue
        info: dict[str, Any] = {"index": index, "vendor": "nvidia", **system}
        for key, read in _GPU_FIELDS:
            info[key] = _field(missing, f"gpu{index}.{key}", read, handle)
        gpus.append(info)
    return gpus, missing


def _field(missing: list[tuple[str, str]], label: str, read: Callable[..., Any], *args: Any) -> Any:
    """One fact, or None with its reason appended to missing."""
    try:
        return read(*args)
    except nvml._k().not_supported:
        missing.append((label, "not supported on this GPU or driver"))
    except nvml._k().error as err:
        missing.append((label, nvml._describe(err)))
    return None
