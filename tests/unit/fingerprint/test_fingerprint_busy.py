"""CPU load of other work than the harness, from /proc/stat and /proc/<pid>/stat fixture trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.fingerprint.busy import (
    CpuTicks,
    ProcTicks,
    cpu_ticks,
    other_busy_cpus,
    parse_proc_stat,
    tree_ticks,
)
from harness.fingerprint.probe import Probe

# Linux 6.x, 4 CPUs: user nice system idle iowait irq softirq steal guest guest_nice.
STAT = """cpu  100 10 50 800 20 5 5 7 40 0
cpu0 25 3 12 200 5 1 1 2 10 0
cpu1 25 3 12 200 5 1 1 2 10 0
cpu2 25 2 13 200 5 2 2 2 10 0
cpu3 25 2 13 200 5 1 1 1 10 0
intr 12345 0 0
ctxt 999
btime 1700000000
"""


def _proc(root: Path, pid: int | str, ppid: int, ticks: int, reaped: int = 0) -> None:
    """/proc/<pid>/stat with `ticks` split over utime and stime, `reaped` over cutime/cstime."""
    (root / "proc" / str(pid)).mkdir(parents=True, exist_ok=True)
    number = pid if isinstance(pid, int) else 4242
    skipped = " ".join(["0"] * 9)
    fields = f"S {ppid} {skipped} {ticks - ticks // 2} {ticks // 2} {reaped} 0 20 0 1 0 0"
    (root / "proc" / str(pid) / "stat").write_text(f"{number} (a (b) c) {fields}\n")


def _stat(root: Path, busy: int, idle: int, cpus: int = 2) -> None:
    lines = [f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0"]
    lines += [f"cpu{n} 0 0 0 0 0 0 0 0 0 0" for n in range(cpus)]
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "stat").write_text("\n".join(lines) + "\n")


def test_cpu_ticks_count_steal_and_iowait_as_not_busy(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "stat").write_text(STAT)
    assert cpu_ticks(Probe(tmp_path)) == CpuTicks(busy=170, total=997, cpus=4)


def test_unreadable_or_garbled_proc_stat_is_none(tmp_path: Path) -> None:
    assert cpu_ticks(Probe(tmp_path)) is None
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "stat").write_text("cpu  x y z\n")
    assert cpu_ticks(Probe(tmp_path)) is None
    assert other_busy_cpus(Probe(tmp_path), sleep=lambda s: None) is None


def test_a_command_name_with_spaces_and_parentheses() -> None:
    line = "4242 (a (b) c) R 1 4242 4242 0 -1 4194304 10 0 0 0 70 30 5 3 20 0 9 0 1 2 3"
    assert parse_proc_stat(line) == ProcTicks(ppid=1, own=100, children=8)
    assert parse_proc_stat("4242 (short") is None


def test_other_work_is_what_the_harness_tree_did_not_do(tmp_path: Path) -> None:
    _stat(tmp_path, 1000, 5000)
    _proc(tmp_path, 1, 0, 500)  # init: never "this harness"
    _proc(tmp_path, 4000, 1, 10)  # make, the harness's parent
    _proc(tmp_path, 4242, 4000, 100)  # the harness
    _proc(tmp_path, 4243, 4242, 0)  # its worker
    _proc(tmp_path, 4244, 4243, 0)  # the worker's child
    _proc(tmp_path, 4250, 4242, 30)  # a child that exits during the window
    _proc(tmp_path, 5000, 1, 0)  # another user's job
    _proc(tmp_path, 5001, 4000, 0)  # a sibling under make: not this harness either
    assert tree_ticks(Probe(tmp_path), 4242) == 10 + 100 + 30

    def sleep(seconds: float) -> None:
        assert seconds == 0.25
        _stat(tmp_path, 1000 + 180, 5000 + 20)  # 200 ticks over 2 CPUs: 100 each
        _proc(tmp_path, 1, 0, 510)  # +10 other
        _proc(tmp_path, 4000, 1, 12, reaped=9000)  # +2 own; it reaped an earlier trial
        _proc(tmp_path, 4242, 4000, 150, reaped=35)  # +50, and 4250 reaped: +5 own
        _proc(tmp_path, 4243, 4242, 40)  # +40 own
        _proc(tmp_path, 4244, 4243, 20)  # +20 own
        (tmp_path / "proc" / "4250" / "stat").unlink()
        _proc(tmp_path, 5000, 1, 30)  # +30 other
        _proc(tmp_path, 5001, 4000, 23)  # +23 other

    busy = other_busy_cpus(Probe(tmp_path), 4242, window_s=0.25, sleep=sleep)
    # 180 busy ticks - 117 of the harness's tree = 63 others' ticks over 100 ticks per CPU
    assert busy == pytest.approx(0.63)


def test_without_a_pid_the_harness_is_the_process_reading_proc_self(tmp_path: Path) -> None:
    _proc(tmp_path, 4242, 1, 70)
    _proc(tmp_path, 4243, 4242, 5)
    _proc(tmp_path, "self", 1, 70)
    assert tree_ticks(Probe(tmp_path)) == 75
    assert tree_ticks(Probe(tmp_path / "nowhere")) == 0


def test_idle_counters_that_do_not_advance_are_unknown(tmp_path: Path) -> None:
    _stat(tmp_path, 1000, 5000)
    assert other_busy_cpus(Probe(tmp_path), sleep=lambda s: None) is None


def test_own_work_larger_than_the_machine_counts_no_other_work(tmp_path: Path) -> None:
    # Ticks of a process and of /proc/stat are sampled at slightly different moments.
    _stat(tmp_path, 0, 0)
    _proc(tmp_path, 7, 1, 0)

    def sleep(seconds: float) -> None:
        _stat(tmp_path, 90, 110)
        _proc(tmp_path, 7, 1, 95)

    assert other_busy_cpus(Probe(tmp_path), 7, sleep=sleep) == 0.0


def test_the_live_machine_is_sampled_over_half_a_second() -> None:
    waited: list[float] = []
    busy = other_busy_cpus(Probe(Path("/")), sleep=waited.append)
    assert waited == [0.5]
    assert busy is None or busy >= 0.0
    assert tree_ticks(Probe(Path("/"))) > 0  # this test's own interpreter
