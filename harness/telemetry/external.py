"""An external (wall) power meter: a command printing watts, or a CSV log of timestamp,watts."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import math
import os
import re
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness.config import TelemetryConfig
from harness.errors import ConfigError, DeviceError
from harness.telemetry.base import LoggedRows, Reading
from harness.telemetry.energy import MAX_SOURCE_W, plausible_w

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
# The user's own opt-in to running a scenario's meter command. An environment variable, not a
# CLI flag, because workers inherit it (a Docker launcher must pass it on explicitly).
ALLOW_METER_ENV = "BEYOND_TOPS_ALLOW_METER_COMMAND"
# (argv, timeout_s) -> the finished process; raises subprocess.TimeoutExpired.
Runner = Callable[[Sequence[str], float], "subprocess.CompletedProcess[str]"]


def check_meter_opt_in(config: TelemetryConfig, environ: Mapping[str, str]) -> None:
    """Refuse a scenario's meter command unless the user set ALLOW_METER_ENV=1.

    A scenario file may come from anyone; the command it names runs ten times a second.
    """
    if config.external_command is not None and environ.get(ALLOW_METER_ENV) != "1":
        raise ConfigError(
            f"telemetry.external_command: the scenario runs the meter program "
            f"'{config.external_command[0]}'; allow it with {ALLOW_METER_ENV}=1 in the environment"
        )


def describe_command(argv: Sequence[str]) -> str:
    """A meter command as recorded: its program and a hash of its argv, which may hold secrets."""
    digest = hashlib.sha256("\0".join(argv).encode()).hexdigest()[:12]
    return f"command run per sample: {Path(argv[0]).name} (argv sha256 {digest})"


def run_in_own_session(argv: Sequence[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run argv without a shell in a new session, then kill its process group.

    On timeout the program's children die with it instead of being orphaned, as they are
    when only the program is killed.
    """
    with subprocess.Popen(
        list(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.communicate()
            raise
        finally:
            _kill_group(proc.pid)  # children it left behind, even when it exited in time
    return subprocess.CompletedProcess(list(argv), proc.returncode, stdout, stderr)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
        os.killpg(pgid, signal.SIGKILL)


def parse_watts(text: str) -> float:
    """The first number on the last non-empty line of a meter command's output."""
    lines = [line for line in text.splitlines() if line.strip()]
    match = _NUMBER.search(lines[-1]) if lines else None
    if match is None:
        raise DeviceError(f"meter command printed no number of watts: {text.strip()[:80]!r}")
    watts = float(match.group())
    if not plausible_w(watts):
        raise DeviceError(
            f"meter command printed an impossible power: {watts} W (0..{MAX_SOURCE_W:g} W)"
        )
    return watts


class CommandMeter:
    """A wall meter read by running a program per sample (an argv, no shell) that prints watts."""

    kind = "wall"

    def __init__(
        self,
        argv: Sequence[str],
        *,
        name: str = "wall",
        timeout_s: float = 2.0,
        run: Runner = run_in_own_session,
    ) -> None:
        if not argv or not all(argv):
            raise ConfigError(f"meter command: expected a program and its arguments, got {argv}")
        self.name, self._argv = name, tuple(argv)
        self._timeout_s, self._run = timeout_s, run
        self.power_method = describe_command(self._argv)
        self.energy_method = ""

    def read(self) -> Reading:
        """Run the command once and parse the watts it prints."""
        try:
            done = self._run(self._argv, self._timeout_s)
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
        seconds = float(value)
    except ValueError:
        try:
            seconds = dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError, OSError):
            raise ValueError(f"not a timestamp: {value[:40]!r}") from None
    # Years 1970..~2500 in ns: past that a float holds no ns and round() may overflow.
    if not (math.isfinite(seconds) and 0 <= seconds < 2**34):
        raise ValueError(f"timestamp out of range: {value[:40]!r}")
    return round(seconds * 1e9)


def parse_meter_csv(text: str, *, origin: str = "meter CSV") -> LoggedRows:
    """Rows of a `timestamp,watts` log; '#' comments and a header are skipped, bad rows noted."""
    rows: list[tuple[int, float]] = []
    skipped: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [f.strip() for f in line.split(",")]
        try:
            if len(fields) < 2:
                raise ValueError("expected timestamp,watts")
            rows.append((parse_timestamp_ns(fields[0]), _watts(fields[1])))
        except ValueError as exc:
            if number != _first_data_line(text):  # else a header line
                skipped.append(f"{origin}:{number}: {exc}")
    return LoggedRows(rows=tuple(sorted(rows)), skipped=tuple(skipped))


def _watts(text: str) -> float:
    watts = float(text)
    if not plausible_w(watts):
        raise ValueError(f"impossible power: {text[:40]} W (0..{MAX_SOURCE_W:g} W)")
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

    def readings_between(self, start_unix_ns: int, end_unix_ns: int) -> LoggedRows:
        """The log's rows inside the window (bytes that are not UTF-8 spoil only their row)."""
        try:
            text = self.path.read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            raise DeviceError(f"{self.name}: cannot read {self.path}: {exc.strerror}") from None
        log = parse_meter_csv(text, origin=str(self.path))
        inside = tuple((t, w) for t, w in log.rows if start_unix_ns <= t <= end_unix_ns)
        return LoggedRows(rows=inside, skipped=log.skipped)


def command_meter(
    argv: Sequence[str], *, run: Runner = run_in_own_session
) -> tuple[CommandMeter | None, str]:
    """A command meter after one trial read, or the reason it cannot be used."""
    meter = CommandMeter(argv, run=run)
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
