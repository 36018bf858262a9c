"""The CPU collector against each machine shape in tests/fixtures/sysroots/."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.fingerprint.cpu import collect_cpu, parse_cpuinfo
from harness.fingerprint.probe import Probe
from harness.records.fingerprint_sections import section_json

SYSROOTS = Path(__file__).resolve().parents[2] / "fixtures" / "sysroots"
CPUFREQ = "/sys/devices/system/cpu/cpu0/cpufreq"
NO_CPUFREQ = "not present: no cpufreq driver (VM?)"


def _copy(tree: str, tmp_path: Path) -> Path:
    root = tmp_path / tree
    shutil.copytree(SYSROOTS / tree, root)
    return root


def _collect(root: Path) -> tuple[dict[str, Any], list[dict[str, str]]]:
    probe = Probe(root)
    data = section_json(collect_cpu(probe))
    return data, [m.to_dict() for m in probe.missing]


def test_vm_2core() -> None:
    data, missing = _collect(SYSROOTS / "vm-2core")
    assert data == {
        "model": "AMD EPYC",
        "vendor": "AuthenticAMD",
        "sockets": 1,
        "cores": 2,
        "threads": 2,
        "threads_per_core": 1,
        "online_cpulist": "0-1",
        "online_cpus": 2,
        "isolated_cpulist": "",
        "isolated_cpus": 0,
        "affinity_cpus": 2,
        "cgroup_version": 1,
        "cgroup_cpu_quota": None,
        "usable_cpus": 2,
        "isa": ["avx2", "avx512f", "avx512_vnni", "avx512_bf16"],
        "cache_kib": {"L1d": 32, "L1i": 32, "L2": 1024, "L3": 32768},
        "current_mhz": 2596.144,
        "max_mhz": None,
        "scaling_max_mhz": None,
        "scaling_driver": None,
        "governor": None,
        "turbo": None,
        "turbo_control": None,
        "smt_control": "notsupported",
        "smt_active": False,
        "numa_nodes": [{"node": 0, "cpulist": "0-1"}],
    }
    assert missing == [
        {"field": "cpu.max_mhz", "reason": f"{CPUFREQ}/cpuinfo_max_freq {NO_CPUFREQ}"},
        {"field": "cpu.scaling_max_mhz", "reason": f"{CPUFREQ}/scaling_max_freq {NO_CPUFREQ}"},
        {
            "field": "cpu.turbo",
            "reason": "neither /sys/devices/system/cpu/intel_pstate/no_turbo nor "
            "/sys/devices/system/cpu/cpufreq/boost present: no cpufreq driver (VM?)",
        },
        {"field": "cpu.scaling_driver", "reason": f"{CPUFREQ}/scaling_driver {NO_CPUFREQ}"},
        {"field": "cpu.governor", "reason": f"{CPUFREQ}/scaling_governor {NO_CPUFREQ}"},
    ]


def test_dual_socket() -> None:
    data, missing = _collect(SYSROOTS / "dual-socket")
    assert data == {
        "model": "Intel(R) Xeon(R) Gold 6444Y",
        "vendor": "GenuineIntel",
        "sockets": 2,
        "cores": 32,
        "threads": 64,
        "threads_per_core": 2,
        "online_cpulist": "0-63",
        "online_cpus": 64,
        "isolated_cpulist": "2-3,34-35",
        "isolated_cpus": 4,
        "affinity_cpus": 60,
        "cgroup_version": 2,
        "cgroup_cpu_quota": None,
        "usable_cpus": 60,
        "isa": [
            "avx2",
            "avx512f",
            "avx512_vnni",
            "avx_vnni",
            "avx512_bf16",
            "avx512_fp16",
            "amx_tile",
            "amx_bf16",
            "amx_int8",
        ],
        "cache_kib": {"L1d": 48, "L1i": 32, "L2": 2048, "L3": 46080},
        "current_mhz": 3600.0,
        "max_mhz": 4000,
        "scaling_max_mhz": 4000,
        "scaling_driver": "intel_pstate",
        "governor": "powersave",
        "turbo": True,
        "turbo_control": "/sys/devices/system/cpu/intel_pstate/no_turbo",
        "smt_control": "on",
        "smt_active": True,
        "numa_nodes": [{"node": 0, "cpulist": "0-15,32-47"}, {"node": 1, "cpulist": "16-31,48-63"}],
    }
    assert missing == []


def test_cgroup_container() -> None:
    data, missing = _collect(SYSROOTS / "cgroup-container")
    assert data == {
        "model": "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz",
        "vendor": "GenuineIntel",
        "sockets": 1,
        "cores": 4,
        "threads": 8,
        "threads_per_core": 2,
        "online_cpulist": "0-7",
        "online_cpus": 8,
        "isolated_cpulist": "",
        "isolated_cpus": 0,
        "affinity_cpus": 8,
        "cgroup_version": 2,
        "cgroup_cpu_quota": 1.5,
        "usable_cpus": 2,
        "isa": ["avx2", "avx512f", "avx512_vnni"],
        "cache_kib": {"L1d": 48, "L1i": 32, "L2": 1280, "L3": 12288},
        "current_mhz": 2800.0,
        "max_mhz": 4700,
        "scaling_max_mhz": 4700,
        "scaling_driver": "intel_pstate",
        "governor": "performance",
        "turbo": False,
        "turbo_control": "/sys/devices/system/cpu/intel_pstate/no_turbo",
        "smt_control": "on",
        "smt_active": True,
        "numa_nodes": [{"node": 0, "cpulist": "0-7"}],
    }
    assert missing == []


def test_parse_cpuinfo_keeps_processor_blocks_only() -> None:
    text = "processor\t: 0\nmodel name\t: X\n\nprocessor\t: 1\nmodel name\t: X\n\nHardware\t: BCM\n"
    assert parse_cpuinfo(text) == [
        {"processor": "0", "model name": "X"},
        {"processor": "1", "model name": "X"},
    ]


def test_governors_that_differ_are_reported_as_mixed(tmp_path: Path) -> None:
    root = _copy("dual-socket", tmp_path)
    (root / "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor").write_text("performance\n")
    data, _ = _collect(root)
    assert data["governor"] == "mixed (performance, powersave)"


@pytest.mark.parametrize(("value", "turbo"), [("1", True), ("0", False)])
def test_generic_boost_switch_reports_turbo(tmp_path: Path, value: str, turbo: bool) -> None:
    root = _copy("dual-socket", tmp_path)
    (root / "sys/devices/system/cpu/intel_pstate/no_turbo").unlink()
    (root / "sys/devices/system/cpu/cpufreq").mkdir()
    (root / "sys/devices/system/cpu/cpufreq/boost").write_text(f"{value}\n")
    data, _ = _collect(root)
    assert (data["turbo"], data["turbo_control"]) == (
        turbo,
        "/sys/devices/system/cpu/cpufreq/boost",
    )


def test_cpuinfo_without_topology_or_flags_records_why(tmp_path: Path) -> None:
    root = _copy("vm-2core", tmp_path)
    (root / "proc/cpuinfo").write_text("processor\t: 0\nBogoMIPS\t: 50.00\n\n")
    data, missing = _collect(root)
    assert (data["model"], data["sockets"], data["cores"], data["threads"], data["isa"]) == (
        None,
        None,
        None,
        1,
        None,
    )
    assert [m for m in missing if m["field"] in {"cpu.model", "cpu.sockets", "cpu.isa"}] == [
        {"field": "cpu.model", "reason": "no 'model name' in /proc/cpuinfo"},
        {"field": "cpu.sockets", "reason": "no 'physical id'/'core id' in /proc/cpuinfo"},
        {"field": "cpu.isa", "reason": "no 'flags' in /proc/cpuinfo"},
    ]


def test_an_empty_root_records_every_cpu_field(tmp_path: Path) -> None:
    data, missing = _collect(tmp_path)
    assert data["usable_cpus"] is None
    assert [m["field"] for m in missing] == [
        "cpu.cpuinfo",
        "cpu.online_cpus",
        "cpu.isolated_cpus",
        "cpu.affinity_cpus",
        "cpu.cgroup_cpu_quota",
        "cpu.usable_cpus",
        "cpu.cache_kib",
        "cpu.max_mhz",
        "cpu.scaling_max_mhz",
        "cpu.turbo",
        "cpu.smt_active",
        "cpu.scaling_driver",
        "cpu.governor",
        "cpu.smt_control",
        "cpu.numa_nodes",
    ]
