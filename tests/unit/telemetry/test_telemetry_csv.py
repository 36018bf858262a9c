"""telemetry.csv: header with rate and methods, one row per sample, atomic write, read back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pytest_mock import MockerFixture

from harness.errors import ResultError
from harness.telemetry import (
    Sample,
    SourceCounters,
    Telemetry,
    read_telemetry_csv,
    render_telemetry_csv,
    write_telemetry_csv,
)

S = 1_000_000_000
TELEMETRY = Telemetry(
    window_start_ns=10 * S,
    window_end_ns=12 * S,
    interval_s=0.1,
    samples=(
        Sample(
            t_ns=10 * S,
            source="gpu0",
            power_w=612.5,
            temp_c=71.0,
            sm_clock_mhz=1980.0,
            mem_clock_mhz=2619.0,
            util_pct=97.0,
            throttle=(),
        ),
        Sample(
            t_ns=10 * S + S // 10,
            source="gpu0",
            power_w=480.25,
            throttle=("hw_thermal_slowdown", "sw_thermal_slowdown"),
        ),
        Sample(t_ns=11 * S, source="cpu-package-0", power_w=None),
    ),
    counters=(
        SourceCounters(
            name="gpu0",
            kind="gpu",
            power_method="NVML field, instant",
            energy_method="nvmlDeviceGetTotalEnergyConsumption",
            energy_start_mj=1.5,
            energy_end_mj=2.5,
            violations_ns=(("power", 0, 40_000_000),),
        ),
        SourceCounters(name="cpu-package-0", kind="cpu"),
    ),
    unavailable=(("rapl", "permission denied: x, y"),),
    errors=(("cpu-package-0", "cpu-package-0: cannot read"),),
    window_start_unix_ns=1_700_000_000 * S,
)


def test_header_states_rate_and_methods_then_rows() -> None:
    lines = render_telemetry_csv(TELEMETRY).splitlines()
    assert lines[0] == "# beyond-tops telemetry, format 1; sampled every 0.1 s (10 Hz)"
    assert lines[1].startswith('# window: {"start_ns": 10000000000, "end_ns": 12000000000')
    assert lines[2].startswith('# source: {"name": "gpu0", "kind": "gpu", "power_method": "NVML')
    assert lines[4] == '# unavailable: {"source": "rapl", "reason": "permission denied: x, y"}'
    assert lines[5].startswith("# error: ")
    assert lines[6] == "t_ns,t_s,source,power_w,temp_c,sm_clock_mhz,mem_clock_mhz,util_pct,throttle"
    assert lines[7] == "10000000000,0.000000,gpu0,612.5,71.0,1980.0,2619.0,97.0,none"
    assert (
        lines[8] == "10100000000,0.100000,gpu0,480.25,,,,,hw_thermal_slowdown|sw_thermal_slowdown"
    )
    assert lines[9] == "11000000000,1.000000,cpu-package-0,,,,,,"
    assert len(lines) == 10


def test_write_is_atomic_and_reads_back_equal(tmp_path: Path) -> None:
    path = tmp_path / "run" / "telemetry.csv"
    write_telemetry_csv(TELEMETRY, path)
    assert [p.name for p in path.parent.iterdir()] == ["telemetry.csv"]
    assert read_telemetry_csv(path) == TELEMETRY


def test_a_failed_write_leaves_no_partial_file(tmp_path: Path, mocker: MockerFixture) -> None:
    path = tmp_path / "telemetry.csv"
    mocker.patch("harness.files.os.replace", side_effect=OSError(28, "No space left on device"))
    with pytest.raises(OSError):
        write_telemetry_csv(TELEMETRY, path)
    assert os.listdir(tmp_path) == []


def test_reading_something_else_is_a_result_error(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ResultError, match=r"not a beyond-tops telemetry\.csv"):
        read_telemetry_csv(path)
    with pytest.raises(ResultError, match="cannot read"):
        read_telemetry_csv(tmp_path / "missing.csv")
