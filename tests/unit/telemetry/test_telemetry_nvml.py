"""The NVML adapter against an autospec'd pynvml: a misspelled or misused call fails here."""

from __future__ import annotations

from typing import Any

import pynvml as real
import pytest
from pytest_mock import MockerFixture
from vendor_fakes import H100_INVENTORY, H100_LIVE, install
from vendor_fakes import nvml_field as field

from harness.errors import DeviceError
from harness.telemetry.nvml import decode_reasons, nvml_sources
from harness.telemetry.nvml_inventory import nvml_inventory


def err(code: int) -> Exception:
    """The NVMLError subclass pynvml raises for a code."""
    return real.NVMLError(code)


@pytest.fixture
def nv(mocker: MockerFixture) -> Any:
    """pynvml autospec'd, describing one healthy H100 drawing 612.345 W."""
    nv = mocker.patch("harness.telemetry.nvml.pynvml", autospec=True)
    nv.nvmlDeviceGetHandleByIndex.side_effect = lambda i: f"handle{i}"
    install(nv, H100_LIVE)
    return nv


def test_one_gpu_reads_every_quantity(nv: Any) -> None:
    [gpu], missing = nvml_sources()
    assert missing == []
    assert (gpu.name, gpu.kind) == ("gpu0", "gpu")
    reading = gpu.read()
    assert reading.power_w == 612.345
    assert (reading.temp_c, reading.sm_clock_mhz, reading.mem_clock_mhz) == (71, 1980, 2619)
    assert reading.util_pct == 97.0
    assert reading.throttle == ("sw_power_cap", "sw_thermal_slowdown")
    assert gpu.energy_mj() == 98_765_432.0
    assert gpu.violation_ns() == {"power": 5_000_000, "thermal": 0}
    assert gpu.power_method == "NVML field NVML_FI_DEV_POWER_INSTANT (instant)"
    assert gpu.energy_method == "nvmlDeviceGetTotalEnergyConsumption"
    nv.nvmlInit.assert_called_once_with()
    nv.nvmlDeviceGetFieldValues.assert_called_with("handle0", [real.NVML_FI_DEV_POWER_INSTANT])
    nv.nvmlDeviceGetTemperature.assert_called_with("handle0", real.NVML_TEMPERATURE_GPU)
    nv.nvmlShutdown.assert_not_called()
    gpu.close()
    gpu.close()
    nv.nvmlShutdown.assert_called_once_with()


def test_nvml_shuts_down_after_the_last_gpu_closes(nv: Any) -> None:
    nv.nvmlDeviceGetCount.return_value = 2
    sources, _ = nvml_sources()
    assert [s.name for s in sources] == ["gpu0", "gpu1"]
    sources[1].close()
    nv.nvmlShutdown.assert_not_called()
    sources[0].close()
    nv.nvmlShutdown.assert_called_once_with()


def test_pre_volta_gpu_has_no_energy_counter(nv: Any) -> None:
    nv.nvmlDeviceGetTotalEnergyConsumption.side_effect = err(real.NVML_ERROR_NOT_SUPPORTED)
    [gpu], missing = nvml_sources()
    assert gpu.energy_mj() is None
    assert gpu.energy_method == ""
    assert missing == [
        (
            "gpu0 energy counter",
            "not supported (before Volta); energy integrated from power samples",
        )
    ]


def test_without_the_instant_field_power_is_the_one_second_average(nv: Any) -> None:
    nv.nvmlDeviceGetFieldValues.side_effect = lambda h, ids: [
        field(0, ret=real.NVML_ERROR_NOT_SUPPORTED)
    ]
    [gpu], missing = nvml_sources()
    assert gpu.read().power_w == 600.0
    assert gpu.power_method == "nvmlDeviceGetPowerUsage (a 1 s average on Ampere and newer)"
    assert missing[0][0] == "gpu0 instant power"
    nv.nvmlDeviceGetPowerUsage.assert_called_with("handle0")


def test_unsupported_quantities_read_as_none(nv: Any) -> None:
    nv.nvmlDeviceGetTemperature.side_effect = err(real.NVML_ERROR_NOT_SUPPORTED)
    nv.nvmlDeviceGetUtilizationRates.side_effect = err(real.NVML_ERROR_NOT_SUPPORTED)
    nv.nvmlDeviceGetViolationStatus.side_effect = err(real.NVML_ERROR_NOT_SUPPORTED)
    [gpu], _ = nvml_sources()
    reading = gpu.read()
    assert (reading.temp_c, reading.util_pct) == (None, None)
    assert reading.power_w == 612.345
    assert gpu.violation_ns() == {}


def test_lost_gpu_is_a_device_error_naming_it(nv: Any) -> None:
    [gpu], _ = nvml_sources()
    nv.nvmlDeviceGetTemperature.side_effect = err(real.NVML_ERROR_GPU_IS_LOST)
    with pytest.raises(
        DeviceError, match=r"gpu0: cannot read temperature: NVML error: GPU is lost"
    ):
        gpu.read()


def test_drivers_before_535_use_the_throttle_reasons_call(nv: Any) -> None:
    nv.nvmlDeviceGetCurrentClocksEventReasons.side_effect = err(real.NVML_ERROR_FUNCTION_NOT_FOUND)
    nv.nvmlDeviceGetCurrentClocksThrottleReasons.return_value = (
        real.nvmlClocksThrottleReasonHwSlowdown
    )
    [gpu], _ = nvml_sources()
    assert gpu.read().throttle == ("hw_slowdown",)
    nv.nvmlDeviceGetCurrentClocksThrottleReasons.assert_called_with("handle0")


def test_no_driver_is_a_reason_not_an_error(nv: Any) -> None:
    nv.nvmlInit.side_effect = err(real.NVML_ERROR_LIBRARY_NOT_FOUND)
    assert nvml_sources() == (
        [],
        [("nvml", "no NVIDIA driver: libnvidia-ml.so.1 not found (NVML Shared Library Not Found)")],
    )
    nv.nvmlShutdown.assert_not_called()


def test_no_gpu_shuts_nvml_down_again(nv: Any) -> None:
    nv.nvmlDeviceGetCount.return_value = 0
    assert nvml_sources() == ([], [("nvml", "NVML found no NVIDIA GPU")])
    nv.nvmlShutdown.assert_called_once_with()


def test_without_nvidia_ml_py_the_reason_says_what_to_install(mocker: MockerFixture) -> None:
    mocker.patch("harness.telemetry.nvml.pynvml", None)
    [], [(source, reason)] = nvml_sources()
    assert source == "nvml"
    assert reason == "nvidia-ml-py is not installed; pip install 'beyond-tops[nvidia]'"


def test_decode_reasons_names_every_bit() -> None:
    mask = real.nvmlClocksEventReasonGpuIdle | real.nvmlClocksEventReasonHwPowerBrakeSlowdown
    assert decode_reasons(mask) == ("gpu_idle", "hw_power_brake_slowdown")
    assert decode_reasons(0) == ()
    assert decode_reasons(real.nvmlClocksThrottleReasonBoardLimit | 1 << 20) == (
        "board_limit",
        "unknown_0x100000",
    )


def _inventory_gpu(nv: Any) -> None:
    install(nv, H100_INVENTORY)
    nv.nvmlDeviceGetGraphicsRunningProcesses.side_effect = err(real.NVML_ERROR_NOT_SUPPORTED)


def test_inventory_of_an_h100(nv: Any) -> None:
    _inventory_gpu(nv)
    [gpu], missing = nvml_inventory()
    assert missing == []
    assert gpu == {
        "index": 0,
        "vendor": "nvidia",
        "driver_version": "570.124.06",
        "cuda_driver_version": "12.8",
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-5b8e2c1a-0000-1111-2222-333344445555",
        "pci_bus_id": "00000000:18:00.0",
        "memory_total_mib": 77_781,
        "power_limit_w": 700.0,
        "power_limit_default_w": 700.0,
        "power_limit_enforced_w": 650.0,
        "clock_sm_default_mhz": 1755,
        "clock_mem_default_mhz": 2619,
        "clock_sm_max_mhz": 1980,
        "clock_mem_max_mhz": 2619,
        "ecc_enabled": True,
        "persistence_mode": False,
        "mig_mode": "disabled",
        "pcie_gen": 5,
        "pcie_width": 16,
        "pcie_gen_max": 5,
        "pcie_width_max": 16,
        "compute_mode": "exclusive_process",
        "processes": [
            {"pid": 4242, "type": "compute", "used_memory_mib": 3072},
            {"pid": 4343, "type": "compute", "used_memory_mib": None},
        ],
        "throttle_reasons_active": ["gpu_idle"],
    }
    nv.nvmlInit.assert_called_once_with()
    nv.nvmlShutdown.assert_called_once_with()


def test_inventory_names_each_field_it_could_not_read(nv: Any) -> None:
    _inventory_gpu(nv)
    nv.nvmlDeviceGetMigMode.side_effect = err(real.NVML_ERROR_NOT_SUPPORTED)
    nv.nvmlDeviceGetEccMode.side_effect = err(real.NVML_ERROR_NO_PERMISSION)
    [gpu], missing = nvml_inventory()
    assert gpu["mig_mode"] is None and gpu["ecc_enabled"] is None
    assert missing == [
        (
            "gpu0.ecc_enabled",
            "permission denied by the NVIDIA driver (Insufficient Permissions)",
        ),
        ("gpu0.mig_mode", "not supported on this GPU or driver"),
    ]


def test_inventory_shuts_nvml_down_when_a_call_blows_up(nv: Any) -> None:
    _inventory_gpu(nv)
    nv.nvmlDeviceGetName.side_effect = RuntimeError("bug")
    with pytest.raises(RuntimeError):
        nvml_inventory()
    nv.nvmlShutdown.assert_called_once_with()


def test_inventory_without_a_driver(nv: Any) -> None:
    nv.nvmlInit.side_effect = err(real.NVML_ERROR_DRIVER_NOT_LOADED)
    gpus, [(source, reason)] = nvml_inventory()
    assert gpus == [] and source == "nvml"
    assert reason.startswith("no NVIDIA driver: the kernel module is not loaded")


def test_memory_in_use_is_the_whole_gpus_as_nvml_reports_it(nv: Any) -> None:
    [gpu], _ = nvml_sources()
    assert gpu.memory_bytes() == (5 * 2**30, 81_559_412_736)
    assert gpu.memory_method == "nvmlDeviceGetMemoryInfo"
    nv.nvmlDeviceGetMemoryInfo.assert_called_with("handle0")


def test_memory_not_supported_reads_as_none_and_a_lost_gpu_is_an_error(nv: Any) -> None:
    [gpu], _ = nvml_sources()
    nv.nvmlDeviceGetMemoryInfo.side_effect = real.NVMLError_NotSupported()
    assert gpu.memory_bytes() is None
    nv.nvmlDeviceGetMemoryInfo.side_effect = err(real.NVML_ERROR_GPU_IS_LOST)
    with pytest.raises(DeviceError, match="gpu0: cannot read memory"):
        gpu.memory_bytes()
