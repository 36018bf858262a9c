"""The amdsmi adapter against an autospec of the real amdsmi_interface (ROCm not needed)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pytest_mock import MockerFixture
from telemetry_fakes import StepClock, autospec_amdsmi, import_real_amdsmi

from harness.errors import DeviceError
from harness.telemetry import amd
from harness.telemetry.amd import amd_inventory, amd_sources, decode_indep_throttle, load_amdsmi

S = 1_000_000_000
HOTSPOT_PPT0 = 1 << 36 | 1 << 0


@pytest.fixture(scope="module")
def real_amdsmi() -> tuple[ModuleType, ModuleType, ModuleType]:
    return import_real_amdsmi()


def lib_error(wrapper: ModuleType, interface: ModuleType, status: str) -> Exception:
    return interface.AmdSmiLibraryException(getattr(wrapper, f"AMDSMI_STATUS_{status}"))


@pytest.fixture
def api(real_amdsmi: tuple[ModuleType, ModuleType, ModuleType], mocker: MockerFixture) -> Any:
    """amdsmi as `import amdsmi` finds it: one MI300X-like GPU drawing 500 W."""
    _, interface, _ = real_amdsmi
    api = autospec_amdsmi(interface)
    mocker.patch.dict(sys.modules, {"amdsmi": api})
    api.amdsmi_get_processor_handles.return_value = ["h0"]
    api.amdsmi_get_power_info.return_value = {
        "socket_power": 500,
        "current_socket_power": 500,
        "average_socket_power": 480,
        "power_limit": 750,
    }
    # 250 J between the validation window's edges (0.5 s): 500 W, as the power readings say
    counts = iter([0, 250_000_000, 250_000_000, 300_000_000])
    api.amdsmi_get_energy_count.side_effect = lambda h: {
        "energy_accumulator": next(counts),
        "counter_resolution": 1.0,
        "timestamp": 0,
    }
    temps = {api.AmdSmiTemperatureType.HOTSPOT: 75, api.AmdSmiTemperatureType.EDGE: 60}
    api.amdsmi_get_temp_metric.side_effect = lambda h, sensor, metric: temps[sensor]
    clocks = {api.AmdSmiClkType.GFX: 2100, api.AmdSmiClkType.MEM: 1300}
    api.amdsmi_get_clock_info.side_effect = lambda h, kind: {"clk": clocks[kind], "max_clk": 2100}
    api.amdsmi_get_gpu_activity.return_value = {"gfx_activity": 99, "umc_activity": 40}
    api.amdsmi_get_gpu_metrics_info.return_value = {"indep_throttle_status": HOTSPOT_PPT0}
    return api


def _sources(api: Any) -> tuple[list[Any], list[tuple[str, str]]]:
    return amd_sources(validate_s=0.5, sleep=lambda s: None, clock=StepClock(0, S // 2))


def test_one_gpu_reads_every_quantity(api: Any) -> None:
    [gpu], missing = _sources(api)
    assert missing == []
    reading = gpu.read()
    assert reading.power_w == 500.0
    assert (reading.temp_c, reading.sm_clock_mhz, reading.mem_clock_mhz) == (75.0, 2100, 1300)
    assert reading.util_pct == 99.0
    assert reading.throttle == ("ppt0", "temp_hotspot")
    assert gpu.energy_mj() == 250_000.0  # 250 J: 250e6 ticks of 1 µJ
    assert gpu.power_method == "amdsmi_get_power_info current_socket_power"
    api.amdsmi_init.assert_called_once_with(api.AmdSmiInitFlags.INIT_AMD_GPUS)
    api.amdsmi_get_temp_metric.assert_called_with(
        "h0", api.AmdSmiTemperatureType.HOTSPOT, api.AmdSmiTemperatureMetric.CURRENT
    )
    gpu.close()
    gpu.close()
    api.amdsmi_shut_down.assert_called_once_with()


def test_counter_that_disagrees_with_power_is_not_trusted(api: Any) -> None:
    counts = iter([0, 50_000_000])  # 50 J in 0.5 s is 100 W, against 500 W readings
    api.amdsmi_get_energy_count.side_effect = lambda h: {
        "energy_accumulator": next(counts),
        "counter_resolution": 1.0,
        "timestamp": 0,
    }
    [gpu], missing = _sources(api)
    assert gpu.energy_mj() is None
    assert gpu.energy_method == ""
    assert missing == [
        (
            "gpu0 energy counter",
            "not trusted: energy counter says 100.0 W but power readings say 500.0 W over 0.5 s",
        )
    ]


def test_older_gpus_fall_back_to_average_power(api: Any) -> None:
    api.amdsmi_get_power_info.return_value = {
        "current_socket_power": "N/A",
        "average_socket_power": 500,
    }
    [gpu], _ = _sources(api)
    assert gpu.read().power_w == 500.0
    assert gpu.power_method == "amdsmi_get_power_info average_socket_power"


def test_unsupported_sensor_is_none_and_edge_stands_in(
    api: Any, real_amdsmi: tuple[ModuleType, ModuleType, ModuleType]
) -> None:
    _, interface, wrapper = real_amdsmi
    [gpu], _ = _sources(api)
    hotspot = api.AmdSmiTemperatureType.HOTSPOT

    def temp(h: Any, sensor: Any, metric: Any) -> int:
        if sensor == hotspot:
            raise lib_error(wrapper, interface, "NOT_SUPPORTED")
        return 61

    api.amdsmi_get_temp_metric.side_effect = temp
    api.amdsmi_get_gpu_activity.side_effect = lib_error(wrapper, interface, "NOT_YET_IMPLEMENTED")
    api.amdsmi_get_gpu_metrics_info.return_value = {"indep_throttle_status": "N/A"}
    reading = gpu.read()
    assert (reading.temp_c, reading.util_pct, reading.throttle) == (61.0, None, None)


def test_other_library_errors_are_device_errors(
    api: Any, real_amdsmi: tuple[ModuleType, ModuleType, ModuleType]
) -> None:
    _, interface, wrapper = real_amdsmi
    [gpu], _ = _sources(api)
    api.amdsmi_get_power_info.side_effect = lib_error(wrapper, interface, "DRIVER_NOT_LOADED")
    with pytest.raises(DeviceError, match=r"gpu0: cannot read power: .*DRIVER_NOT_LOADED"):
        gpu.read()


def test_init_failure_is_a_reason(
    api: Any, real_amdsmi: tuple[ModuleType, ModuleType, ModuleType]
) -> None:
    _, interface, wrapper = real_amdsmi
    api.amdsmi_init.side_effect = lib_error(wrapper, interface, "INIT_ERROR")
    sources, [(source, reason)] = _sources(api)
    assert sources == [] and source == "amdsmi"
    assert reason.startswith("cannot initialise amdsmi: Error code: ")
    assert "AMDSMI_STATUS_INIT_ERROR - Initialization error" in reason


def test_no_gpu_shuts_amdsmi_down_again(api: Any) -> None:
    api.amdsmi_get_processor_handles.return_value = []
    assert _sources(api) == ([], [("amdsmi", "amdsmi found no AMD GPU")])
    api.amdsmi_shut_down.assert_called_once_with()


def test_decode_indep_throttle() -> None:
    assert decode_indep_throttle(0) == ()
    assert decode_indep_throttle(1 << 4 | 1 << 47 | 1 << 57) == ("spl", "prochot_gfx", "fit")
    assert decode_indep_throttle(1 << 10) == ("unknown_bit10",)


def test_inventory_of_an_mi300x(api: Any) -> None:
    api.amdsmi_get_rocm_version.return_value = (True, "6.4.1")
    api.amdsmi_get_gpu_asic_info.return_value = {"market_name": "AMD Instinct MI300X"}
    api.amdsmi_get_gpu_device_uuid.return_value = "3bff74a1-0000-1000-80e0-a3e8c1a4e0c2"
    api.amdsmi_get_gpu_device_bdf.return_value = "0000:0c:00.0"
    api.amdsmi_get_gpu_driver_info.return_value = {"driver_version": "6.10.5"}
    api.amdsmi_get_gpu_memory_total.return_value = 192 * 2**30
    api.amdsmi_get_power_cap_info.return_value = {
        "power_cap": 750_000_000,
        "default_power_cap": 750_000_000,
    }
    api.amdsmi_get_gpu_ecc_enabled.return_value = 0b1111
    api.amdsmi_get_gpu_compute_partition.return_value = "SPX"
    api.amdsmi_get_gpu_memory_partition.return_value = "NPS1"
    api.amdsmi_get_pcie_info.return_value = {
        "pcie_static": {"max_pcie_width": 16, "pcie_interface_version": 5},
        "pcie_metric": {"pcie_width": 16, "pcie_speed": 32000},
    }
    api.amdsmi_get_gpu_process_list.return_value = [{"pid": 77, "mem": 2**30, "name": "python"}]
    [gpu], missing = amd_inventory()
    assert gpu == {
        "index": 0,
        "vendor": "amd",
        "rocm_version": "6.4.1",
        "name": "AMD Instinct MI300X",
        "uuid": "3bff74a1-0000-1000-80e0-a3e8c1a4e0c2",
        "pci_bus_id": "0000:0c:00.0",
        "driver_version": "6.10.5",
        "memory_total_mib": 196_608,
        "power_limit_w": 750.0,
        "power_limit_default_w": 750.0,
        "clock_sm_max_mhz": 2100,
        "clock_mem_max_mhz": 2100,
        "ecc_enabled": True,
        "compute_partition": "SPX",
        "memory_partition": "NPS1",
        "pcie_gen": 5,
        "pcie_width": 16,
        "pcie_gen_max": 5,
        "pcie_width_max": 16,
        "processes": [{"pid": 77, "type": "compute", "used_memory_mib": 1024}],
        "throttle_reasons_active": ["ppt0", "temp_hotspot"],
        "power_limit_enforced_w": None,
        "clock_sm_default_mhz": None,
        "clock_mem_default_mhz": None,
        "persistence_mode": None,
        "mig_mode": None,
        "compute_mode": None,
    }
    assert [field for field, _ in missing] == [
        "gpu0.power_limit_enforced_w",
        "gpu0.clock_sm_default_mhz",
        "gpu0.clock_mem_default_mhz",
        "gpu0.persistence_mode",
        "gpu0.mig_mode",
        "gpu0.compute_mode",
    ]
    api.amdsmi_get_gpu_memory_total.assert_called_with("h0", api.AmdSmiMemoryType.VRAM)
    api.amdsmi_shut_down.assert_called_once_with()


def test_inventory_marks_na_and_failed_fields(
    api: Any, real_amdsmi: tuple[ModuleType, ModuleType, ModuleType]
) -> None:
    _, interface, wrapper = real_amdsmi
    api.amdsmi_get_rocm_version.return_value = (False, "Could not find librocm-core.so")
    api.amdsmi_get_gpu_device_uuid.side_effect = lib_error(wrapper, interface, "NO_PERM")
    api.amdsmi_get_pcie_info.return_value = {
        "pcie_static": {"max_pcie_width": "N/A", "pcie_interface_version": "N/A"},
        "pcie_metric": {"pcie_width": "N/A", "pcie_speed": "N/A"},
    }
    [gpu], missing = amd_inventory()
    reasons = dict(missing)
    assert gpu["rocm_version"] is None
    assert reasons["rocm_version"] == "Could not find librocm-core.so"
    assert gpu["uuid"] is None
    assert "AMDSMI_STATUS_NO_PERM" in reasons["gpu0.uuid"]
    assert gpu["pcie_gen"] is None
    assert reasons["gpu0.pcie_gen"] == "not reported by amdsmi for this GPU"


class _FailingLoader(importlib.abc.Loader):
    """Imports 'amdsmi' the way it fails without ROCm: prints, then raises KeyError."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        print("libamd_smi.so: cannot open shared object file")
        raise KeyError("libamd_smi.so")


class _FailingFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "amdsmi":
            return None
        return importlib.machinery.ModuleSpec(name, _FailingLoader())


@pytest.fixture
def amdsmi_without_rocm(mocker: MockerFixture) -> Iterator[None]:
    mocker.patch.dict(sys.modules)
    sys.modules.pop("amdsmi", None)
    finder = _FailingFinder()
    sys.meta_path.insert(0, finder)
    yield
    sys.meta_path.remove(finder)


def test_import_without_rocm_is_a_reason_and_prints_nothing(
    amdsmi_without_rocm: None, capsys: pytest.CaptureFixture[str]
) -> None:
    module, reason = load_amdsmi()
    assert module is None
    assert reason == (
        "amdsmi cannot load libamd_smi.so (libamd_smi.so: cannot open shared object file); "
        "install ROCm's amd-smi-lib"
    )
    assert capsys.readouterr().out == ""
    assert amd_sources() == ([], [("amdsmi", reason)])
    assert amd_inventory() == ([], [("amdsmi", reason)])


def test_import_without_the_package_is_a_reason(mocker: MockerFixture) -> None:
    mocker.patch.dict(sys.modules, {"amdsmi": None})
    module, reason = load_amdsmi()
    assert module is None
    assert reason is not None and reason.endswith("pip install 'beyond-tops[rocm]'")


def test_this_machine_without_rocm_reports_it() -> None:
    module, reason = load_amdsmi()
    if module is not None:
        pytest.skip("amdsmi loads here: ROCm is installed")
    assert reason is not None and "libamd_smi.so" in reason


def test_every_amdsmi_name_the_adapter_uses_exists(
    real_amdsmi: tuple[ModuleType, ModuleType, ModuleType],
) -> None:
    package, interface, _ = real_amdsmi
    names = set(re.findall(r"\bapi\.(\w+)", Path(amd.__file__).read_text()))
    assert len(names) > 20
    assert sorted(n for n in names if not hasattr(interface, n)) == []
    # `import amdsmi` is the package: it must re-export each of them
    assert sorted(n for n in names if getattr(package, n, None) is not getattr(interface, n)) == []
