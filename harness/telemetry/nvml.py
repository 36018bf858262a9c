"""NVIDIA GPUs through NVML (nvidia-ml-py): power, energy, clocks, throttle reasons, inventory."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.errors import DeviceError
from harness.telemetry.base import Reading, SharedSession

try:
    import pynvml as pynvml  # type: ignore[import-untyped]  # nvml_inventory reads it here
except ImportError:  # the nvidia extra is not installed; discovery reports it
    pynvml = None

INSTALL_HINT = "pip install 'beyond-tops[nvidia]'"
# Report names of the clock-event (throttle) reasons, and the suffix of their pynvml
# constants: nvmlClocksEventReason<suffix>, or nvmlClocksThrottleReason<suffix> before 535.
_REASONS = (
    ("gpu_idle", "GpuIdle"),
    ("applications_clocks_setting", "ApplicationsClocksSetting"),
    ("sw_power_cap", "SwPowerCap"),
    ("hw_slowdown", "HwSlowdown"),
    ("sync_boost", "SyncBoost"),
    ("sw_thermal_slowdown", "SwThermalSlowdown"),
    ("hw_thermal_slowdown", "HwThermalSlowdown"),
    ("hw_power_brake_slowdown", "HwPowerBrakeSlowdown"),
    ("display_clock_setting", "DisplayClockSetting"),
    ("board_limit", "BoardLimit"),
    ("reliability", "Reliability"),
)
_COMPUTE_MODES = (
    ("NVML_COMPUTEMODE_DEFAULT", "default"),
    ("NVML_COMPUTEMODE_EXCLUSIVE_THREAD", "exclusive_thread"),
    ("NVML_COMPUTEMODE_PROHIBITED", "prohibited"),
    ("NVML_COMPUTEMODE_EXCLUSIVE_PROCESS", "exclusive_process"),
)
_VALUE_FIELDS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")


@dataclass(frozen=True, kw_only=True)
class _Constants:
    """pynvml's constants and error types, captured at import: an autospec'd module mocks them."""

    error: type[Exception]
    not_supported: type[Exception]
    function_not_found: type[Exception]
    codes: Mapping[int, str]
    success: int
    clock_sm: int
    clock_mem: int
    temperature_gpu: int
    power_instant_field: int | None
    perf_policies: tuple[tuple[str, int], ...]
    feature_enabled: int
    mig_enabled: int
    reason_bits: tuple[tuple[int, str], ...]
    compute_modes: Mapping[int, str]


def _constants(lib: Any) -> _Constants:
    bits = []
    for label, suffix in _REASONS:
        old = getattr(lib, f"nvmlClocksThrottleReason{suffix}", None)
        value = getattr(lib, f"nvmlClocksEventReason{suffix}", old)
        if value is not None:
            bits.append((int(value), label))
    codes = {
        lib.NVML_ERROR_LIBRARY_NOT_FOUND: "no NVIDIA driver: libnvidia-ml.so.1 not found",
        lib.NVML_ERROR_DRIVER_NOT_LOADED: "no NVIDIA driver: the kernel module is not loaded",
        lib.NVML_ERROR_NO_PERMISSION: "permission denied by the NVIDIA driver",
        lib.NVML_ERROR_LIB_RM_VERSION_MISMATCH: (
            "NVML and the kernel driver differ in version (driver updated without a reboot?)"
        ),
    }
    return _Constants(
        error=lib.NVMLError,
        not_supported=lib.NVMLError_NotSupported,
        function_not_found=lib.NVMLError_FunctionNotFound,
        codes=codes,
        success=lib.NVML_SUCCESS,
        clock_sm=lib.NVML_CLOCK_SM,
        clock_mem=lib.NVML_CLOCK_MEM,
        temperature_gpu=lib.NVML_TEMPERATURE_GPU,
        power_instant_field=getattr(lib, "NVML_FI_DEV_POWER_INSTANT", None),
        perf_policies=(
            ("power", lib.NVML_PERF_POLICY_POWER),
            ("thermal", lib.NVML_PERF_POLICY_THERMAL),
        ),
        feature_enabled=lib.NVML_FEATURE_ENABLED,
        mig_enabled=getattr(lib, "NVML_DEVICE_MIG_ENABLE", 1),
        reason_bits=tuple(bits),
        compute_modes={getattr(lib, k): v for k, v in _COMPUTE_MODES if hasattr(lib, k)},
    )


_K: _Constants | None = _constants(pynvml) if pynvml is not None else None


def _k() -> _Constants:
    if _K is None:  # callers check _init_reason() first
        raise DeviceError(f"nvidia-ml-py is not installed; {INSTALL_HINT}")
    return _K


def decode_reasons(mask: int) -> tuple[str, ...]:
    """Names of the clock-event (throttle) reasons set in an NVML bitmask."""
    names = [label for bit, label in _k().reason_bits if mask & bit]
    rest = mask
    for bit, _ in _k().reason_bits:
        rest &= ~bit
    names += [f"unknown_0x{1 << i:x}" for i in range(64) if rest >> i & 1]
    return tuple(names)


def _describe(err: Exception) -> str:
    code = getattr(err, "value", None)
    known = _k().codes.get(code, "") if isinstance(code, int) else ""
    return f"{known} ({err})" if known else f"NVML error: {err}"


def _init_reason() -> str | None:
    """Initialise NVML; the reason it is unusable, or None (then call nvmlShutdown later)."""
    if pynvml is None:
        return f"nvidia-ml-py is not installed; {INSTALL_HINT}"
    try:
        pynvml.nvmlInit()
    except _k().error as err:
        return _describe(err)
    return None


def _shutdown() -> None:
    try:
        pynvml.nvmlShutdown()
    except _k().error:
        pass  # nothing left to release


class NvmlGpuSource:
    """One NVIDIA GPU: instant power, clocks, temperature, utilization, throttle reasons."""

    kind = "gpu"

    def __init__(
        self,
        *,
        name: str,
        handle: Any,
        session: SharedSession,
        energy_counter: bool,
        instant_power: bool,
    ) -> None:
        self.name, self._handle, self._session = name, handle, session
        self._energy, self._instant, self._closed = energy_counter, instant_power, False
        self.energy_method = "nvmlDeviceGetTotalEnergyConsumption" if energy_counter else ""
        self.power_method = (
            "NVML field NVML_FI_DEV_POWER_INSTANT (instant)"
            if instant_power
            else "nvmlDeviceGetPowerUsage (a 1 s average on Ampere and newer)"
        )

    def read(self) -> Reading:
        """One sample of every quantity the GPU reports."""
        h, k = self._handle, _k()
        util = self._opt("utilization", pynvml.nvmlDeviceGetUtilizationRates, h)
        mask = self._opt("clock event reasons", current_reasons_mask, h)
        return Reading(
            power_w=self._power_w(),
            temp_c=self._opt("temperature", pynvml.nvmlDeviceGetTemperature, h, k.temperature_gpu),
            sm_clock_mhz=self._opt("SM clock", pynvml.nvmlDeviceGetClockInfo, h, k.clock_sm),
            mem_clock_mhz=self._opt("memory clock", pynvml.nvmlDeviceGetClockInfo, h, k.clock_mem),
            util_pct=None if util is None else float(util.gpu),
            throttle=None if mask is None else decode_reasons(int(mask)),
        )

    def energy_mj(self) -> float | None:
        """The GPU's total energy counter (mJ since the driver loaded); None if unsupported."""
        if not self._energy:
            return None
        value = self._opt("energy", pynvml.nvmlDeviceGetTotalEnergyConsumption, self._handle)
        return None if value is None else float(value)

    memory_method = "nvmlDeviceGetMemoryInfo"

    def memory_bytes(self) -> tuple[int, int | None] | None:
        """(used, total) bytes of the GPU's memory, every process's; None if unsupported."""
        info = self._opt("memory", pynvml.nvmlDeviceGetMemoryInfo, self._handle)
        return None if info is None else (int(info.used), int(info.total))

    def violation_ns(self) -> dict[str, int]:
        """Cumulative time (ns) clocks were held below target for power and thermal reasons."""
        counters = {}
        for cause, policy in _k().perf_policies:
            status = self._opt(
                f"{cause} violations", pynvml.nvmlDeviceGetViolationStatus, self._handle, policy
            )
            if status is not None:
                counters[cause] = int(status.violationTime)
        return counters

    def close(self) -> None:
        """Release this source's share of the NVML session."""
        if not self._closed:
            self._closed = True
            self._session.release()

    def _power_w(self) -> float | None:
        field = _k().power_instant_field
        if self._instant and field is not None:
            values = self._opt(
                "instant power", pynvml.nvmlDeviceGetFieldValues, self._handle, [field]
            )
            value = None if values is None else field_value(values[0])
            if value is not None:
                return value / 1000
        milliwatts = self._opt("power", pynvml.nvmlDeviceGetPowerUsage, self._handle)
        return None if milliwatts is None else milliwatts / 1000

    def _opt(self, what: str, call: Callable[..., Any], *args: Any) -> Any:
        """Call NVML; None when the GPU does not support it, DeviceError on any other error."""
        try:
            return call(*args)
        except _k().not_supported:
            return None
        except _k().error as err:
            raise DeviceError(f"{self.name}: cannot read {what}: {_describe(err)}") from None


def current_reasons_mask(handle: Any) -> int:
    """The bitmask of active clock-event (throttle) reasons."""
    try:
        return int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle))
    except _k().function_not_found:  # drivers before 535 only have the old name
        return int(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle))


def field_value(value: Any) -> float | None:
    """A field value's number per its valueType; None when NVML returned an error for it."""
    if value.nvmlReturn != _k().success:
        return None
    kind = int(value.valueType)
    if not 0 <= kind < len(_VALUE_FIELDS):
        return None
    return float(getattr(value.value, _VALUE_FIELDS[kind]))


def nvml_sources() -> tuple[list[NvmlGpuSource], list[tuple[str, str]]]:
    """A source per NVIDIA GPU, and reasons for what is missing (driver, counters, fields)."""
    reason = _init_reason()
    if reason is not None:
        return [], [("nvml", reason)]
    try:
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    except _k().error as err:
        _shutdown()
        return [], [("nvml", f"cannot enumerate GPUs: {_describe(err)}")]
    if not handles:
        _shutdown()
        return [], [("nvml", "NVML found no NVIDIA GPU")]
    session = SharedSession(len(handles), _shutdown)
    sources, missing = [], []
    for index, handle in enumerate(handles):
        source, notes = _probe(f"gpu{index}", handle, session)
        sources.append(source)
        missing += notes
    return sources, missing


def _probe(
    name: str, handle: Any, session: SharedSession
) -> tuple[NvmlGpuSource, list[tuple[str, str]]]:
    notes = []
    try:
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        energy = True
    except _k().error as err:
        energy = False
        why = (
            "not supported (before Volta)"
            if isinstance(err, _k().not_supported)
            else _describe(err)
        )
        notes.append((f"{name} energy counter", f"{why}; energy integrated from power samples"))
    instant = _instant_power_supported(handle)
    if not instant:
        notes.append(
            (
                f"{name} instant power",
                "NVML_FI_DEV_POWER_INSTANT not supported; "
                "using nvmlDeviceGetPowerUsage, a 1 s average on Ampere and newer",
            )
        )
    return NvmlGpuSource(
        name=name, handle=handle, session=session, energy_counter=energy, instant_power=instant
    ), notes


def _instant_power_supported(handle: Any) -> bool:
    field = _k().power_instant_field
    if field is None:
        return False
    try:
        values = pynvml.nvmlDeviceGetFieldValues(handle, [field])
    except _k().error:
        return False
    return field_value(values[0]) is not None
