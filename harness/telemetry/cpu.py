"""Host CPU sampling over the measured window: clocks, busy share, load and temperatures.

Read from /proc and /sys under an injectable root (tests pass a fake tree): per-core clocks
from cpufreq's scaling_cur_freq, else /proc/cpuinfo's "cpu MHz"; busy share from /proc/stat
deltas; load from /proc/loadavg; temperatures from hwmon and thermal zones. What a machine
does not expose is left out, with its reason.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError, RunError
from harness.telemetry.cpufile import NS_PER_S, CpuRow, CpuSeries, CpuTelemetry

CPUFREQ = "/sys/devices/system/cpu/cpu{n}/cpufreq/scaling_cur_freq"
NO_CLOCK = (
    "neither cpufreq (/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq) nor a 'cpu MHz' "
    "line in /proc/cpuinfo: this CPU or VM does not expose its clock"
)
NO_TEMPERATURE = (
    "no hwmon temp*_input and no thermal_zone*/temp under /sys/class: this machine exposes "
    "no temperature sensor (usual on a VM)"
)
CPUINFO_CLOCK = (
    "/proc/cpuinfo 'cpu MHz' (no cpufreq driver; on a VM often the nominal clock, not the "
    "current one)"
)
# /proc/stat's first eight fields: user nice system idle iowait irq softirq steal (guest time
# is inside user already); idle and iowait are the idle ones.
_STAT_FIELDS = 8
_IDLE = (3, 4)


@dataclass(frozen=True, kw_only=True)
class _Snapshot:
    """Raw readings at one instant: /proc/stat ticks per cpu line, then the other values."""

    ticks: dict[str, tuple[int, int]]
    values: dict[str, float | None]


class CpuProbe:
    """Reads the series that discover_cpu() found, under its root; notes each read error."""

    def __init__(self, root: Path, series: tuple[CpuSeries, ...], busy_lines: tuple[str, ...]):
        self.root = root
        self.series = series
        self._busy_lines = busy_lines
        self.errors: dict[tuple[str, str], None] = {}

    def read(self) -> _Snapshot:
        """One snapshot of every series (busy shares come from two of them)."""
        ticks = self._ticks() if self._busy_lines else {}
        values: dict[str, float | None] = {}
        cpuinfo: dict[int, float] | None = None
        for s in self.series:
            if s.kind == "busy":
                continue
            if s.source == "/proc/cpuinfo":
                cpuinfo = self._cpuinfo() if cpuinfo is None else cpuinfo
                values[s.column] = cpuinfo.get(_cpu_number(s.column))
            else:
                values[s.column] = self._value(s)
        return _Snapshot(ticks=ticks, values=values)

    def _ticks(self) -> dict[str, tuple[int, int]]:
        try:
            return stat_ticks(_read(self.root, "proc/stat"))
        except (OSError, ValueError) as exc:
            self.errors[("busy", f"/proc/stat: {exc}")] = None
            return {}

    def _cpuinfo(self) -> dict[int, float]:
        try:
            return cpuinfo_mhz(_read(self.root, "proc/cpuinfo"))
        except (OSError, ValueError) as exc:
            self.errors[("clock", f"/proc/cpuinfo: {exc}")] = None
            return {}

    def _value(self, s: CpuSeries) -> float | None:
        try:
            text = _read(self.root, s.source)
            if s.kind == "load":
                return float(text.split()[0])
            scale = 1000.0  # cpufreq in kHz, hwmon and thermal zones in millidegrees
            return float(text.strip()) / scale
        except (OSError, ValueError, IndexError) as exc:
            self.errors[(s.column, f"{s.source}: {exc}")] = None
            return None


def busy_pct(before: tuple[int, int], after: tuple[int, int]) -> float | None:
    """The busy share (%) between two (busy, total) tick counts; None when no tick passed."""
    total = after[1] - before[1]
    if total <= 0:
        return None
    return round(100.0 * min(max(after[0] - before[0], 0), total) / total, 3)


def stat_ticks(text: str) -> dict[str, tuple[int, int]]:
    """(busy, total) ticks of each 'cpu' and 'cpuN' line of /proc/stat."""
    out: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not re.fullmatch(r"cpu\d*", name):
            continue
        fields = [int(f) for f in rest.split()[:_STAT_FIELDS]]
        total = sum(fields)
        idle = sum(fields[i] for i in _IDLE if i < len(fields))
        out[name] = (total - idle, total)
    return out


def cpuinfo_mhz(text: str) -> dict[int, float]:
    """Each processor's 'cpu MHz' from /proc/cpuinfo (x86 prints it; most ARM kernels do not)."""
    out: dict[int, float] = {}
    processor: int | None = None
    for line in text.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "processor":
            processor = int(value)
        elif key == "cpu MHz" and processor is not None:
            out[processor] = float(value)
    return out


def discover_cpu(root: Path = Path("/")) -> tuple[CpuProbe, list[tuple[str, str]]]:
    """The probe of every series this machine exposes, and (kind, reason) for those it lacks."""
    missing: list[tuple[str, str]] = []
    busy, lines = _busy_series(root, missing)
    clocks = _clock_series(root, missing)
    load = _load_series(root, missing)
    temps = _temp_series(root, missing)
    return CpuProbe(root, (*busy, *clocks, *load, *temps), lines), missing


def _busy_series(
    root: Path, missing: list[tuple[str, str]]
) -> tuple[list[CpuSeries], tuple[str, ...]]:
    try:
        names = sorted(stat_ticks(_read(root, "proc/stat")), key=_line_order)
    except (OSError, ValueError) as exc:
        missing.append(("busy", f"/proc/stat unreadable: {exc}"))
        return [], ()
    series = [
        CpuSeries(
            column=f"{name}_busy_pct" if name != "cpu" else "busy_pct",
            unit="%",
            kind="busy",
            source="/proc/stat",
        )
        for name in names
    ]
    return series, tuple(names)


def _clock_series(root: Path, missing: list[tuple[str, str]]) -> list[CpuSeries]:
    cpus = sorted(
        int(p.parent.parent.name[3:])
        for p in root.glob("sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq")
    )
    if cpus:
        return [
            CpuSeries(column=f"cpu{n}_mhz", unit="MHz", kind="clock", source=CPUFREQ.format(n=n))
            for n in cpus
        ]
    try:
        found = sorted(cpuinfo_mhz(_read(root, "proc/cpuinfo")))
    except (OSError, ValueError):
        found = []
    if not found:
        missing.append(("clock", NO_CLOCK))
    return [
        CpuSeries(column=f"cpu{n}_mhz", unit="MHz", kind="clock", source="/proc/cpuinfo")
        for n in found
    ]


def _load_series(root: Path, missing: list[tuple[str, str]]) -> list[CpuSeries]:
    if not (root / "proc/loadavg").is_file():
        missing.append(("load", "/proc/loadavg is missing"))
        return []
    return [CpuSeries(column="load_1m", unit="runnable tasks", kind="load", source="/proc/loadavg")]


def _temp_series(root: Path, missing: list[tuple[str, str]]) -> list[CpuSeries]:
    found: list[tuple[str, str]] = []  # (sensor name, file)
    for sensor in sorted(root.glob("sys/class/hwmon/hwmon*/temp*_input")):
        chip = _optional(sensor.parent / "name") or sensor.parent.name
        label = _optional(sensor.with_name(sensor.name.replace("_input", "_label")))
        found.append((f"{chip} {label or sensor.name.split('_')[0]}", _rel(root, sensor)))
    for zone in sorted(root.glob("sys/class/thermal/thermal_zone*/temp")):
        found.append((_optional(zone.parent / "type") or zone.parent.name, _rel(root, zone)))
    if not found:
        missing.append(("temperature", NO_TEMPERATURE))
    series: list[CpuSeries] = []
    for name, path in found:
        column = _unique(f"temp_{_slug(name)}_c", {s.column for s in series})
        series.append(CpuSeries(column=column, unit="°C", kind="temperature", source=path))
    return series


class CpuSampler:
    """Samples a CpuProbe on a background thread between start() and stop().

    A row is taken at the window's start, every ``interval_s`` on a fixed schedule, and at
    its end; busy shares are over the time since the previous row (empty in the first).
    """

    def __init__(
        self,
        probe: CpuProbe,
        *,
        interval_s: float,
        unavailable: list[tuple[str, str]] | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        if not interval_s > 0:
            raise ConfigError(f"telemetry interval_s must be > 0, not {interval_s}")
        self._probe, self._clock = probe, clock
        self._interval_s = interval_s
        self._unavailable = tuple(unavailable or ())
        self._rows: list[CpuRow] = []
        self._last: dict[str, tuple[int, int]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: Exception | None = None
        self._start_ns: int | None = None  # the first row's time

    def start(self) -> None:
        """Take the first row, which marks the window's start, and start sampling."""
        if self._thread is not None:
            raise RuntimeError("CpuSampler.start() called twice")
        self.sample()
        self._thread = threading.Thread(target=self._run, name="cpu-telemetry", daemon=True)
        self._thread.start()

    def stop(self) -> CpuTelemetry:
        """Stop sampling and mark the window's end; the window's record.

        A last row is taken unless the previous one is under half an interval old: busy
        shares over a few scheduler ticks would be noise.
        """
        if self._thread is None:
            raise RuntimeError("CpuSampler.stop() called before start()")
        self._stop.set()
        self._thread.join()
        if self._failure is not None:
            raise RunError(f"CPU telemetry sampling failed: {self._failure!r}") from self._failure
        end_ns = self._clock()
        if end_ns - self._rows[-1].t_ns >= self._interval_s * NS_PER_S / 2:
            self.sample()
            end_ns = self._rows[-1].t_ns
        return self.record(end_ns=end_ns)

    def sample(self) -> None:
        """Take one row now (the thread's work; tests call it directly)."""
        t_ns = self._clock()
        if self._start_ns is None:
            self._start_ns = t_ns
        snap = self._probe.read()
        values = []
        for s in self._probe.series:
            if s.kind == "busy":
                line = "cpu" if s.column == "busy_pct" else s.column.removesuffix("_busy_pct")
                before, after = self._last.get(line), snap.ticks.get(line)
                values.append(None if before is None or after is None else busy_pct(before, after))
            else:
                values.append(snap.values.get(s.column))
        self._last = snap.ticks or self._last
        self._rows.append(CpuRow(t_ns=t_ns, values=tuple(values)))

    def record(self, *, end_ns: int) -> CpuTelemetry:
        """What was sampled so far, as the window's record."""
        return CpuTelemetry(
            window_start_ns=end_ns if self._start_ns is None else self._start_ns,
            window_end_ns=end_ns,
            interval_s=self._interval_s,
            series=self._probe.series,
            rows=tuple(self._rows),
            unavailable=self._unavailable,
            errors=tuple(self._probe.errors),
        )

    def _run(self) -> None:
        start_ns = self._start_ns or 0
        interval_ns = max(1, round(self._interval_s * NS_PER_S))
        tick = 1
        try:
            while not self._stop.wait(max(start_ns + tick * interval_ns - self._clock(), 0) / 1e9):
                self.sample()
                # the next tick not already past: a slow read skips ticks, never drifts
                tick = max(tick + 1, -(-(self._clock() - start_ns) // interval_ns))
        except Exception as exc:  # a bug, not a device error: re-raised by stop()
            self._failure = exc


def _read(root: Path, rel: str) -> str:
    return (root / rel.lstrip("/")).read_text(encoding="utf-8", errors="replace")


def _optional(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip() or None
    except OSError:
        return None


def _rel(root: Path, path: Path) -> str:
    return "/" + path.relative_to(root).as_posix()


def _line_order(name: str) -> int:
    return -1 if name == "cpu" else int(name[3:])


def _cpu_number(column: str) -> int:
    return int(column[3:].split("_")[0])


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "sensor"


def _unique(column: str, taken: set[str]) -> str:
    if column not in taken:
        return column
    n = 2
    while f"{column[:-2]}_{n}_c" in taken:
        n += 1
    return f"{column[:-2]}_{n}_c"
