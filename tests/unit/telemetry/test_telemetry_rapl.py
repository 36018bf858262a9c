"""RAPL over an injectable root: domains found, permission reasons, wraparound, power."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from telemetry_fakes import FIXTURES, StepClock

from harness.errors import DeviceError
from harness.telemetry.rapl import RaplSource, RaplZone, find_zones, rapl_sources, read_sysfs

ROOT = FIXTURES / "rapl-2socket"
POWERCAP = ROOT / "sys/class/powercap"
S = 1_000_000_000


def test_finds_packages_and_dram_of_both_sockets() -> None:
    zones, reasons = find_zones(ROOT)
    assert reasons == []
    assert [(z.name, z.kind) for z in zones] == [
        ("cpu-package-0", "cpu"),
        ("dram-0", "dram"),
        ("cpu-package-1", "cpu"),
        ("dram-1", "dram"),
    ]
    assert zones[1].energy_path == POWERCAP / "intel-rapl:0/intel-rapl:0:1/energy_uj"
    assert {z.max_range_uj for z in zones} == {262_143_328_850}


def test_no_powercap_is_a_reason(tmp_path: Path) -> None:
    zones, reasons = find_zones(tmp_path)
    assert zones == []
    assert reasons == [
        (
            "rapl",
            f"no RAPL: {tmp_path}/sys/class/powercap does not exist (no powercap driver, or a VM)",
        )
    ]


def test_unreadable_counters_say_they_need_root() -> None:
    def denied(path: Path) -> str:
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied")
        return read_sysfs(path)

    zones, reasons = find_zones(ROOT, read=denied)
    assert zones == []
    [(source, reason)] = reasons
    assert source == "rapl"
    assert reason.startswith(
        f"permission denied: {POWERCAP}/intel-rapl:0/energy_uj (and 3 more) needs root; "
    )
    assert "chmod o+r" in reason


def test_one_unreadable_domain_leaves_the_others(tmp_path: Path) -> None:
    shutil.copytree(ROOT, tmp_path, dirs_exist_ok=True)
    (tmp_path / "sys/class/powercap/intel-rapl:1/intel-rapl:1:0/energy_uj").write_text("junk\n")
    zones, reasons = find_zones(tmp_path)
    assert [z.name for z in zones] == ["cpu-package-0", "dram-0", "cpu-package-1"]
    [(source, reason)] = reasons
    assert source == "rapl"
    assert "intel-rapl:1:0/energy_uj" in reason


def _source(values: list[int], *, clock: StepClock) -> RaplSource:
    zone = RaplZone(name="cpu-package-0", kind="cpu", energy_path=Path("e"), max_range_uj=1_000_000)
    readings = iter(values)
    return RaplSource(zone, clock=clock, read=lambda _: str(next(readings)))


def test_energy_accumulates_across_wraparounds() -> None:
    # the counter wraps at 1 J twice; every read tracks it
    source = _source([900_000, 100_000, 950_000, 50_000], clock=StepClock(0, S))
    assert source.energy_mj() == 0.0
    assert source.read().power_w == 0.2  # 0.2 J in 1 s
    assert source.read().power_w == 0.85
    assert source.energy_mj() == 1150.0  # 0.2 + 0.85 + 0.1 J


def test_first_read_has_no_power_yet() -> None:
    source = _source([5_000, 7_000], clock=StepClock(0, S // 2))
    assert source.read().power_w is None
    assert source.read().power_w == 0.004  # 2 mJ in 0.5 s


def test_unreadable_counter_during_the_run_is_a_device_error() -> None:
    zone = RaplZone(name="dram-0", kind="dram", energy_path=Path("/nope"), max_range_uj=10)
    source = RaplSource(zone, read=read_sysfs)
    with pytest.raises(DeviceError, match="dram-0: cannot read /nope"):
        source.energy_mj()


def test_sources_from_the_fixture_tree_read_real_files() -> None:
    sources, reasons = rapl_sources(ROOT, clock=StepClock(0, S))
    assert reasons == []
    assert [s.name for s in sources] == ["cpu-package-0", "dram-0", "cpu-package-1", "dram-1"]
    assert sources[0].energy_mj() == 0.0
    assert sources[0].read().power_w == 0.0  # the fixture's counter does not move
