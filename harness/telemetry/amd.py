"""AMD GPUs through amdsmi, imported lazily since its import needs ROCm's libamd_smi.so."""

from __future__ import annotations

import contextlib
import io
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from harness.errors import DeviceError
from harness.telemetry.amd_throttle import active_violations, residency, throttle_reasons
from harness.telemetry.base import Reading, SharedSession
from harness.telemetry.energy import counter_power_mismatch

INSTALL_HINT = "pip install 'beyond-tops[rocm]'"
_UNSUPPORTED = ("NOT_SUPPORTED", "NOT_YET_IMPLEMENTED")
POWER_KEYS = ("current_socket_power", "average_socket_power", "socket_power")


def load_amdsmi() -> tuple[Any, str | None]:
    """Import amdsmi; (module, None), or (None, why it cannot be used)."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):  # it prints its load failure to stdout
            import amdsmi  # type: ignore[import-untyped]
    except ImportError as exc:
        return None, f"amdsmi is not installed ({exc}); {INSTALL_HINT}"
    except (KeyError, OSError) as exc:
        said = " ".join(printed.getvalue().split()) or repr(exc)
        return None, f"amdsmi cannot load libamd_smi.so ({said}); install ROCm's amd-smi-lib"
    return amdsmi, None


def number(value: Any) -> float | None:
    """A number from amdsmi, with its "N/A" (and anything else non-numeric) as None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def describe(err: Exception) -> str:
    """An amdsmi error on one line."""
    return " ".join(str(err).split())


def call(api: Any, what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Call amdsmi; None when the GPU does not support it, DeviceError on any other error."""
    try:
        return fn(*args)
    except api.AmdSmiLibraryException as err:
        if any(code in str(err.get_error_info(detailed=False)) for code in _UNSUPPORTED):
            return None
        raise DeviceError(f"cannot read {what}: {describe(err)}") from None
    except api.AmdSmiException as err:
        raise DeviceError(f"cannot read {what}: {describe(err)}") from None


def energy_counter_mj(api: Any, handle: Any) -> float | None:
    """The GPU's energy accumulator in mJ (accumulator ticks times µJ per tick)."""
    count = call(api, "energy counter", api.amdsmi_get_energy_count, handle)
    if count is None:
        return None
    ticks, uj_per_tick = number(count["energy_accumulator"]), number(count["counter_resolution"])
    return None if ticks is None or uj_per_tick is None else ticks * uj_per_tick / 1000


def power_w(api: Any, handle: Any, key: str | None) -> float | None:
    """Socket power (W) from the power info field chosen at discovery."""
    if key is None:
        return None
    info = call(api, "power", api.amdsmi_get_power_info, handle)
    return None if info is None else number(info.get(key))


def shut_down(api: Any) -> None:
    """amdsmi_shut_down, ignoring errors: there is nothing left to release."""
    with contextlib.suppress(api.AmdSmiException):
        api.amdsmi_shut_down()


class AmdGpuSource:
    """One AMD GPU: socket power, energy (once validated), temperature, clocks, throttlers."""

    kind = "gpu"

    def __init__(
        self,
        *,
        name: str,
        api: Any,
        handle: Any,
        session: SharedSession,
        power_key: str | None,
        energy_trusted: bool,
    ) -> None:
        self.name, self._api, self._handle, self._session = name, api, handle, session
        self._power_key, self._energy_trusted, self._closed = power_key, energy_trusted, False
        self._residency: dict[str, int] | None = None  # at the previous read
        self.power_method = f"amdsmi_get_power_info {power_key}" if power_key else ""
        self.energy_method = "amdsmi_get_energy_count" if energy_trusted else ""

    def read(self) -> Reading:
        """One sample of every quantity the GPU reports."""
        api, h = self._api, self._handle
        try:
            activity = call(api, "activity", api.amdsmi_get_gpu_activity, h)
            metrics = call(api, "gpu metrics", api.amdsmi_get_gpu_metrics_info, h)
            previous, self._residency = self._residency, residency(metrics)
            return Reading(
                power_w=power_w(api, h, self._power_key),
                temp_c=self._temp_c(),
                sm_clock_mhz=self._clock_mhz(api.AmdSmiClkType.GFX),
                mem_clock_mhz=self._clock_mhz(api.AmdSmiClkType.MEM),
                util_pct=None if activity is None else number(activity.get("gfx_activity")),
                throttle=throttle_reasons(metrics, previous),
            )
        except DeviceError as exc:
            raise DeviceError(f"{self.name}: {exc}") from None

    def energy_mj(self) -> float | None:
        """The energy counter (mJ) when it passed validation; None otherwise."""
        if not self._energy_trusted:
            return None
        try:
            return energy_counter_mj(self._api, self._handle)
        except DeviceError as exc:
            raise DeviceError(f"{self.name}: {exc}") from None

    memory_method = "amdsmi_get_gpu_memory_usage (VRAM)"

    def memory_bytes(self) -> tuple[int, int | None] | None:
        """(used, total) bytes of the GPU's VRAM, every process's; None if not reported."""
        api, h, vram = self._api, self._handle, self._api.AmdSmiMemoryType.VRAM
        try:
            used = number(call(api, "VRAM in use", api.amdsmi_get_gpu_memory_usage, h, vram))
            total = number(call(api, "VRAM total", api.amdsmi_get_gpu_memory_total, h, vram))
        except DeviceError as exc:
            raise DeviceError(f"{self.name}: {exc}") from None
        return None if used is None else (int(used), None if total is None else int(total))

    def close(self) -> None:
        """Release this source's share of the amdsmi session."""
        if not self._closed:
            self._closed = True
            self._session.release()

    def _temp_c(self) -> float | None:
        api = self._api
        for sensor in (api.AmdSmiTemperatureType.HOTSPOT, api.AmdSmiTemperatureType.EDGE):
            value = call(
                api,
                "temperature",
                api.amdsmi_get_temp_metric,
                self._handle,
                sensor,
                api.AmdSmiTemperatureMetric.CURRENT,
            )
            if number(value) is not None:
                return number(value)
        return None

    def _clock_mhz(self, clock_type: Any) -> float | None:
        info = call(self._api, "clock", self._api.amdsmi_get_clock_info, self._handle, clock_type)
        return None if info is None else number(info.get("clk"))


def amd_sources(
    *,
    validate_s: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], int] = time.monotonic_ns,
) -> tuple[list[AmdGpuSource], list[tuple[str, str]]]:
    """A source per AMD GPU, and reasons for what is missing (library, counters)."""
    api, handles, reason = open_gpus()
    if reason is not None:
        return [], [("amdsmi", reason)]
    session = SharedSession(len(handles), lambda: shut_down(api))
    keys = [_power_key(api, h) for h in handles]
    verdicts = validate_counters(api, handles, keys, window_s=validate_s, sleep=sleep, clock=clock)
    sources, missing = [], []
    for index, (handle, key, verdict) in enumerate(zip(handles, keys, verdicts, strict=True)):
        name = f"gpu{index}"
        if key is None:
            missing.append((f"{name} power", "amdsmi reports no socket power for this GPU"))
        if verdict is not None:
            missing.append((f"{name} energy counter", f"not trusted: {verdict}"))
        sources.append(
            AmdGpuSource(
                name=name,
                api=api,
                handle=handle,
                session=session,
                power_key=key,
                energy_trusted=verdict is None,
            )
        )
    return sources, missing


def open_gpus() -> tuple[Any, list[Any], str | None]:
    """Import and initialise amdsmi and list the GPUs; (api, handles, reason it failed)."""
    api, reason = load_amdsmi()
    if reason is not None:
        return None, [], reason
    try:
        api.amdsmi_init(api.AmdSmiInitFlags.INIT_AMD_GPUS)
    except api.AmdSmiException as err:
        return None, [], f"cannot initialise amdsmi: {describe(err)}"
    try:
        handles = list(api.amdsmi_get_processor_handles())
    except api.AmdSmiException as err:
        shut_down(api)
        return None, [], f"cannot list AMD GPUs: {describe(err)}"
    if not handles:
        shut_down(api)
        return None, [], "amdsmi found no AMD GPU"
    return api, handles, None


def _power_key(api: Any, handle: Any) -> str | None:
    try:
        info = call(api, "power", api.amdsmi_get_power_info, handle)
    except DeviceError:
        return None
    return next((k for k in POWER_KEYS if info and number(info.get(k)) is not None), None)


def validate_counters(
    api: Any,
    handles: Sequence[Any],
    keys: Sequence[str | None],
    *,
    window_s: float,
    sleep: Callable[[float], None],
    clock: Callable[[], int],
    steps: int = 4,
) -> list[str | None]:
    """Per GPU, why its energy counter cannot be trusted, or None when it can.

    The counters of all GPUs are read across one short window and compared with the power
    readings taken meanwhile.
    """
    start = [_safe(energy_counter_mj, api, h) for h in handles]
    t0 = clock()
    powers: list[list[float]] = [[] for _ in handles]
    for _ in range(steps):
        sleep(window_s / steps)
        for readings, handle, key in zip(powers, handles, keys, strict=True):
            value = _safe(power_w, api, handle, key)
            if value is not None:
                readings.append(value)
    end = [_safe(energy_counter_mj, api, h) for h in handles]
    duration_ns = clock() - t0
    verdicts: list[str | None] = []
    for e0, e1, readings in zip(start, end, powers, strict=True):
        if e0 is None or e1 is None:
            verdicts.append("energy counter not readable")
        elif not readings:
            verdicts.append("no power readings to check the energy counter against")
        else:
            verdicts.append(
                counter_power_mismatch(e1 - e0, duration_ns, statistics.fmean(readings))
            )
    return verdicts


def _safe(read: Callable[..., float | None], *args: Any) -> float | None:
    try:
        return read(*args)
    except DeviceError:
        return None


_PCIE_GEN_BY_MTS = {2500: 1, 5000: 2, 8000: 3, 16000: 4, 32000: 5, 64000: 6}
_NOT_ON_AMD = {
    "power_limit_enforced_w": "amdsmi reports no separate enforced power limit",
    "clock_sm_default_mhz": "amdsmi reports no default application clocks",
    "clock_mem_default_mhz": "amdsmi reports no default application clocks",
    "persistence_mode": "AMD GPUs have no persistence mode",
    "mig_mode": "AMD GPUs have no MIG; see compute_partition and memory_partition",
    "compute_mode": "AMD GPUs have no compute mode",
}


def _processes(api: Any, h: Any) -> list[dict[str, Any]]:
    return [
        {"pid": int(p["pid"]), "type": "compute", "used_memory_mib": int(p["mem"]) // 2**20}
        for p in api.amdsmi_get_gpu_process_list(h)
    ]


def _throttle_now(api: Any, h: Any) -> list[str] | None:
    reasons = throttle_reasons(api.amdsmi_get_gpu_metrics_info(h))
    read_violations = getattr(api, "amdsmi_get_violation_status", None)  # amdsmi 6.3 and newer
    if reasons is None and read_violations is not None:
        # MI300 and newer have no status bits; amdsmi compares their accumulators for us.
        reasons = active_violations(read_violations(h))
    return None if reasons is None else list(reasons)


_GPU_FIELDS: tuple[tuple[str, Callable[[Any, Any], Any]], ...] = (
    ("name", lambda api, h: api.amdsmi_get_gpu_asic_info(h)["market_name"]),
    ("uuid", lambda api, h: api.amdsmi_get_gpu_device_uuid(h)),
    ("pci_bus_id", lambda api, h: api.amdsmi_get_gpu_device_bdf(h)),
    ("driver_version", lambda api, h: api.amdsmi_get_gpu_driver_info(h)["driver_version"]),
    (
        "memory_total_mib",
        lambda api, h: api.amdsmi_get_gpu_memory_total(h, api.AmdSmiMemoryType.VRAM) // 2**20,
    ),
    # amdsmi reports power caps in microwatts.
    ("power_limit_w", lambda api, h: api.amdsmi_get_power_cap_info(h)["power_cap"] / 1e6),
    (
        "power_limit_default_w",
        lambda api, h: api.amdsmi_get_power_cap_info(h)["default_power_cap"] / 1e6,
    ),
    (
        "clock_sm_max_mhz",
        lambda api, h: api.amdsmi_get_clock_info(h, api.AmdSmiClkType.GFX)["max_clk"],
    ),
    (
        "clock_mem_max_mhz",
        lambda api, h: api.amdsmi_get_clock_info(h, api.AmdSmiClkType.MEM)["max_clk"],
    ),
    ("ecc_enabled", lambda api, h: api.amdsmi_get_gpu_ecc_enabled(h) != 0),
    ("compute_partition", lambda api, h: api.amdsmi_get_gpu_compute_partition(h)),
    ("memory_partition", lambda api, h: api.amdsmi_get_gpu_memory_partition(h)),
    (
        "pcie_gen",
        lambda api, h: _PCIE_GEN_BY_MTS[api.amdsmi_get_pcie_info(h)["pcie_metric"]["pcie_speed"]],
    ),
    ("pcie_width", lambda api, h: api.amdsmi_get_pcie_info(h)["pcie_metric"]["pcie_width"]),
    (
        "pcie_gen_max",
        lambda api, h: api.amdsmi_get_pcie_info(h)["pcie_static"]["pcie_interface_version"],
    ),
    (
        "pcie_width_max",
        lambda api, h: api.amdsmi_get_pcie_info(h)["pcie_static"]["max_pcie_width"],
    ),
    ("processes", _processes),
    ("throttle_reasons_active", _throttle_now),
)


def amd_inventory() -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Static facts per AMD GPU for the fingerprint, and (field, reason) for what failed."""
    api, handles, reason = open_gpus()
    if reason is not None:
        return [], [("amdsmi", reason)]
    missing: list[tuple[str, str]] = []
    try:
        ok, rocm = api.amdsmi_get_rocm_version()
        if not ok:
            missing.append(("rocm_version", str(rocm)))
        gpus = []
        for index, handle in enumerate(handles):
            info: dict[str, Any] = {
                "index": index,
                "vendor": "amd",
                "rocm_version": rocm if ok else None,
            }
            for key, read in _GPU_FIELDS:
                info[key] = _field(api, missing, f"gpu{index}.{key}", read, handle)
            for key, why in _NOT_ON_AMD.items():
                info[key] = None
                missing.append((f"gpu{index}.{key}", why))
            gpus.append(info)
    finally:
        shut_down(api)
    return gpus, missing


def _field(
    api: Any,
    missing: list[tuple[str, str]],
    label: str,
    read: Callable[[Any, Any], Any],
    handle: Any,
) -> Any:
    """One fact, or None with its reason appended to missing."""
    try:
        value = read(api, handle)
    except api.AmdSmiException as err:
        missing.append((label, describe(err)))
        return None
    except (KeyError, TypeError, ValueError):  # "N/A" where a number belongs
        value = None
    if value is None or value == "N/A":
        missing.append((label, "not reported by amdsmi for this GPU"))
        return None
    return value
