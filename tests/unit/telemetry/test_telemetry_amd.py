"""The amdsmi adapter against an autospec of the real amdsmi_interface (ROCm not needed)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from pytest_mock import MockerFixture
from telemetry_fakes import StepClock, autospec_amdsmi, import_real_amdsmi
from vendor_fakes import (
    MI300X_ENERGY,
    MI300X_METRICS,
    MI300X_VIOLATIONS,
    STATUS_METRICS,
    install,
    mi300x_inventory,
    mi300x_live,
    mi300x_metrics,
)

from harness.errors import DeviceError
from harness.telemetry.amd import amd_inventory, amd_sources, load_amdsmi
from harness.telemetry.amd_throttle import decode_indep_throttle, throttle_reasons

S = 1_000_000_000


@pytest.fixture(scope="module")
def real_amdsmi() -> tuple[ModuleType, ModuleType, ModuleType]:
    return import_real_amdsmi()


def lib_error(wrapper: ModuleType, interface: ModuleType, status: str) -> Exception:
    return interface.AmdSmiLibraryException(getattr(wrapper, f"AMDSMI_STATUS_{status}"))


@pytest.fixture
def api(real_amdsmi: tuple[ModuleType, ModuleType, ModuleType], mocker: MockerFixture) -> Any:
    """amdsmi as `import amdsmi` finds it: one MI300X drawing 500 W."""
    _, interface, _ = real_amdsmi
    api = autospec_amdsmi(interface)
    mocker.patch.dict(sys.modules, {"amdsmi": api})
    api.amdsmi_get_processor_handles.return_value = ["h0"]
    install(api, mi300x_live(api))
    # 250 J between the validation window's edges (0.5 s): 500 W, as the power readings say
    counts = iter([0, 250_000_000, 250_000_000, 300_000_000])
    api.amdsmi_get_energy_count.side_effect = lambda h: {
        **MI300X_ENERGY,
        "energy_accumulator": next(counts),
    }
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
    assert reading.throttle is None  # an MI300X names throttling by counters: two reads needed
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
        **MI300X_ENERGY,
        "energy_accumulator": next(counts),
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
    api.amdsmi_get_gpu_metrics_info.return_value = dict.fromkeys(STATUS_METRICS, "N/A")
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


def _read_throttle(api: Any, *metrics: dict[str, Any]) -> list[tuple[str, ...] | None]:
    api.amdsmi_get_gpu_metrics_info.side_effect = list(metrics)
    [gpu], _ = _sources(api)
    return [gpu.read().throttle for _ in metrics]


def test_a_throttle_status_of_true_is_throttling(api: Any) -> None:
    # amdsmi 7 turns indep_throttle_status into a bool; a bool is no bitmask to decode
    not_throttled = {**STATUS_METRICS, "indep_throttle_status": False}
    assert _read_throttle(api, STATUS_METRICS, not_throttled) == [("throttled",), ()]


def test_the_residency_that_grew_names_a_true_status(api: Any) -> None:
    before = {**mi300x_metrics(1_000), "indep_throttle_status": True}
    after = {**mi300x_metrics(1_100, hbm_thm_residency_acc=7), "indep_throttle_status": True}
    unnamed = {**mi300x_metrics(1_200, hbm_thm_residency_acc=7), "indep_throttle_status": True}
    assert _read_throttle(api, before, after, unnamed) == [
        ("throttled",),
        ("temp_hbm",),
        ("throttled",),  # throttled, but by none of the five counted limiters
    ]


def test_mi300x_residency_counters_name_what_throttled_since_the_last_read(api: Any) -> None:
    reads = [
        mi300x_metrics(1_000),
        mi300x_metrics(1_100, ppt_residency_acc=40, socket_thm_residency_acc=3),
        mi300x_metrics(1_200, ppt_residency_acc=40, socket_thm_residency_acc=3),
        mi300x_metrics(1_200, ppt_residency_acc=90),  # the firmware has not ticked: unknown
    ]
    assert _read_throttle(api, *reads) == [None, ("ppt", "temp_socket"), (), None]


def test_throttling_nobody_reports_is_unknown(api: Any) -> None:
    unknown = dict.fromkeys(STATUS_METRICS, "N/A")
    assert _read_throttle(api, unknown, unknown) == [None, None]


def test_an_older_amdsmis_raw_bitmask_still_decodes() -> None:
    assert throttle_reasons({"indep_throttle_status": 1 << 36 | 1 << 0}) == (
        "ppt0",
        "temp_hotspot",
    )
    assert throttle_reasons({"indep_throttle_status": 0, "throttle_status": True}) == ()
    assert throttle_reasons(None) is None


def test_inventory_of_an_mi300x(api: Any) -> None:
    install(api, mi300x_inventory(api))
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
        "clock_mem_max_mhz": 1300,
        "ecc_enabled": True,
        "compute_partition": "SPX",
        "memory_partition": "NPS1",
        "pcie_gen": 5,
        "pcie_width": 16,
        "pcie_gen_max": 5,
        "pcie_width_max": 16,
        "processes": [{"pid": 77, "type": "compute", "used_memory_mib": 1024}],
        "throttle_reasons_active": [],
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
    api.amdsmi_get_violation_status.assert_called_once_with("h0")
    api.amdsmi_shut_down.assert_called_once_with()


def test_inventory_throttling_from_status_or_violation_flags(api: Any) -> None:
    install(api, mi300x_inventory(api))
    api.amdsmi_get_violation_status.return_value = {**MI300X_VIOLATIONS, "active_ppt_pwr": True}
    assert amd_inventory()[0][0]["throttle_reasons_active"] == ["ppt"]
    api.amdsmi_get_gpu_metrics_info.return_value = STATUS_METRICS
    assert amd_inventory()[0][0]["throttle_reasons_active"] == ["throttled"]
    api.amdsmi_get_violation_status.assert_called_once_with("h0")  # not asked when status is known


def test_inventory_before_amdsmi_6_3_has_no_violation_flags(api: Any) -> None:
    install(api, mi300x_inventory(api))
    del api.amdsmi_get_violation_status
    api.amdsmi_get_gpu_metrics_info.return_value = MI300X_METRICS
    [gpu], missing = amd_inventory()
    assert gpu["throttle_reasons_active"] is None
    assert dict(missing)["gpu0.throttle_reasons_active"] == "not reported by amdsmi for this GPU"


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


def test_vram_in_use_from_amdsmi_get_gpu_memory_usage(api: Any) -> None:
    [gpu], _ = _sources(api)
    assert gpu.memory_bytes() == (24 * 2**30, 192 * 2**30)
    assert gpu.memory_method == "amdsmi_get_gpu_memory_usage (VRAM)"
    api.amdsmi_get_gpu_memory_usage.assert_called_with("h0", api.AmdSmiMemoryType.VRAM)


def test_vram_reported_as_n_a_reads_as_none(api: Any) -> None:
    [gpu], _ = _sources(api)
    api.amdsmi_get_gpu_memory_usage.side_effect = lambda h, kind: "N/A"
    assert gpu.memory_bytes() is None
