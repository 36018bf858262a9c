"""CPU package and DRAM energy from RAPL under /sys/class/powercap, with counter wraparound."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import DeviceError
from harness.telemetry.base import Reading
from harness.telemetry.energy import NS_PER_S, counter_delta

POWERCAP = Path("sys/class/powercap")
_PACKAGE = re.compile(r"intel-rapl:(\d+)")
_SUBZONE = re.compile(r"intel-rapl:(\d+):(\d+)")
CHMOD_HINT = (
    "run as root, or `sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj "
    "/sys/class/powercap/intel-rapl:*/intel-rapl:*/energy_uj` (until reboot)"
)


def read_sysfs(path: Path) -> str:
    """Read one sysfs attribute."""
    return path.read_text().strip()


@dataclass(frozen=True, kw_only=True)
class RaplZone:
    """One RAPL domain: where its counter lives and where the counter wraps."""

    name: str
    kind: str
    energy_path: Path
    max_range_uj: int


class RaplSource:
    """A RAPL domain: cumulative energy unwrapped on every read; power from successive reads."""

    energy_method = "RAPL energy_uj"
    power_method = "RAPL energy difference between samples"

    def __init__(
        self,
        zone: RaplZone,
        *,
        clock: Callable[[], int] = time.monotonic_ns,
        read: Callable[[Path], str] = read_sysfs,
    ) -> None:
        self.name, self.kind = zone.name, zone.kind
        self._zone, self._clock, self._read = zone, clock, read
        self._lock = threading.Lock()
        self._raw: int | None = None
        self._total_uj = 0.0
        self._last: tuple[int, float] | None = None

    def energy_mj(self) -> float:
        """Energy since the first read (mJ); every call also advances the wrap tracking."""
        return self._poll()[1] / 1000

    def read(self) -> Reading:
        """Mean power since the previous read or energy_mj() call; None on the first call."""
        with self._lock:
            previous = self._last
        now_ns, total_uj = self._poll()
        if previous is None or now_ns <= previous[0]:
            return Reading()
        power_w = (total_uj - previous[1]) / 1e6 * NS_PER_S / (now_ns - previous[0])
        return Reading(power_w=power_w)

    def _poll(self) -> tuple[int, float]:
        raw = self._read_raw()
        with self._lock:
            now_ns = self._clock()
            if self._raw is not None:
                delta = counter_delta(self._raw, raw, self._zone.max_range_uj)
                self._total_uj += delta or 0
            self._raw = raw
            self._last = (now_ns, self._total_uj)
            return self._last

    def _read_raw(self) -> int:
        path = self._zone.energy_path
        try:
            return int(self._read(path))
        except (OSError, ValueError) as exc:
            raise DeviceError(f"{self.name}: cannot read {path}: {exc}") from None


def find_zones(
    root: Path, *, read: Callable[[Path], str] = read_sysfs
) -> tuple[list[RaplZone], list[tuple[str, str]]]:
    """Package and DRAM domains under root, and why RAPL (or one of its files) is unusable."""
    base = root / POWERCAP
    if not base.is_dir():
        return [], [("rapl", f"no RAPL: {base} does not exist (no powercap driver, or a VM)")]
    zones: list[RaplZone] = []
    denied: list[Path] = []
    reasons: list[tuple[str, str]] = []
    for zone_dir, package in _zone_dirs(base):
        zone, problem = _zone(zone_dir, package, read)
        if zone is not None:
            zones.append(zone)
        elif isinstance(problem, Path):
            denied.append(problem)
        elif problem:
            reasons.append(("rapl", problem))
    if denied:
        more = f" (and {len(denied) - 1} more)" if len(denied) > 1 else ""
        reasons.insert(
            0, ("rapl", f"permission denied: {denied[0]}{more} needs root; {CHMOD_HINT}")
        )
    if not zones and not reasons:
        reasons.append(("rapl", f"no RAPL package domains under {base}"))
    return zones, reasons


def _zone_dirs(base: Path) -> list[tuple[Path, Path]]:
    """(zone, its package) for each package and then its sub-zones, in numeric order."""

    def index(path: Path) -> tuple[int, ...]:
        return tuple(int(n) for n in path.name.split(":")[1:])

    found: list[tuple[Path, Path]] = []
    packages = [p for p in base.iterdir() if _PACKAGE.fullmatch(p.name)]
    for package in sorted(packages, key=index):
        subzones = [p for p in package.iterdir() if _SUBZONE.fullmatch(p.name)]
        found += [(zone, package) for zone in (package, *sorted(subzones, key=index))]
    return found


def _zone(
    zone_dir: Path, package: Path, read: Callable[[Path], str]
) -> tuple[RaplZone | None, Path | str | None]:
    """A usable zone; else a denied path, a reason, or None for domains we do not report."""
    try:
        label = read(zone_dir / "name")
    except OSError as exc:
        return None, f"cannot read {zone_dir / 'name'}: {exc.strerror or exc}"
    socket = _socket(package, read)
    if zone_dir == package:
        name, kind = f"cpu-package-{socket}", "cpu"
    elif label == "dram":
        name, kind = f"dram-{socket}", "dram"
    else:
        return None, None  # core, uncore: parts of the package figure
    energy_path = zone_dir / "energy_uj"
    try:
        int(read(energy_path))
        max_range = int(read(zone_dir / "max_energy_range_uj"))
    except PermissionError:
        return None, energy_path
    except (OSError, ValueError) as exc:
        return None, f"cannot read {energy_path}: {exc}"
    return RaplZone(name=name, kind=kind, energy_path=energy_path, max_range_uj=max_range), None


def _socket(package: Path, read: Callable[[Path], str]) -> str:
    """The socket number from the package's name ("package-1"), else the zone's index."""
    try:
        label = read(package / "name")
    except OSError:
        label = ""
    if label.startswith("package-"):
        return label.removeprefix("package-")
    match = _PACKAGE.fullmatch(package.name)
    return match.group(1) if match else package.name


def rapl_sources(
    root: Path,
    *,
    clock: Callable[[], int] = time.monotonic_ns,
    read: Callable[[Path], str] = read_sysfs,
) -> tuple[list[RaplSource], list[tuple[str, str]]]:
    """RAPL sources for every readable package and DRAM domain, and reasons for the rest."""
    zones, reasons = find_zones(root, read=read)
    return [RaplSource(z, clock=clock, read=read) for z in zones], reasons
