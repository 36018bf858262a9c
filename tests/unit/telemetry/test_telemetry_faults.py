"""Issue #11: telemetry faults never end a run, a meter command is opt-in, argv-only, hashed."""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from pathlib import Path

import pytest
from telemetry_fakes import FakeSource

from harness.config import TelemetryConfig, load_scenario
from harness.errors import ConfigError, DeviceError
from harness.records.codec import to_data as as_json
from harness.telemetry import Reading, TelemetryRecorder, summarize
from harness.telemetry.csvfile import render_telemetry_csv
from harness.telemetry.external import (
    ALLOW_METER_ENV,
    CommandMeter,
    CsvMeter,
    check_meter_opt_in,
    parse_watts,
)
from harness.telemetry.recorder import NAMED_SKIPPED_ROWS, skipped_note
from harness.telemetry.window import TelemetryWindow

S = 1_000_000_000


def _record_log(log: Path) -> tuple[str, ...]:
    """The recorder's errors after a window over a real CSV meter log (whatever it holds)."""
    gpu = FakeSource(signal_after=1)
    recorder = TelemetryRecorder([gpu, CsvMeter(log)], interval_s=0.001, wall_clock=lambda: 10 * S)
    recorder.start()
    assert gpu.enough.wait(5)
    t = recorder.stop()
    assert [s.power_w for s in t.samples_of("wall")] == [400.0]
    return tuple(e for _, e in t.errors)


def test_a_timestamp_too_large_is_a_skipped_row_not_an_overflow(tmp_path: Path) -> None:
    log = tmp_path / "meter.csv"
    log.write_text("timestamp,watts\n10,400\n1e400,5\n")
    (error,) = _record_log(log)
    assert "skipped 1 bad row" in error and "meter.csv:3" in error


def test_non_utf8_bytes_are_a_skipped_row_not_a_decode_error(tmp_path: Path) -> None:
    log = tmp_path / "meter.csv"
    log.write_bytes(b"timestamp,watts\n10,400\n\xff\xfe1,5\n")
    (error,) = _record_log(log)
    assert "skipped 1 bad row" in error and "meter.csv:3" in error


@pytest.mark.parametrize("watts", ["1e308", "100001"])
def test_implausible_watts_are_refused(watts: str, tmp_path: Path) -> None:
    with pytest.raises(DeviceError, match="impossible power"):
        parse_watts(f"{watts}\n")
    log = tmp_path / "meter.csv"
    log.write_text(f"timestamp,watts\n10,400\n10.5,{watts}\n")
    (error,) = _record_log(log)
    assert "impossible power" in error


def test_the_summary_never_holds_inf_or_nan() -> None:
    gpu = FakeSource(readings=[Reading(power_w=1e308), Reading(power_w=math.inf)])
    recorder = TelemetryRecorder([gpu], interval_s=0.001)
    recorder.start()
    assert gpu.enough.wait(5)
    summary = as_json(summarize(recorder.stop(), samples_processed=10, scenario="Offline"))
    json.dumps(summary, allow_nan=False)  # raises on inf or NaN
    block = summary["sources"]["gpu0"]
    assert block["energy_j"] is None and "implausible" in block["null_reasons"]["energy_j"]


class HungSource(FakeSource):
    """A GPU whose second read never returns, as a hung NVML call does."""

    def __init__(self) -> None:
        super().__init__("gpu1", signal_after=10**9)
        self.release = threading.Event()

    def read(self) -> Reading:
        if self.reads >= 1:
            self.enough.set()
            self.release.wait(30)
        return super().read()


def test_a_hung_read_does_not_block_the_end_of_the_window() -> None:
    hung, gpu = HungSource(), FakeSource(signal_after=1)
    recorder = TelemetryRecorder([gpu, hung], interval_s=0.001, join_timeout_s=0.2)
    recorder.start()
    try:
        assert hung.enough.wait(5)
        began = time.monotonic()
        t = recorder.stop()
        assert time.monotonic() - began < 5
    finally:
        hung.release.set()
        for thread in threading.enumerate():
            if thread.name == "telemetry":
                thread.join(5)  # released, it sees the stop and ends
    assert recorder.abandoned == ("gpu1",)
    assert [name for name, _ in t.errors] == ["gpu1"]
    assert "did not return within 0.2 s" in t.errors[0][1]
    assert next(c for c in t.counters if c.name == "gpu1").energy_end_mj is None


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")  # a zombie waiting for a reaper is dead too


def test_a_timed_out_meter_command_takes_its_children_with_it(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    script = f"sleep 30 & echo $! > {pidfile}; wait"
    meter = CommandMeter(["/bin/sh", "-c", script], timeout_s=0.5)
    with pytest.raises(DeviceError, match="timed out"):
        meter.read()
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid), f"the meter command's child {pid} outlived its timeout"


def test_a_meter_command_is_recorded_by_program_and_hash_never_verbatim() -> None:
    argv = ["/usr/bin/ipmitool", "-H", "bmc", "-P", "s3cret", "dcmi", "power", "reading"]
    meter = CommandMeter(argv, run=lambda args, timeout_s: _done("450\n"))
    digest = hashlib.sha256("\0".join(argv).encode()).hexdigest()[:12]
    assert "s3cret" not in meter.power_method
    assert "ipmitool" in meter.power_method and digest in meter.power_method
    recorder = TelemetryRecorder([meter], interval_s=0.001)
    recorder.start()
    time.sleep(0.01)
    t = recorder.stop()
    assert "s3cret" not in render_telemetry_csv(t)
    assert "s3cret" not in json.dumps(
        as_json(summarize(t, samples_processed=1, scenario="Offline"))
    )


def _done(stdout: str) -> object:
    import subprocess

    return subprocess.CompletedProcess(["x"], 0, stdout=stdout, stderr="")


def _scenario(tmp_path: Path, command: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nscenario: Offline\nmodel: {zoo: tiny}\n"
        f"telemetry: {{external_command: {command}}}\n"
    )
    return path


def test_a_meter_command_is_an_argv_list_not_shell_text(tmp_path: Path) -> None:
    scenario = load_scenario(_scenario(tmp_path, "[ipmitool, dcmi, power, reading]"))
    assert scenario.telemetry.external_command == ("ipmitool", "dcmi", "power", "reading")
    with pytest.raises(ConfigError, match=r"telemetry\.external_command: expected a list"):
        load_scenario(_scenario(tmp_path, "'ipmitool dcmi | awk x'"))
    with pytest.raises(ConfigError, match=r"telemetry\.external_command: .*program"):
        load_scenario(_scenario(tmp_path, "[]"))
    with pytest.raises(ConfigError, match=r"telemetry\.external_command: .*program"):
        load_scenario(_scenario(tmp_path, "['', x]"))


def test_a_scenario_cannot_run_a_meter_command_without_the_users_opt_in(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    config = TelemetryConfig(external_command=("touch", str(ran)))
    with pytest.raises(ConfigError, match=f"{ALLOW_METER_ENV}=1") as refused:
        check_meter_opt_in(config, environ={})
    assert "\n" not in str(refused.value)
    check_meter_opt_in(config, environ={ALLOW_METER_ENV: "1"})
    check_meter_opt_in(TelemetryConfig(), environ={})  # no command: nothing to allow


def test_the_window_refuses_an_unallowed_command_before_running_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = tmp_path / "ran"
    config = TelemetryConfig(external_command=("touch", str(ran)))
    monkeypatch.delenv(ALLOW_METER_ENV, raising=False)
    with pytest.raises(ConfigError, match=ALLOW_METER_ENV):
        TelemetryWindow("cpu", config)
    assert not ran.exists()
    monkeypatch.setenv(ALLOW_METER_ENV, "1")
    TelemetryWindow("cpu", config).release()
    assert ran.exists()  # its trial read ran, without a shell


def test_a_meter_logs_bad_rows_are_named_up_to_a_few_then_counted() -> None:
    rows = [f"m.csv:{n}: not a timestamp: 'x'" for n in range(2, 2 + NAMED_SKIPPED_ROWS + 2)]
    note = skipped_note(rows)
    assert note.startswith(f"skipped {len(rows)} bad rows: m.csv:2: ")
    assert all(row in note for row in rows[:NAMED_SKIPPED_ROWS])
    assert rows[NAMED_SKIPPED_ROWS] not in note and note.endswith("; and 2 more")
    assert skipped_note(rows[:1]) == f"skipped 1 bad row: {rows[0]}"
