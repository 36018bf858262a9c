"""External (wall) meter: a command printing watts, or a timestamp,watts CSV log."""

from __future__ import annotations

import datetime as dt
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.errors import DeviceError
from harness.telemetry.base import LoggedRows
from harness.telemetry.external import (
    CommandMeter,
    CsvMeter,
    command_meter,
    csv_meter,
    parse_meter_csv,
    parse_timestamp_ns,
    parse_watts,
)

S = 1_000_000_000


def _done(stdout: str = "", returncode: int = 0, stderr: str = "") -> Any:
    return subprocess.CompletedProcess(["meter"], returncode, stdout=stdout, stderr=stderr)


@pytest.mark.parametrize(
    ("text", "watts"),
    [("412.5\n", 412.5), ("Power: 1.2e3 W\n", 1200.0), ("starting\n  387 W\n\n", 387.0)],
)
def test_parse_watts(text: str, watts: float) -> None:
    assert parse_watts(text) == watts


@pytest.mark.parametrize("text", ["", "no number here", "-5 W", "1e400 W", "100001 W"])
def test_parse_watts_rejects_nonsense(text: str) -> None:
    with pytest.raises(DeviceError):
        parse_watts(text)


def test_command_meter_runs_its_argv_without_a_shell() -> None:
    calls = []

    def run(args: Sequence[str], timeout_s: float) -> Any:
        calls.append((args, timeout_s))
        return _done("505.25\n")

    meter = CommandMeter(["ipmitool", "dcmi", "power", "reading"], run=run)
    assert meter.read().power_w == 505.25
    assert meter.energy_mj() is None
    assert meter.name == "wall" and meter.kind == "wall"
    assert calls == [(("ipmitool", "dcmi", "power", "reading"), 2.0)]


def test_command_meter_failure_says_why() -> None:
    meter = CommandMeter(["meter"], run=lambda *a: _done(returncode=3, stderr="no device\n"))
    with pytest.raises(DeviceError, match="wall: meter command exited 3: no device"):
        meter.read()


def test_command_meter_timeout_says_so() -> None:
    def run(*args: Any) -> Any:
        raise subprocess.TimeoutExpired("sleep", 2.0)

    with pytest.raises(DeviceError, match="timed out after 2 s"):
        CommandMeter(["sleep", "9"], run=run).read()


def test_command_meter_with_a_real_program() -> None:
    meter, reason = command_meter(["echo", "123.5; no shell"])
    assert reason == ""
    assert meter is not None and meter.read().power_w == 123.5


def test_command_meter_that_cannot_run_is_unavailable_with_its_reason() -> None:
    meter, reason = command_meter(["sh", "-c", "exit 7"])
    assert meter is None
    assert reason == "wall: meter command exited 7"
    meter, reason = command_meter(["/nonexistent/meter"])
    assert meter is None and reason.startswith("wall: cannot run the meter command:")


def test_parse_meter_csv_epoch_iso_header_and_comments() -> None:
    text = (
        "# exported by the meter\n"
        "timestamp,watts\n"
        "1700000000.5,400\n"
        "2023-11-14T22:13:21+00:00,410.5\n"
        "\n"
        "2023-11-14T22:13:22Z,420\n"
    )
    assert parse_meter_csv(text) == LoggedRows(
        rows=(
            (1_700_000_000_500_000_000, 400.0),
            (1_700_000_001_000_000_000, 410.5),
            (1_700_000_002_000_000_000, 420.0),
        )
    )


def test_parse_meter_csv_skips_and_notes_a_bad_line() -> None:
    log = parse_meter_csv("t,w\n1,2\nyesterday,3\n4,5\n", origin="meter.csv")
    assert log.rows == ((1 * S, 2.0), (4 * S, 5.0))
    assert log.skipped == ("meter.csv:3: not a timestamp: 'yesterday'",)


@pytest.mark.parametrize("stamp", ["1e400", "-5", "1e12", "inf", "nan", "9999-12-31T23:59:59"])
def test_parse_timestamp_refuses_what_overflows_or_precedes_1970(stamp: str) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        parse_timestamp_ns(stamp)


def test_naive_iso_timestamps_are_local_time() -> None:
    naive = "2024-05-01T12:00:00"
    expected = dt.datetime.fromisoformat(naive).timestamp()
    assert parse_timestamp_ns(naive) == round(expected * 1e9)


def test_csv_meter_returns_rows_inside_the_window_only(tmp_path: Path) -> None:
    log = tmp_path / "meter.csv"
    log.write_text("timestamp,watts\n9.9,1\n10,400\n11,410\n12,420\n12.1,1\n")
    meter, reason = csv_meter(log)
    assert reason == "" and isinstance(meter, CsvMeter)
    assert meter.read().power_w is None  # nothing is sampled live
    assert meter.readings_between(10 * S, 12 * S) == LoggedRows(
        rows=((10 * S, 400.0), (11 * S, 410.0), (12 * S, 420.0))
    )


def test_missing_csv_is_unavailable(tmp_path: Path) -> None:
    meter, reason = csv_meter(tmp_path / "nope.csv")
    assert meter is None
    assert reason == f"meter log {tmp_path / 'nope.csv'} does not exist"


def test_csv_deleted_after_discovery_is_a_device_error(tmp_path: Path) -> None:
    log = tmp_path / "meter.csv"
    log.write_text("1,2\n")
    meter = CsvMeter(log)
    log.unlink()
    with pytest.raises(DeviceError, match="wall: cannot read"):
        meter.readings_between(0, S)


@pytest.mark.parametrize("watts", ["nan", "-3", "inf", "1e308", "100000.5"])
def test_parse_meter_csv_skips_impossible_power(watts: str) -> None:
    log = parse_meter_csv(f"1,5\n2,{watts}\n", origin="m.csv")
    assert log.rows == ((1 * S, 5.0),)
    assert len(log.skipped) == 1 and log.skipped[0].startswith("m.csv:2: impossible power")
