"""The fakes of NVML and amdsmi against the installed pynvml and amdsmi bindings.

The adapter tests run on autospecs and hand-written return values; these tests keep both
honest: every name the adapters use exists with a signature their calls bind to, and every
fake return value has the types (and plausible units) the real binding gives.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pynvml as real_nvml
import pytest
from telemetry_fakes import import_real_amdsmi
from vendor_contract import (
    Allowed,
    amdsmi_returns,
    mismatches,
    nvml_returns,
    use_problems,
    vendor_uses,
)
from vendor_fakes import (
    H100_INVENTORY,
    H100_LIVE,
    MI300X_METRICS,
    STATUS_METRICS,
    Answer,
    mi300x_inventory,
    mi300x_live,
    mi300x_metrics,
    nvml_field,
)

from harness.telemetry import amd, nvml, nvml_inventory

AmdSmi = tuple[ModuleType, ModuleType, ModuleType]


@pytest.fixture(scope="module")
def real_amdsmi() -> AmdSmi:
    return import_real_amdsmi()


def _uses_in(module: ModuleType, aliases: set[str], helper: str) -> Any:
    return vendor_uses(Path(str(module.__file__)).read_text(), aliases, {helper})


def test_every_pynvml_name_nvml_py_uses_exists_and_every_call_binds() -> None:
    uses = _uses_in(nvml, {"pynvml", "lib"}, "_opt")
    uses += _uses_in(nvml_inventory, {"nvml.pynvml"}, "_field")
    assert len({u.name for u in uses}) > 40
    assert len([u for u in uses if u.argc is not None]) > 30
    assert use_problems(uses, real_nvml) == []


def test_every_amdsmi_name_amd_py_uses_exists_and_every_call_binds(real_amdsmi: AmdSmi) -> None:
    package, interface, _ = real_amdsmi
    uses = _uses_in(amd, {"api", "self._api"}, "call")
    assert len({u.name for u in uses}) > 25
    assert {u.member for u in uses} >= {"GFX", "MEM", "HOTSPOT", "EDGE", "CURRENT", "VRAM"}
    # `import amdsmi` is the package: it must re-export what the interface defines
    assert use_problems(uses, package) == []
    names = {u.name for u in uses}
    assert sorted(n for n in names if getattr(package, n) is not getattr(interface, n)) == []


def test_the_use_checker_fails_on_misspelled_names_members_and_argument_counts() -> None:
    def power_usage(handle: Any) -> int:
        return 0

    fake = ModuleType("vendor")
    fake.nvmlDeviceGetPowerUsage = power_usage  # type: ignore[attr-defined]
    fake.Clock = SimpleNamespace(SM=0)  # type: ignore[attr-defined]
    source = (
        "pynvml.nvmlDeviceGetPowerUsge(h)\n"
        "pynvml.nvmlDeviceGetPowerUsage(h, 0)\n"
        "self._opt('power', pynvml.nvmlDeviceGetPowerUsage)\n"
        "x = pynvml.Clock.GFX\n"
        "getattr(pynvml, 'nvmlDeviceGetEnergy', None)\n"
        "pynvml.nvmlDeviceGetPowerUsage(h)\n"
        "self._opt('power', pynvml.nvmlDeviceGetPowerUsage, h)\n"
    )
    problems = use_problems(vendor_uses(source, {"pynvml"}, {"_opt"}), fake)
    assert [p.split(":")[0] for p in problems] == ["line 1", "line 2", "line 3", "line 4", "line 5"]
    assert problems[0] == "line 1: vendor.nvmlDeviceGetPowerUsge does not exist"
    assert "called with 2 argument(s)" in problems[1]
    assert "called with 0 argument(s)" in problems[2]
    assert problems[3] == "line 4: vendor.Clock.GFX does not exist"


def test_both_clock_event_reason_calls_and_every_reason_constant_exist() -> None:
    # The adapter calls the 535+ name and falls back to the deprecated one on older drivers.
    for name in (
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons",
    ):
        assert len(inspect.signature(getattr(real_nvml, name)).parameters) == 1
    # BoardLimit and Reliability only exist under the old constant name, which the adapter reads.
    for _, suffix in nvml._REASONS:
        value = getattr(real_nvml, f"nvmlClocksEventReason{suffix}", None)
        value = getattr(real_nvml, f"nvmlClocksThrottleReason{suffix}", value)
        assert isinstance(value, int), suffix


@pytest.mark.parametrize("answer", [*H100_LIVE, *H100_INVENTORY], ids=lambda a: a.fn)
def test_nvml_fakes_return_what_pynvml_returns(answer: Answer) -> None:
    allowed = nvml_returns(real_nvml, answer.fn, answer.args, handle=answer.handle)
    assert mismatches(answer.returns, allowed, answer.fn) == []


def _amd_answers(api: Any) -> list[Answer]:
    metrics = [STATUS_METRICS, {**STATUS_METRICS, "indep_throttle_status": False}]
    metrics += [mi300x_metrics(1_100, ppt_residency_acc=40), MI300X_METRICS]
    return [
        *mi300x_live(api),
        *mi300x_inventory(api),
        *(Answer("amdsmi_get_gpu_metrics_info", m) for m in metrics),
    ]


def test_amdsmi_fakes_return_what_amdsmi_returns(real_amdsmi: AmdSmi) -> None:
    _, interface, wrapper = real_amdsmi
    problems = []
    for answer in _amd_answers(interface):
        allowed = amdsmi_returns(interface, wrapper, answer.fn, answer.args, handle=answer.handle)
        problems += mismatches(answer.returns, allowed, answer.fn)
    assert problems == []


def test_amdsmi_reports_throttle_status_as_a_bool_and_residency_as_counts(
    real_amdsmi: AmdSmi,
) -> None:
    _, interface, wrapper = real_amdsmi
    metrics = amdsmi_returns(interface, wrapper, "amdsmi_get_gpu_metrics_info", (), handle=True)
    for key in ("indep_throttle_status", "throttle_status"):
        assert metrics.keys[key].kinds == {"bool", "str"}  # str: "N/A"
    for key in ("ppt_residency_acc", "socket_thm_residency_acc", "accumulation_counter"):
        assert metrics.keys[key].kinds == {"int", "str"}


def test_the_shape_checker_fails_on_what_the_old_fakes_returned(real_amdsmi: AmdSmi) -> None:
    _, interface, wrapper = real_amdsmi
    metrics = amdsmi_returns(interface, wrapper, "amdsmi_get_gpu_metrics_info", (), handle=True)
    bitmask = {"indep_throttle_status": 1 << 36 | 1, "throttle_reasons": 0}
    assert mismatches(bitmask, metrics, "metrics") == [
        "metrics['indep_throttle_status']: the fake returns int, the real binding bool | str",
        "metrics['throttle_reasons']: the real binding returns no such key",
    ]
    procs = nvml_returns(real_nvml, "nvmlDeviceGetComputeRunningProcesses", (), handle=True)
    assert mismatches([SimpleNamespace(pid=1, usedGpuMemory=None)], procs, "procs") == [
        "procs[0]: the fake returns SimpleNamespace, the real binding nvmlFriendlyObject"
    ]
    watts = nvml_returns(real_nvml, "nvmlDeviceGetPowerUsage", (), handle=True)
    assert mismatches(612.345, watts, "power") == [
        "power: the fake returns float, the real binding int"
    ]


# Plausible values in the unit the real binding uses (NVML: mW, °C, MHz; amdsmi: W for socket
# power, µW for caps, °C, MHz, %): a fake in the wrong unit lands outside.
Pick = Callable[[Any], list[Any]]
_ITSELF: Pick = lambda v: [v]  # noqa: E731
_NVML_UNITS: dict[str, tuple[Pick, float, float]] = {
    "nvmlDeviceGetPowerUsage": (_ITSELF, 10_000, 2_000_000),
    "nvmlDeviceGetPowerManagementLimit": (_ITSELF, 10_000, 2_000_000),
    "nvmlDeviceGetPowerManagementDefaultLimit": (_ITSELF, 10_000, 2_000_000),
    "nvmlDeviceGetEnforcedPowerLimit": (_ITSELF, 10_000, 2_000_000),
    "nvmlDeviceGetFieldValues": (lambda v: [f.value.uiVal for f in v], 10_000, 2_000_000),
    "nvmlDeviceGetTemperature": (_ITSELF, 0, 130),
    "nvmlDeviceGetClockInfo": (_ITSELF, 100, 10_000),
    "nvmlDeviceGetMaxClockInfo": (_ITSELF, 100, 10_000),
    "nvmlDeviceGetDefaultApplicationsClock": (_ITSELF, 100, 10_000),
    "nvmlDeviceGetTotalEnergyConsumption": (_ITSELF, 0, 2**64 - 1),
}


def _keys(*names: str) -> Pick:
    return lambda v: [v[n] for n in names if n in v]


_AMD_UNITS: dict[str, tuple[Pick, float, float]] = {
    "amdsmi_get_power_info": (
        _keys("socket_power", "current_socket_power", "average_socket_power"),
        1,
        2_000,
    ),
    "amdsmi_get_power_cap_info": (_keys("power_cap", "default_power_cap"), 10e6, 2e9),
    "amdsmi_get_temp_metric": (_ITSELF, 0, 130),
    "amdsmi_get_clock_info": (_keys("clk", "max_clk", "min_clk"), 100, 10_000),
    "amdsmi_get_gpu_activity": (_keys("gfx_activity", "umc_activity"), 0, 100),
    "amdsmi_get_energy_count": (_keys("counter_resolution"), 0.01, 1_000),
    "amdsmi_get_gpu_memory_total": (_ITSELF, 2**30, 2**40),
}


def unit_problems(answers: list[Answer], units: dict[str, tuple[Pick, float, float]]) -> list[str]:
    problems = []
    for answer in answers:
        pick, low, high = units.get(answer.fn, (lambda v: [], 0, 0))
        for value in pick(answer.returns):
            if value != "N/A" and not low <= value <= high:
                problems.append(f"{answer.fn}: {value!r} is outside [{low:g}, {high:g}]")
    return problems


def test_fake_values_are_in_the_units_the_real_bindings_use(real_amdsmi: AmdSmi) -> None:
    _, interface, _ = real_amdsmi
    nvml_answers = [*H100_LIVE, *H100_INVENTORY]
    assert unit_problems(nvml_answers, _NVML_UNITS) == []
    assert unit_problems(_amd_answers(interface), _AMD_UNITS) == []
    assert {a.fn for a in nvml_answers} >= set(_NVML_UNITS)
    assert {a.fn for a in _amd_answers(interface)} >= set(_AMD_UNITS)


def test_the_unit_check_fails_on_watts_where_nvml_gives_milliwatts() -> None:
    in_watts = [
        Answer("nvmlDeviceGetPowerUsage", 600),
        Answer("nvmlDeviceGetFieldValues", [nvml_field(612)], ([0],)),
    ]
    assert unit_problems(in_watts, _NVML_UNITS) == [
        "nvmlDeviceGetPowerUsage: 600 is outside [10000, 2e+06]",
        "nvmlDeviceGetFieldValues: 612 is outside [10000, 2e+06]",
    ]


def test_fake_clock_event_reasons_use_only_real_bits() -> None:
    known = 0
    for name in dir(real_nvml):
        if name.startswith(("nvmlClocksEventReason", "nvmlClocksThrottleReason")):
            known |= 0 if name.endswith("All") else getattr(real_nvml, name)
    masks = [a.returns for a in [*H100_LIVE, *H100_INVENTORY] if "Reasons" in a.fn]
    assert masks and all(isinstance(m, int) and m & ~known == 0 for m in masks)


def test_allowed_records_every_place_of_a_result() -> None:
    allowed = Allowed()
    allowed.add({"a": [1, "N/A"], "b": True})
    assert allowed.kinds == {"dict"}
    assert allowed.keys["a"].items is not None
    assert allowed.keys["a"].items.kinds == {"int", "str"}
    assert mismatches({"a": [1.5]}, allowed, "r") == [
        "r['a'][0]: the fake returns float, the real binding int | str"
    ]
