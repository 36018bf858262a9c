"""cgroup v1/v2 limits and the usable CPU count, on small trees written by each test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.fingerprint.cgroup import collect_cpu_limits
from harness.fingerprint.memory import collect_memory
from harness.fingerprint.probe import Probe
from harness.records.fingerprint_sections import section_json

SYSROOTS = Path(__file__).resolve().parents[2] / "fixtures" / "sysroots"


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


V1_HOST = {
    "proc/self/status": "Cpus_allowed_list:\t0-15\n",
    "proc/self/cgroup": "4:memory:/user.slice\n3:cpu,cpuacct:/user.slice/job\n0::/\n",
    "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
    "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    "sys/fs/cgroup/cpu,cpuacct/user.slice/job/cpu.cfs_quota_us": "250000\n",
    "sys/fs/cgroup/cpu,cpuacct/user.slice/job/cpu.cfs_period_us": "100000\n",
    "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
    "sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes": "8589934592\n",
}


def test_v1_quota_is_read_from_the_process_cgroup(tmp_path: Path) -> None:
    probe = Probe(_write(tmp_path, V1_HOST))
    assert section_json(collect_cpu_limits(probe, pid=None, online=16)) == {
        "affinity_cpus": 16,
        "cgroup_version": 1,
        "cgroup_cpu_quota": 2.5,
        "usable_cpus": 3,
    }
    assert probe.missing == []


def test_v1_memory_limit_of_the_process_cgroup(tmp_path: Path) -> None:
    probe = Probe(_write(tmp_path, {**V1_HOST, "proc/meminfo": "MemTotal: 1024 kB\n"}))
    assert section_json(collect_memory(probe))["cgroup_limit_bytes"] == 8589934592


def test_v2_takes_the_tightest_limit_along_the_path(tmp_path: Path) -> None:
    files = {
        "proc/self/status": "Cpus_allowed_list:\t0-7\n",
        "proc/self/cgroup": "0::/a/b\n",
        "sys/fs/cgroup/cgroup.controllers": "cpu memory\n",
        "sys/fs/cgroup/a/cpu.max": "300000 100000\n",
        "sys/fs/cgroup/a/b/cpu.max": "max 100000\n",
    }
    probe = Probe(_write(tmp_path, files))
    limits = section_json(collect_cpu_limits(probe, pid=None, online=8))
    assert (limits["cgroup_cpu_quota"], limits["usable_cpus"]) == (3.0, 3)


def test_quota_under_one_cpu_still_leaves_one_usable(tmp_path: Path) -> None:
    files = {
        "proc/self/status": "Cpus_allowed_list:\t0-3\n",
        "proc/self/cgroup": "0::/\n",
        "sys/fs/cgroup/cgroup.controllers": "cpu\n",
        "sys/fs/cgroup/cpu.max": "50000 100000\n",
    }
    limits = section_json(collect_cpu_limits(Probe(_write(tmp_path, files)), pid=None, online=4))
    assert (limits["cgroup_cpu_quota"], limits["usable_cpus"]) == (0.5, 1)


def test_pid_selects_that_process(tmp_path: Path) -> None:
    files = {
        "proc/42/status": "Cpus_allowed_list:\t0-2\n",
        "proc/42/cgroup": "0::/\n",
        "sys/fs/cgroup/cgroup.controllers": "cpu\n",
    }
    limits = section_json(collect_cpu_limits(Probe(_write(tmp_path, files)), pid=42, online=None))
    assert limits == {
        "affinity_cpus": 3,
        "cgroup_version": 2,
        "cgroup_cpu_quota": None,
        "usable_cpus": 3,
    }


def test_container_cgroup_path_not_visible_falls_back_to_the_mount(tmp_path: Path) -> None:
    probe = Probe(SYSROOTS / "cgroup-container")
    limits = section_json(collect_cpu_limits(probe, pid=None, online=8))
    assert (limits["cgroup_cpu_quota"], limits["usable_cpus"]) == (1.5, 2)


def test_missing_cgroup_file_and_controller_are_recorded(tmp_path: Path) -> None:
    probe = Probe(_write(tmp_path, {"proc/self/status": "Name:\tx\n"}))
    limits = section_json(collect_cpu_limits(probe, pid=None, online=4))
    assert limits["usable_cpus"] == 4
    assert [m.to_dict() for m in probe.missing] == [
        {
            "field": "cpu.affinity_cpus",
            "reason": "/proc/self/status has no valid Cpus_allowed_list",
        },
        {"field": "cpu.cgroup_cpu_quota", "reason": "/proc/self/cgroup not present"},
    ]
    probe = Probe(_write(tmp_path, {"proc/self/cgroup": "1:cpu:/\n"}))
    section_json(collect_cpu_limits(probe, pid=None, online=4))
    assert probe.missing[-1].reason == "no cgroup cpu controller mounted under /sys/fs/cgroup"


def test_unparseable_quota_is_recorded(tmp_path: Path) -> None:
    files = {
        "proc/self/cgroup": "0::/\n",
        "sys/fs/cgroup/cgroup.controllers": "cpu\n",
        "sys/fs/cgroup/cpu.max": "lots 100000\n",
    }
    probe = Probe(_write(tmp_path, files))
    assert section_json(collect_cpu_limits(probe, pid=None, online=2))["cgroup_cpu_quota"] is None
    assert probe.missing[-1].to_dict() == {
        "field": "cpu.cgroup_cpu_quota",
        "reason": "/sys/fs/cgroup: cannot parse quota 'lots'",
    }


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux only")
def test_live_root_uses_sched_getaffinity() -> None:
    limits = section_json(collect_cpu_limits(Probe(Path("/")), pid=None, online=None))
    assert limits["affinity_cpus"] == len(os.sched_getaffinity(0))
    assert 1 <= limits["usable_cpus"] <= limits["affinity_cpus"]
