"""An external (wall) power meter: a command printing watts, or a CSV log of timestamp,watts."""

from __future__ import annotations

import datetime as dt
import math
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from harness.errors import DeviceError
from harness.telemetry.base import Reading

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def parse_watts(text: str) -> float:
    """The first number on the last non-empty line of a meter command's output."""
    lines = [line for line in text.splitlines() if line.strip()]
    match = _NUMBER.search(lines[-1]) if lines else None
    if match is None:
        raise DeviceError(f"meter command printed no number of watts: {text.strip()[:80]!r}")
    watts = float(match.group())
    if not math.isfinite(watts) or watts < 0:
        raise DeviceError(f"meter command printed an impossible power: {watts} W")
    return watts


class CommandMeter:
    """A wall meter read by running a shell command per sample that prints watts."""

    kind = "wall"

    def __init__(
        self,
        command: str,
        *,
        name: str = "wall",
        timeout_s: float = 2.0,
        run: Runner = subprocess.run,
    ) -> None:
        self.name, self.command = name, command
        self._timeout_s, self._run = timeout_s, run
        self.power_method = f"command run per sample: {command}"
        self.energy_method = ""

    def read(self) -> Reading:
        """Run the command once and parse the watts it prints."""
        try:
            done = self._run(
                ["/bin/sh", "-c", self.command],
                capture_output=True,
                text=True,
                timeout=self._timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise DeviceError(
                f"{self.name}: meter command timed out after {self._timeout_s:g} s"
            ) from None
        except OSError as exc:
            raise DeviceError(f"{self.name}: cannot run the meter command: {exc}") from None
        if done.returncode != 0:
            detail = (done.stderr or done.stdout or "").strip().splitlines()
            tail = f": {detail[-1]}" if detail else ""
            raise DeviceError(f"{self.name}: meter command exited {done.returncode}{tail}")
        return Reading(power_w=parse_watts(done.stdout))

    def energy_mj(self) -> None:
        """A command meter reports power only."""
        return None


def parse_timestamp_ns(text: str) -> int:
    """Unix time in ns from seconds since the epoch or ISO 8601 (naive means local time)."""
    value = text.strip()
    try:
        return round(float(value) * 1e9)
    except ValueError:
        pass
    try:
        stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a timestamp: {value!r}") from None
    return round(stamp.timestamp() * 1e9)


def parse_meter_csv(text: str, *, origin: str = "meter CSV") -> list[tuple[int, float]]:
    """(unix ns, watts) rows of a `timestamp,watts` log; '#' comments and a header are skipped."""
    rows: list[tuple[int, float]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [f.strip() for f in line.split(",")]
        try:
            if len(fields) < 2:
                raise ValueError("expected timestamp,watts")
            rows.append((parse_timestamp_ns(fields[0]), _watts(fields[1])))
        except ValueError as exc:
            if number == _first_data_line(text):
                continue  # a header line
            raise DeviceError(f"{origin}:{number}: {exc}") from None
    rows.sort()
    return rows


def _watts(text: str) -> float:
    watts = float(text)
    if not math.isfinite(watts) or watts < 0:
        raise ValueError(f"impossible power: {text} W")
    return watts


def _first_data_line(text: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            return number
    return 0


class CsvMeter:
    """A wall meter's own log (`timestamp,watts`), read once after the window."""

    kind = "wall"

    def __init__(self, path: Path, *, name: str = "wall") -> None:
        self.name, self.path = name, path
        self.power_method = f"meter log {path} (timestamp,watts), rows inside the window"
        self.energy_method = ""

    def read(self) -> Reading:
        """Nothing is read live: the log is read after the window."""
        return Reading()

    def energy_mj(self) -> None:
        """A meter log holds power only."""
        return None

    def readings_between(self, start_unix_ns: int, end_unix_ns: int) -> list[tuple[int, float]]:
        """The log's rows inside the window."""
        try:
            text = self.path.read_text()
        except OSError as exc:
            raise DeviceError(f"{self.name}: cannot read {self.path}: {exc.strerror}") from None
        rows = parse_meter_csv(text, origin=str(self.path))
        return [(t, w) for t, w in rows if start_unix_ns <= t <= end_unix_ns]


def command_meter(command: str, *, run: Runner = subprocess.run) -> tuple[CommandMeter | None, str]:
    """A command meter after one trial read, or the reason it cannot be used."""
    meter = CommandMeter(command, run=run)
    try:
        meter.read()
    except DeviceError as exc:
        return None, str(exc)
    return meter, ""


def csv_meter(path: Path) -> tuple[CsvMeter | None, str]:
    """A CSV meter if its log exists and can be read, or the reason it cannot be used."""
    if not path.is_file():
        return None, f"meter log {path} does not exist"
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        return None, f"cannot read meter log {path}: {exc.strerror}"
    return CsvMeter(path), ""
