"""Memory, OS and container collectors against each machine shape."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.fingerprint.memory import collect_memory, parse_meminfo
from harness.fingerprint.probe import Probe
from harness.fingerprint.system import collect_container, collect_os
from harness.records.fingerprint_sections import section_json

SYSROOTS = Path(__file__).resolve().parents[2] / "fixtures" / "sysroots"
GLIBC_MISSING = {
    "field": "os.glibc",
    "reason": "only readable for the running system (root is not /)",
}


def _missing(probe: Probe) -> list[dict[str, str]]:
    return [m.to_dict() for m in probe.missing]


@pytest.mark.parametrize(
    ("tree", "expected"),
    [
        (
            "vm-2core",
            {
                "total_bytes": 25276502016,
                "available_bytes": 23012569088,
                "swap_total_bytes": 0,
                "swap_free_bytes": 0,
                "swap_used_bytes": 0,
                "cgroup_limit_bytes": None,
            },
        ),
        (
            "dual-socket",
            {
                "total_bytes": 540654125056,
                "available_bytes": 529801338880,
                "swap_total_bytes": 8589930496,
                "swap_free_bytes": 8589930496,
                "swap_used_bytes": 0,
                "cgroup_limit_bytes": None,
            },
        ),
        (
            "cgroup-container",
            {
                "total_bytes": 16694693888,
                "available_bytes": 12289974272,
                "swap_total_bytes": 2147479552,
                "swap_free_bytes": 1073737728,
                "swap_used_bytes": 1073741824,
                "cgroup_limit_bytes": 4294967296,
            },
        ),
    ],
)
def test_memory(tree: str, expected: dict[str, Any]) -> None:
    probe = Probe(SYSROOTS / tree)
    assert section_json(collect_memory(probe)) == expected
    assert probe.missing == []


def test_parse_meminfo_converts_kib() -> None:
    assert parse_meminfo("MemTotal:  2 kB\nHugePages_Total:  3\nbad line\n") == {
        "MemTotal": 2048,
        "HugePages_Total": 3,
    }


def test_memory_records_absent_meminfo_keys(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/meminfo").write_text("MemTotal: 4 kB\n")
    probe = Probe(tmp_path)
    data = section_json(collect_memory(probe))
    assert (data["total_bytes"], data["swap_used_bytes"]) == (4096, None)
    assert [m["field"] for m in _missing(probe)] == [
        "memory.available_bytes",
        "memory.swap_total_bytes",
        "memory.swap_free_bytes",
        "memory.cgroup_limit_bytes",
    ]


@pytest.mark.parametrize(
    ("tree", "expected", "missing"),
    [
        (
            "vm-2core",
            {
                "kernel": "6.18.44-fc-v669",
                "release": "Debian GNU/Linux 12 (bookworm)",
                "glibc": None,
                "arch": "x86_64",
            },
            [GLIBC_MISSING],
        ),
        (
            "dual-socket",
            {
                "kernel": "5.15.0-105-generic",
                "release": "Ubuntu 22.04.4 LTS",
                "glibc": None,
                "arch": None,
            },
            [
                GLIBC_MISSING,
                {"field": "os.arch", "reason": "/proc/sys/kernel/arch not present (older kernel)"},
            ],
        ),
        (
            "cgroup-container",
            {
                "kernel": "6.8.0-45-generic",
                "release": "Debian GNU/Linux 12 (bookworm)",
                "glibc": None,
                "arch": "x86_64",
            },
            [GLIBC_MISSING],
        ),
    ],
)
def test_os(tree: str, expected: dict[str, Any], missing: list[dict[str, str]]) -> None:
    probe = Probe(SYSROOTS / tree)
    assert section_json(collect_os(probe)) == expected
    assert _missing(probe) == missing


def test_os_on_the_live_root_reads_glibc() -> None:
    probe = Probe(Path("/"))
    data = section_json(collect_os(probe))
    assert data["kernel"] == Path("/proc/sys/kernel/osrelease").read_text().strip()
    libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    assert data["glibc"] == (libc.removeprefix("glibc ") if libc.startswith("glibc ") else None)


def test_vm_dockerenv_alone_is_not_a_container() -> None:
    probe = Probe(SYSROOTS / "vm-2core")
    assert section_json(collect_container(probe, {})) == {
        "detected": False,
        "runtime": None,
        "evidence": [],
        "ignored_evidence": ["/.dockerenv exists, but nothing else suggests a container"],
        "image_id": None,
        "image_tag": None,
    }
    assert probe.missing == []


def test_dual_socket_is_not_a_container() -> None:
    probe = Probe(SYSROOTS / "dual-socket")
    data = section_json(collect_container(probe, {}))
    assert (data["detected"], data["evidence"], data["ignored_evidence"]) == (False, [], [])


def test_docker_container_evidence_and_image() -> None:
    probe = Probe(SYSROOTS / "cgroup-container")
    environ = {
        "BEYOND_TOPS_IMAGE_ID": "sha256:0123abcd",
        "BEYOND_TOPS_IMAGE_TAG": "beyond-tops:cpu",
    }
    assert section_json(collect_container(probe, environ)) == {
        "detected": True,
        "runtime": "docker",
        "evidence": [
            "/proc/1/cgroup mentions docker",
            "root filesystem is overlay (/proc/self/mountinfo)",
            "/.dockerenv exists",
        ],
        "ignored_evidence": [],
        "image_id": "sha256:0123abcd",
        "image_tag": "beyond-tops:cpu",
    }
    assert probe.missing == []


def test_container_without_image_id_records_it() -> None:
    probe = Probe(SYSROOTS / "cgroup-container")
    section_json(collect_container(probe, {}))
    assert _missing(probe) == [
        {
            "field": "container.image_id",
            "reason": "BEYOND_TOPS_IMAGE_ID not set: not started by the harness's docker runner",
        }
    ]


def test_podman_and_kubernetes_clues(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(SYSROOTS / "dual-socket", root)
    (root / "run").mkdir()
    (root / "run/.containerenv").write_text("")
    (root / "proc/1/cgroup").write_text("0::/kubepods/burstable/pod1/docker-abc\n")
    data = section_json(collect_container(Probe(root), {"container": "podman"}))
    assert data["runtime"] == "kubernetes"
    assert data["evidence"] == [
        "/proc/1/cgroup mentions kubepods",
        "/proc/1/cgroup mentions docker",
        "/run/.containerenv exists",
        "$container is 'podman'",
    ]


def test_unreadable_clues_are_recorded(tmp_path: Path) -> None:
    probe = Probe(tmp_path)
    assert section_json(collect_container(probe, {}))["detected"] is False
    assert _missing(probe) == [
        {"field": "container.detected", "reason": "/proc/1/cgroup not present"},
        {"field": "container.detected", "reason": "/proc/self/mountinfo not present"},
    ]
