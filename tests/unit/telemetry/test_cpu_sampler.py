"""CPU telemetry over fake /proc and /sys trees: discovery, sampling, the CSV and its state."""

from __future__ import annotations

import itertools
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness.config import TelemetryConfig
from harness.errors import ResultError
from harness.records.layout import CPU_TELEMETRY_FILE
from harness.telemetry.cpu import (
    NO_CLOCK,
    NO_TEMPERATURE,
    CpuSampler,
    busy_pct,
    cpuinfo_mhz,
    discover_cpu,
    stat_ticks,
)
from harness.telemetry.cpufile import read_cpu_csv, render_cpu_csv, write_cpu_csv
from harness.telemetry.csvfile import read_telemetry_csv
from harness.telemetry.filestate import telemetry_file_state
from harness.telemetry.window import TelemetryWindow

# user nice system idle iowait irq softirq steal guest guest_nice
STAT_0 = """cpu  100 0 50 800 50 0 0 0 0 0
cpu0 50 0 25 400 25 0 0 0 0 0
cpu1 50 0 25 400 25 0 0 0 0 0
intr 12345
"""
STAT_1 = """cpu  250 0 100 1000 50 0 0 0 0 0
cpu0 200 0 50 425 25 0 0 0 0 0
cpu1 50 0 50 600 25 0 0 0 0 0
intr 12399
"""
CPUINFO = """processor\t: 0
model name\t: Fake CPU
cpu MHz\t\t: 2000.000

processor\t: 1
model name\t: Fake CPU
cpu MHz\t\t: 2100.500
"""


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _bare_vm(root: Path) -> Path:
    """/proc only, as on this project's 2-core VM: no cpufreq, hwmon or thermal zone."""
    _write(root, "proc/stat", STAT_0)
    _write(root, "proc/cpuinfo", CPUINFO)
    _write(root, "proc/loadavg", "0.50 0.40 0.30 1/100 4242\n")
    return root


def _laptop(root: Path) -> Path:
    """cpufreq per core, a coretemp hwmon with labels and a thermal zone."""
    _bare_vm(root)
    for n, khz in ((0, 3_400_000), (1, 800_000)):
        _write(root, f"sys/devices/system/cpu/cpu{n}/cpufreq/scaling_cur_freq", f"{khz}\n")
    _write(root, "sys/class/hwmon/hwmon0/name", "coretemp\n")
    _write(root, "sys/class/hwmon/hwmon0/temp1_input", "61000\n")
    _write(root, "sys/class/hwmon/hwmon0/temp1_label", "Package id 0\n")
    _write(root, "sys/class/thermal/thermal_zone0/type", "x86_pkg_temp\n")
    _write(root, "sys/class/thermal/thermal_zone0/temp", "59500\n")
    return root


def test_stat_ticks_count_idle_and_iowait_as_idle() -> None:
    ticks = stat_ticks(STAT_0)
    assert ticks == {"cpu": (150, 1000), "cpu0": (75, 500), "cpu1": (75, 500)}
    assert busy_pct(ticks["cpu"], stat_ticks(STAT_1)["cpu"]) == pytest.approx(100 * 200 / 400)
    assert busy_pct((5, 10), (5, 10)) is None  # no tick passed: unknown, not 0 %


def test_cpuinfo_mhz_per_processor() -> None:
    assert cpuinfo_mhz(CPUINFO) == {0: 2000.0, 1: 2100.5}
    assert cpuinfo_mhz("processor : 0\nBogoMIPS : 50.00\n") == {}  # ARM: no clock line


def test_a_bare_vm_samples_clock_from_cpuinfo_and_says_why_there_is_no_temperature(
    tmp_path: Path,
) -> None:
    probe, missing = discover_cpu(_bare_vm(tmp_path))
    columns = [s.column for s in probe.series]
    assert columns == [
        "busy_pct",
        "cpu0_busy_pct",
        "cpu1_busy_pct",
        "cpu0_mhz",
        "cpu1_mhz",
        "load_1m",
    ]
    assert missing == [("temperature", NO_TEMPERATURE)]
    assert {s.source for s in probe.series if s.kind == "clock"} == {"/proc/cpuinfo"}


def test_no_clock_anywhere_is_a_reason_not_an_error(tmp_path: Path) -> None:
    _write(tmp_path, "proc/stat", STAT_0)
    _write(tmp_path, "proc/cpuinfo", "processor : 0\nBogoMIPS : 50.00\n")
    _, missing = discover_cpu(tmp_path)
    assert ("clock", NO_CLOCK) in missing
    assert ("load", "/proc/loadavg is missing") in missing


def test_sampling_a_laptop_tree(tmp_path: Path) -> None:
    root = _laptop(tmp_path)
    probe, missing = discover_cpu(root)
    assert missing == []
    clock = itertools.count(10_000_000_000, 100_000_000)
    sampler = CpuSampler(probe, interval_s=0.1, unavailable=missing, clock=lambda: next(clock))
    sampler.sample()
    _write(root, "proc/stat", STAT_1)
    _write(root, "sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq", "2600000\n")
    _write(root, "sys/class/hwmon/hwmon0/temp1_input", "71000\n")
    _write(root, "proc/loadavg", "1.75 0.40 0.30 2/100 4242\n")
    sampler.sample()
    t = sampler.record(end_ns=10_200_000_000)
    assert [s.column for s in t.of_kind("temperature")] == [
        "temp_coretemp_package_id_0_c",
        "temp_x86_pkg_temp_c",
    ]
    assert t.points("cpu1_mhz") == [(0.0, 800.0), (0.1, 2600.0)]
    assert t.points("cpu0_busy_pct") == [(0.1, 100 * 175 / 200)]  # the first row has no delta
    assert t.points("busy_pct") == [(0.1, 50.0)]
    assert t.points("load_1m") == [(0.0, 0.5), (0.1, 1.75)]
    assert t.points("temp_coretemp_package_id_0_c") == [(0.0, 61.0), (0.1, 71.0)]
    assert t.why_missing("temperature") is None


def test_a_sensor_that_vanishes_leaves_a_gap_and_one_error(tmp_path: Path) -> None:
    root = _laptop(tmp_path)
    probe, missing = discover_cpu(root)
    clock = itertools.count(0, 100_000_000)
    sampler = CpuSampler(probe, interval_s=0.1, unavailable=missing, clock=lambda: next(clock))
    (root / "sys/class/thermal/thermal_zone0/temp").unlink()
    sampler.sample()
    sampler.sample()
    t = sampler.record(end_ns=200_000_000)
    assert t.points("temp_x86_pkg_temp_c") == []
    assert [name for name, _ in t.errors] == ["temp_x86_pkg_temp_c"]


def test_the_thread_samples_the_window_start_ticks_and_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe, missing = discover_cpu(_bare_vm(tmp_path))
    reads, enough = itertools.count(1), threading.Event()
    real_read = probe.read

    def read() -> Any:  # counts the rows taken: the test waits for five, not for a time
        if next(reads) >= 5:
            enough.set()
        return real_read()

    monkeypatch.setattr(probe, "read", read)
    sampler = CpuSampler(probe, interval_s=0.01, unavailable=missing)
    sampler.start()
    assert enough.wait(60), "the sampler's thread never took its rows"
    t = sampler.stop()
    assert len(t.rows) >= 5
    assert t.rows[0].t_ns == t.window_start_ns
    assert 0 <= t.window_end_ns - t.rows[-1].t_ns < 0.01e9  # a last row unless one is recent
    assert all(a.t_ns < b.t_ns for a, b in itertools.pairwise(t.rows))
    assert t.why_missing("temperature") == NO_TEMPERATURE


def test_csv_round_trip_keeps_values_units_and_reasons(tmp_path: Path) -> None:
    probe, missing = discover_cpu(_bare_vm(tmp_path / "root"))
    clock = itertools.count(0, 50_000_000)
    sampler = CpuSampler(probe, interval_s=0.05, unavailable=missing, clock=lambda: next(clock))
    sampler.sample()
    sampler.sample()
    t = sampler.record(end_ns=100_000_000)
    text = render_cpu_csv(t)
    assert text.splitlines()[0].startswith("# beyond-tops CPU telemetry, format 1")
    assert re.search(r"^t_ns,t_s,busy_pct,cpu0_busy_pct,cpu1_busy_pct,cpu0_mhz", text, re.M)
    path = tmp_path / CPU_TELEMETRY_FILE
    write_cpu_csv(t, path)
    back = read_cpu_csv(path)
    assert back == t


def test_a_csv_that_is_not_ours_names_itself(tmp_path: Path) -> None:
    path = tmp_path / CPU_TELEMETRY_FILE
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ResultError, match=r"not a beyond-tops cpu_telemetry\.csv"):
        read_cpu_csv(path)


HEADER_ONLY_TELEMETRY = """# beyond-tops telemetry, format 1; sampled every 0.1 s (10 Hz)
# window: {"start_ns": 1, "end_ns": 2, "start_unix_ns": 3, "interval_s": 0.1}
# unavailable: {"source": "rapl", "reason": "no /sys/class/powercap/intel-rapl* zone"}
# unavailable: {"source": "wall", "reason": "no external meter given"}
t_ns,t_s,source,power_w,temp_c,sm_clock_mhz,mem_clock_mhz,util_pct,throttle
"""


def test_a_header_only_telemetry_csv_is_empty_with_its_reasons_not_absent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "telemetry.csv"
    path.write_text(HEADER_ONLY_TELEMETRY)
    state = telemetry_file_state(path)
    assert state.state == "empty" and state.rows == 0
    assert state.reason == (
        "rapl: no /sys/class/powercap/intel-rapl* zone; wall: no external meter given"
    )
    assert state.describe() == (
        "telemetry.csv has no samples: rapl: no /sys/class/powercap/intel-rapl* zone; "
        "wall: no external meter given"
    )


def test_absent_and_present_telemetry_files(tmp_path: Path) -> None:
    absent = telemetry_file_state(tmp_path / "telemetry.csv")
    assert absent.state == "absent" and "not written" in absent.describe()
    path = tmp_path / "telemetry.csv"
    path.write_text(HEADER_ONLY_TELEMETRY + "5,0.1,gpu0,100.0,50.0,,,,\n")
    present = telemetry_file_state(path)
    assert present.state == "present" and present.rows == 1 and present.reason == ""


def test_the_telemetry_window_writes_and_names_both_csv_files(tmp_path: Path) -> None:
    config = TelemetryConfig(interval_ms=10, cpu_interval_ms=20)
    window = TelemetryWindow("cpu", config, cpu_root=_laptop(tmp_path))
    window.open()
    time.sleep(0.05)
    window.close()
    window.release()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    block = window.finish(run_dir, samples=10, scenario="Offline")
    assert block is not None
    assert window.files == {"cpu_telemetry": CPU_TELEMETRY_FILE, "telemetry": "telemetry.csv"}
    t = read_cpu_csv(run_dir / CPU_TELEMETRY_FILE)
    assert {v for _, v in t.points("temp_coretemp_package_id_0_c")} == {61.0}
    # Each sampler keeps its own interval: the host CPU's is not the power sources'
    assert t.interval_s == 0.02 and read_telemetry_csv(run_dir / "telemetry.csv").interval_s == 0.01
    assert telemetry_file_state(run_dir / CPU_TELEMETRY_FILE).state == "present"


def test_a_window_that_never_opened_writes_nothing(tmp_path: Path) -> None:
    window = TelemetryWindow("cpu", TelemetryConfig(), cpu_root=_bare_vm(tmp_path))
    window.release()
    assert window.finish(tmp_path, samples=0, scenario="Offline") is None
    assert window.files == {} and not (tmp_path / CPU_TELEMETRY_FILE).exists()
