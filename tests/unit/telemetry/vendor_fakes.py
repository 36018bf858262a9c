"""What the fake NVML and amdsmi return, as data that the contract tests check against the real
libraries: an H100 and an MI300X, each in the types and units its library really returns.

Device handles stay strings ("handle0", "h0"): the adapters only pass them back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pynvml as nv


@dataclass(frozen=True)
class Answer:
    """A fake vendor function's return value for some arguments (those after the handle)."""

    fn: str
    returns: Any
    args: tuple[Any, ...] = ()
    handle: bool = True  # whether the function takes a device handle first


def install(module: mock.NonCallableMagicMock, answers: Sequence[Answer]) -> None:
    """Make an autospec'd vendor module answer as `answers` say (replacing earlier answers)."""
    for fn in dict.fromkeys(a.fn for a in answers):
        mine = [a for a in answers if a.fn == fn]
        target = getattr(module, fn)
        if all(not a.args for a in mine):
            target.side_effect, target.return_value = None, mine[-1].returns
        else:
            target.side_effect = _dispatch(fn, mine)


def _dispatch(fn: str, answers: Sequence[Answer]) -> Any:
    def answer(*args: Any) -> Any:
        wanted = args[1:] if answers[0].handle else args
        for a in answers:
            if a.args == wanted:
                return a.returns
        raise AssertionError(f"fake {fn} has no answer for {wanted!r}")

    return answer


def nvml_field(value: int, *, ret: int = nv.NVML_SUCCESS) -> Any:
    """A real c_nvmlFieldValue_t carrying NVML_FI_DEV_POWER_INSTANT (mW), as NVML fills it."""
    fv = nv.c_nvmlFieldValue_t()
    fv.fieldId, fv.nvmlReturn = nv.NVML_FI_DEV_POWER_INSTANT, ret
    fv.valueType, fv.value.uiVal = nv.NVML_VALUE_TYPE_UNSIGNED_INT, value
    return fv


def nvml_process(pid: int, used_bytes: int | None) -> Any:
    """A running process as pynvml returns it: a friendly object; memory None when unknown."""
    proc = nv.nvmlStructToFriendlyObject(
        nv.c_nvmlProcessInfo_v3_t(pid=pid, usedGpuMemory=used_bytes or 0)
    )
    if used_bytes is None:
        proc.usedGpuMemory = None  # as pynvml does for NVML_VALUE_NOT_AVAILABLE
    return proc


# One H100 drawing 612.345 W (instant field) / 600 W (1 s average), both in mW as NVML gives.
H100_LIVE = (
    Answer("nvmlDeviceGetCount", 1, handle=False),
    Answer("nvmlDeviceGetTotalEnergyConsumption", 98_765_432),  # mJ
    Answer("nvmlDeviceGetFieldValues", [nvml_field(612_345)], ([nv.NVML_FI_DEV_POWER_INSTANT],)),
    Answer("nvmlDeviceGetPowerUsage", 600_000),  # mW
    Answer("nvmlDeviceGetTemperature", 71, (nv.NVML_TEMPERATURE_GPU,)),  # °C
    Answer("nvmlDeviceGetClockInfo", 1980, (nv.NVML_CLOCK_SM,)),  # MHz
    Answer("nvmlDeviceGetClockInfo", 2619, (nv.NVML_CLOCK_MEM,)),
    Answer("nvmlDeviceGetUtilizationRates", nv.c_nvmlUtilization_t(gpu=97, memory=41)),
    Answer(
        "nvmlDeviceGetCurrentClocksEventReasons",
        nv.nvmlClocksEventReasonSwPowerCap | nv.nvmlClocksEventReasonSwThermalSlowdown,
    ),
    Answer(
        "nvmlDeviceGetViolationStatus",
        nv.c_nvmlViolationTime_t(referenceTime=1, violationTime=5_000_000),  # ns
        (nv.NVML_PERF_POLICY_POWER,),
    ),
    Answer(
        "nvmlDeviceGetViolationStatus",
        nv.c_nvmlViolationTime_t(referenceTime=1, violationTime=0),
        (nv.NVML_PERF_POLICY_THERMAL,),
    ),
    # 5 GiB of 80 in use, read at the window's close (the inventory reads the same struct)
    Answer(
        "nvmlDeviceGetMemoryInfo",
        nv.c_nvmlMemory_t(total=81_559_412_736, free=81_559_412_736 - 5 * 2**30, used=5 * 2**30),
    ),
)


def _pci_info(bus_id: bytes) -> Any:
    pci = nv.nvmlPciInfo_t()
    pci.busId = bus_id
    return pci


H100_INVENTORY = (
    Answer("nvmlSystemGetDriverVersion", "570.124.06", handle=False),
    Answer("nvmlSystemGetCudaDriverVersion", 12080, handle=False),
    Answer("nvmlDeviceGetName", "NVIDIA H100 80GB HBM3"),
    Answer("nvmlDeviceGetUUID", "GPU-5b8e2c1a-0000-1111-2222-333344445555"),
    Answer("nvmlDeviceGetPciInfo", _pci_info(b"00000000:18:00.0")),
    Answer("nvmlDeviceGetMemoryInfo", nv.c_nvmlMemory_t(total=81_559_412_736, free=0, used=0)),
    Answer("nvmlDeviceGetPowerManagementLimit", 700_000),  # mW
    Answer("nvmlDeviceGetPowerManagementDefaultLimit", 700_000),
    Answer("nvmlDeviceGetEnforcedPowerLimit", 650_000),
    Answer("nvmlDeviceGetDefaultApplicationsClock", 1755, (nv.NVML_CLOCK_SM,)),  # MHz
    Answer("nvmlDeviceGetDefaultApplicationsClock", 2619, (nv.NVML_CLOCK_MEM,)),
    Answer("nvmlDeviceGetMaxClockInfo", 1980, (nv.NVML_CLOCK_SM,)),
    Answer("nvmlDeviceGetMaxClockInfo", 2619, (nv.NVML_CLOCK_MEM,)),
    Answer("nvmlDeviceGetEccMode", [nv.NVML_FEATURE_ENABLED, nv.NVML_FEATURE_ENABLED]),
    Answer("nvmlDeviceGetPersistenceMode", nv.NVML_FEATURE_DISABLED),
    Answer("nvmlDeviceGetMigMode", [nv.NVML_DEVICE_MIG_DISABLE, nv.NVML_DEVICE_MIG_DISABLE]),
    Answer("nvmlDeviceGetCurrPcieLinkGeneration", 5),
    Answer("nvmlDeviceGetCurrPcieLinkWidth", 16),
    Answer("nvmlDeviceGetMaxPcieLinkGeneration", 5),
    Answer("nvmlDeviceGetMaxPcieLinkWidth", 16),
    Answer("nvmlDeviceGetComputeMode", nv.NVML_COMPUTEMODE_EXCLUSIVE_PROCESS),
    Answer(
        "nvmlDeviceGetComputeRunningProcesses",
        [nvml_process(4242, 3 * 2**30), nvml_process(4343, None)],
    ),
    Answer("nvmlDeviceGetCurrentClocksEventReasons", nv.nvmlClocksEventReasonGpuIdle),
)

# MI300X gpu_metrics as gpu_metrics 1.6 gives them: status bits "N/A", residency accumulators.
MI300X_METRICS: dict[str, Any] = {
    "indep_throttle_status": "N/A",
    "throttle_status": "N/A",
    "accumulation_counter": 1_000,
    "prochot_residency_acc": 0,
    "ppt_residency_acc": 0,
    "socket_thm_residency_acc": 0,
    "vr_thm_residency_acc": 0,
    "hbm_thm_residency_acc": 0,
    "temperature_hotspot": 75,
    "current_socket_power": 500,
}
# A GPU whose gpu_metrics carry a throttle status (a bool in amdsmi 7) and no accumulators.
STATUS_METRICS: dict[str, Any] = {
    **dict.fromkeys(MI300X_METRICS, "N/A"),
    "indep_throttle_status": True,
    "throttle_status": True,
}


def mi300x_metrics(ticks: int, **residency: int) -> dict[str, Any]:
    """MI300X gpu_metrics at firmware tick `ticks` with some residency accumulators changed."""
    return {**MI300X_METRICS, "accumulation_counter": ticks, **residency}


# amdsmi_get_violation_status of an idle MI300X: no limiter active.
MI300X_VIOLATIONS: dict[str, Any] = {
    "acc_counter": 1_000,
    "acc_ppt_pwr": 0,
    "per_ppt_pwr": 0,  # %
    "active_prochot_thrm": False,
    "active_ppt_pwr": False,
    "active_socket_thrm": False,
    "active_vr_thrm": False,
    "active_hbm_thrm": False,
    "active_gfx_clk_below_host_limit": "N/A",
}
MI300X_ENERGY: dict[str, Any] = {
    "energy_accumulator": 0,
    "counter_resolution": 1.0,  # µJ per tick
    "timestamp": 0,
}


def mi300x_live(api: Any) -> tuple[Answer, ...]:
    """One MI300X drawing 500 W; `api` gives the enums (those of the amdsmi copy in use)."""
    current, hotspot, edge = (
        api.AmdSmiTemperatureMetric.CURRENT,
        api.AmdSmiTemperatureType.HOTSPOT,
        api.AmdSmiTemperatureType.EDGE,
    )
    return (
        Answer(
            "amdsmi_get_power_info",
            {
                "socket_power": 500,  # W
                "current_socket_power": 500,
                "average_socket_power": 480,
                "gfx_voltage": 800,
                "soc_voltage": 900,
                "mem_voltage": "N/A",
                "power_limit": 750,
            },
        ),
        Answer("amdsmi_get_energy_count", MI300X_ENERGY),
        Answer("amdsmi_get_temp_metric", 75, (hotspot, current)),  # °C
        Answer("amdsmi_get_temp_metric", 60, (edge, current)),
        Answer("amdsmi_get_clock_info", _clock(2100, 2100), (api.AmdSmiClkType.GFX,)),  # MHz
        Answer("amdsmi_get_clock_info", _clock(1300, 1300), (api.AmdSmiClkType.MEM,)),
        Answer(
            "amdsmi_get_gpu_activity",
            {"gfx_activity": 99, "umc_activity": 40, "mm_activity": "N/A"},  # %
        ),
        Answer("amdsmi_get_gpu_metrics_info", MI300X_METRICS),
        Answer("amdsmi_get_gpu_memory_usage", 24 * 2**30, (api.AmdSmiMemoryType.VRAM,)),  # B
        Answer("amdsmi_get_gpu_memory_total", 192 * 2**30, (api.AmdSmiMemoryType.VRAM,)),
    )


def _clock(clk_mhz: int, max_mhz: int) -> dict[str, Any]:
    return {
        "clk": clk_mhz,
        "min_clk": 500,
        "max_clk": max_mhz,
        "clk_locked": False,
        "clk_deep_sleep": 0,
    }


def mi300x_inventory(api: Any) -> tuple[Answer, ...]:
    """The static facts of that MI300X."""
    return (
        Answer("amdsmi_get_rocm_version", (True, "6.4.1"), handle=False),
        Answer("amdsmi_get_gpu_asic_info", {"market_name": "AMD Instinct MI300X"}),
        Answer("amdsmi_get_gpu_device_uuid", "3bff74a1-0000-1000-80e0-a3e8c1a4e0c2"),
        Answer("amdsmi_get_gpu_device_bdf", "0000:0c:00.0"),
        Answer("amdsmi_get_gpu_driver_info", {"driver_name": "amdgpu", "driver_version": "6.10.5"}),
        Answer("amdsmi_get_gpu_memory_total", 192 * 2**30, (api.AmdSmiMemoryType.VRAM,)),  # B
        Answer(
            "amdsmi_get_power_cap_info",
            {"power_cap": 750_000_000, "default_power_cap": 750_000_000},  # µW
        ),
        Answer("amdsmi_get_gpu_ecc_enabled", 0b1111),
        Answer("amdsmi_get_gpu_compute_partition", "SPX"),
        Answer("amdsmi_get_gpu_memory_partition", "NPS1"),
        Answer(
            "amdsmi_get_pcie_info",
            {
                "pcie_static": {"max_pcie_width": 16, "pcie_interface_version": 5},
                "pcie_metric": {"pcie_width": 16, "pcie_speed": 32000},  # MT/s
            },
        ),
        Answer(
            "amdsmi_get_gpu_process_list",
            [{"name": "python", "pid": 77, "mem": 2**30, "cu_occupancy": "N/A"}],  # mem in B
        ),
        Answer("amdsmi_get_violation_status", MI300X_VIOLATIONS),
    )
