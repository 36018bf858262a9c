"""The text `harness fingerprint` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.fingerprint import collect_fingerprint, format_fingerprint

SYSROOTS = Path(__file__).resolve().parents[2] / "fixtures" / "sysroots"
NO_REPO = Path("/nonexistent/beyond-tops-no-repo")  # git fails at once, whatever the checkout


def _lines(tree: str, **kwargs: Any) -> list[str]:
    root = SYSROOTS / tree
    fp = collect_fingerprint(root=root, repo_dir=NO_REPO, **kwargs)
    return format_fingerprint(fp).splitlines()


def test_dual_socket_key_lines() -> None:
    lines = _lines("dual-socket", environ={"OMP_NUM_THREADS": "60", "HOME": "/root"})
    assert lines[0].startswith("fingerprint  ")
    assert lines[0].endswith("(incomplete: 4 fields missing)")
    for expected in (
        "cpu          Intel(R) Xeon(R) Gold 6444Y (GenuineIntel)",
        "topology     2 socket(s), 32 cores, 64 threads, SMT on",
        "usable cpus  60 (online 0-63, affinity 60, cgroup quota none, isolated 2-3,34-35)",
        "isa          avx2 avx512f avx512_vnni avx_vnni avx512_bf16 avx512_fp16 amx_tile "
        "amx_bf16 amx_int8",
        "caches       L1d 48 KiB, L1i 32 KiB, L2 2048 KiB, L3 46080 KiB",
        "frequency    max 4000 MHz, driver intel_pstate, governor powersave, turbo on",
        "numa         node0 0-15,32-47, node1 16-31,48-63",
        "memory       503.5 GiB, swap 8.0 GiB (0.0 GiB used), cgroup limit none",
        "os           Ubuntu 22.04.4 LTS, kernel 5.15.0-105-generic, glibc unknown, unknown",
        "container    no",
        "env          OMP_NUM_THREADS=60",
        "gpus         none",
        "harness      0.1.0 (git commit unknown)",
        "missing      os.glibc: only readable for the running system (root is not /)",
        "             os.arch: /proc/sys/kernel/arch not present (older kernel)",
    ):
        assert expected in lines


def test_container_and_gpu_lines() -> None:
    lines = _lines(
        "cgroup-container",
        environ={"BEYOND_TOPS_IMAGE_TAG": "beyond-tops:cpu", "BEYOND_TOPS_IMAGE_ID": "sha256:aa"},
        gpus=[
            {
                "index": 0,
                "name": "NVIDIA H200",
                "driver_version": "550.54.15",
                "memory_total_mib": 143771,
                "power_limit_w": 700.0,
                "clock_sm_max_mhz": None,
            }
        ],
    )
    assert (
        "container    yes, docker, beyond-tops:cpu (/proc/1/cgroup mentions docker; "
        "root filesystem is overlay (/proc/self/mountinfo); /.dockerenv exists)"
    ) in lines
    assert "memory       15.5 GiB, swap 2.0 GiB (1.0 GiB used), cgroup limit 4.0 GiB" in lines
    assert (
        "gpu0         NVIDIA H200, driver 550.54.15, memory 143771 MiB, power limit 700.0 W"
    ) in lines


def test_vm_lines() -> None:
    lines = _lines("vm-2core", environ={})
    assert "memory       23.5 GiB, no swap, cgroup limit none" in lines
    assert "container    no (/.dockerenv exists, but nothing else suggests a container)" in lines
    assert "frequency    max unknown, driver unknown, governor unknown, turbo unknown" in lines
    assert "env          none set" in lines


def test_live_headline_and_commit() -> None:
    fp = collect_fingerprint(environ={})
    text = format_fingerprint(fp)
    assert text.endswith("\n")
    assert f"fingerprint  {fp.fingerprint_id} " in text
    if fp.data["harness"]["git_commit"]:
        assert fp.data["harness"]["git_commit"][:12] in text
