"""Hand-written fakes for telemetry tests: sources, clocks, a trace replayer, vendor stubs."""

from __future__ import annotations

import csv
import importlib
import importlib.util
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from unittest import mock

from harness.errors import DeviceError
from harness.telemetry import Reading
from harness.telemetry.base import LoggedRows

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "telemetry"
MS = 1_000_000


class StepClock:
    """A monotonic clock that advances by a fixed step on every call."""

    def __init__(self, start_ns: int = 0, step_ns: int = 0) -> None:
        self.now_ns, self.step_ns = start_ns, step_ns

    def __call__(self) -> int:
        now = self.now_ns
        self.now_ns += self.step_ns
        return now


class FakeSource:
    """A power source returning scripted readings; counts its calls."""

    def __init__(
        self,
        name: str = "gpu0",
        kind: str = "gpu",
        *,
        readings: Sequence[Reading] = (Reading(power_w=100.0),),
        energy: Sequence[float | None] = (None,),
        fail_with: Exception | None = None,
        signal_after: int = 3,
    ) -> None:
        self.name, self.kind = name, kind
        self._readings, self._energy, self._fail = list(readings), list(energy), fail_with
        self.reads = self.energy_reads = 0
        self.enough = threading.Event()
        self._signal_after = signal_after
        self.power_method = f"fake {name}"

    def read(self) -> Reading:
        self.reads += 1
        if self.reads >= self._signal_after:
            self.enough.set()
        if self._fail is not None:
            raise self._fail
        return self._readings[(self.reads - 1) % len(self._readings)]

    def energy_mj(self) -> float | None:
        self.energy_reads += 1
        return self._energy[min(self.energy_reads - 1, len(self._energy) - 1)]


class FakeViolationSource(FakeSource):
    """A fake GPU with violation counters that advance between the window's edges."""

    def __init__(self, name: str = "gpu0", *, signal_after: int = 3) -> None:
        super().__init__(name, signal_after=signal_after)
        self.violation_reads = 0

    def violation_ns(self) -> dict[str, int]:
        self.violation_reads += 1
        if self.violation_reads == 1:
            return {"power": 1_000, "thermal": 0}
        return {"power": 251_000_000, "thermal": 0}


class FakeLoggedSource:
    """A wall meter whose log holds fixed rows."""

    def __init__(self, rows: Sequence[tuple[int, float]], *, fail: bool = False) -> None:
        self.name, self.kind = "wall", "wall"
        self.rows, self.fail = list(rows), fail
        self.asked: list[tuple[int, int]] = []

    def read(self) -> Reading:
        raise AssertionError("a logged source is never sampled live")

    def energy_mj(self) -> None:
        return None

    def readings_between(self, start_unix_ns: int, end_unix_ns: int) -> LoggedRows:
        self.asked.append((start_unix_ns, end_unix_ns))
        if self.fail:
            raise DeviceError("wall: meter log vanished")
        inside = [(t, w) for t, w in self.rows if start_unix_ns <= t <= end_unix_ns]
        return LoggedRows(rows=tuple(inside))


@dataclass(frozen=True, kw_only=True)
class TraceRow:
    """One row of a recorded trace."""

    t_ns: int
    reading: Reading
    energy_mj: float
    violations_ns: dict[str, int]


def load_trace(path: Path) -> list[TraceRow]:
    """Rows of a trace CSV (t_ms, power_w, …, throttle, energy_mj, violation columns)."""
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    rows = []
    for r in csv.DictReader(lines):
        throttle = tuple(r["throttle"].split("|")) if r["throttle"] else ()
        reading = Reading(
            power_w=float(r["power_w"]),
            temp_c=float(r["temp_c"]),
            sm_clock_mhz=float(r["sm_clock_mhz"]),
            mem_clock_mhz=float(r["mem_clock_mhz"]),
            util_pct=float(r["util_pct"]),
            throttle=throttle,
        )
        violations = {
            "power": int(r["power_violation_ns"]),
            "thermal": int(r["thermal_violation_ns"]),
        }
        rows.append(
            TraceRow(
                t_ns=int(r["t_ms"]) * MS,
                reading=reading,
                energy_mj=float(r["energy_mj"]),
                violations_ns=violations,
            )
        )
    return rows


class ReplayClock:
    """Monotonic time of the next trace row to replay (the last row's, once all are read)."""

    def __init__(self, rows: Sequence[TraceRow]) -> None:
        self.rows, self.index = rows, 0

    def __call__(self) -> int:
        return self.rows[min(self.index, len(self.rows) - 1)].t_ns


class ReplaySource:
    """A GPU replaying a recorded trace, one row per read, in step with its ReplayClock."""

    kind = "gpu"
    power_method = "replayed trace"
    energy_method = "trace energy_mj"

    def __init__(self, clock: ReplayClock, name: str = "gpu0") -> None:
        self.name, self.clock = name, clock
        self.on_last: Callable[[], None] = lambda: None

    def read(self) -> Reading:
        row = self.clock.rows[self.clock.index]
        self.clock.index += 1
        if self.clock.index == len(self.clock.rows):
            self.on_last()
        return row.reading

    def _current(self) -> TraceRow:
        return self.clock.rows[max(self.clock.index - 1, 0)]

    def energy_mj(self) -> float:
        return self._current().energy_mj

    def violation_ns(self) -> dict[str, int]:
        return dict(self._current().violations_ns)


def import_real_amdsmi() -> tuple[ModuleType, ModuleType, ModuleType]:
    """The real amdsmi package, its amdsmi_interface and amdsmi_wrapper, without ROCm.

    amdsmi_wrapper loads libamd_smi.so with ctypes.CDLL when imported, so importing amdsmi
    fails without ROCm. The wrapper's own code runs here with CDLL stubbed out (its enums,
    constants and structures stay real) and is placed in sys.modules; the interface module
    is then imported over it. sys.modules is restored afterwards: the package stays private.
    """
    spec = importlib.util.find_spec("amdsmi")
    if spec is None or spec.origin is None:
        raise RuntimeError("amdsmi is not installed")
    path = Path(spec.origin).parent / "amdsmi_wrapper.py"
    with mock.patch.dict(sys.modules):
        for name in [n for n in sys.modules if n == "amdsmi" or n.startswith("amdsmi.")]:
            del sys.modules[name]
        wrapper_spec = importlib.util.spec_from_file_location("amdsmi.amdsmi_wrapper", path)
        if wrapper_spec is None or wrapper_spec.loader is None:
            raise RuntimeError(f"cannot load {path}")
        wrapper = importlib.util.module_from_spec(wrapper_spec)
        with mock.patch("ctypes.CDLL"):
            wrapper_spec.loader.exec_module(wrapper)
        sys.modules["amdsmi.amdsmi_wrapper"] = wrapper
        interface = importlib.import_module("amdsmi.amdsmi_interface")
        package = sys.modules["amdsmi"]
    return package, interface, wrapper


def autospec_amdsmi(interface: ModuleType) -> mock.NonCallableMagicMock:
    """An autospec of amdsmi_interface whose classes (exceptions, enums) stay the real ones."""
    api = mock.create_autospec(interface)
    for name, value in vars(interface).items():
        if isinstance(value, type):
            setattr(api, name, value)
    return api
