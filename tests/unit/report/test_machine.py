"""The one fingerprint renderer: `harness fingerprint`'s text and a report's machine rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.fingerprint import collect_fingerprint
from harness.records.fingerprint import Fingerprint
from harness.report.machine import format_fingerprint, machine_label, machine_rows

SYSROOTS = Path(__file__).resolve().parents[2] / "fixtures" / "sysroots"
NO_REPO = Path("/nonexistent/beyond-tops-no-repo")  # git fails at once, whatever the checkout
H200 = {
    "index": 0,
    "name": "NVIDIA H200",
    "driver_version": "550.54.15",
    "memory_total_mib": 143771,
    "power_limit_w": 700.0,
    "clock_sm_max_mhz": None,
}


def _fp(tree: str, **kwargs: Any) -> Fingerprint:
    return collect_fingerprint(root=SYSROOTS / tree, repo_dir=NO_REPO, **kwargs)


def _lines(tree: str, **kwargs: Any) -> list[str]:
    return format_fingerprint(_fp(tree, **kwargs)).splitlines()


def test_dual_socket_text() -> None:
    lines = _lines("dual-socket", environ={"OMP_NUM_THREADS": "60", "HOME": "/root"})
    assert lines[0].startswith("fingerprint  ")
    assert lines[0].endswith("(incomplete: 4 fields missing)")
    assert lines[1:11] == [
        "cpu          Intel(R) Xeon(R) Gold 6444Y (GenuineIntel), 2 sockets, 32 cores, "
        "64 threads, SMT on",
        "usable cpus  60 (online 0-63), affinity 60 CPUs, isolated 2-3,34-35",
        "clock        3,600 MHz now, 4,000 MHz max, 4,000 MHz cap, driver intel_pstate, "
        "governor powersave, turbo on",
        "isa          avx2, avx512f, avx512_vnni, avx_vnni, avx512_bf16, avx512_fp16, amx_tile, "
        "amx_bf16, amx_int8",
        "caches       L1d 48 KiB, L1i 32 KiB, L2 2 MiB, L3 45 MiB",
        "numa         node0 0-15,32-47, node1 16-31,48-63",
        "memory       503.5 GiB total, 493.4 GiB available; swap 8.0 GiB (0.0 GiB used)",
        "os           Ubuntu 22.04.4 LTS, kernel 5.15.0-105-generic",
        "container    none detected",
        "gpus         none",
    ]
    assert lines[11].startswith("software     Python ")
    for expected in (
        "environment  OMP_NUM_THREADS=60",
        "harness      0.1.0, git commit unknown",
        "missing      os.glibc: only readable for the running system (root is not /)",
        "             os.arch: /proc/sys/kernel/arch not present (older kernel)",
    ):
        assert expected in lines


def test_container_and_gpu_text() -> None:
    lines = _lines(
        "cgroup-container",
        environ={"BEYOND_TOPS_IMAGE_TAG": "beyond-tops:cpu", "BEYOND_TOPS_IMAGE_ID": "sha256:aa"},
        gpus=[H200],
    )
    assert (
        "container    docker, beyond-tops:cpu (/proc/1/cgroup mentions docker; "
        "root filesystem is overlay (/proc/self/mountinfo); /.dockerenv exists)"
    ) in lines
    assert (
        "memory       15.5 GiB total, 11.4 GiB available; swap 2.0 GiB (1.0 GiB used); "
        "cgroup limit 4.0 GiB"
    ) in lines
    assert "usable cpus  2 (online 0-7), cgroup quota 1.5 CPUs" in lines
    assert "gpu 0        NVIDIA H200: 140.4 GiB, power limit 700 W, driver 550.54.15" in lines


def test_vm_text_says_what_is_unknown() -> None:
    lines = _lines("vm-2core", environ={})
    assert "clock        2,596 MHz now" in lines
    assert "memory       23.5 GiB total, 21.4 GiB available; no swap" in lines
    assert (
        "container    none detected (/.dockerenv exists, but nothing else suggests a container)"
    ) in lines
    assert "environment  none set" in lines
    bare = format_fingerprint(Fingerprint(data={"fingerprint_id": "0" * 16, "complete": True}))
    assert bare.splitlines()[:3] == [
        "fingerprint  0000000000000000 (complete)",
        "cpu          unknown model (unknown vendor)",
        "usable cpus  unknown",
    ]


def test_live_headline_and_commit() -> None:
    fp = collect_fingerprint(environ={})
    text = format_fingerprint(fp)
    assert text.endswith("\n")
    assert f"fingerprint  {fp.fingerprint_id} " in text
    if fp.harness.git_commit:
        assert fp.harness.git_commit[:12] in text


def test_rows_share_the_text_and_leave_out_what_was_not_read() -> None:
    fp = _fp("cgroup-container", environ={"BEYOND_TOPS_IMAGE_ID": "sha256:aa"}, gpus=[H200])
    rows = dict(machine_rows(fp))
    text = format_fingerprint(fp)
    for part in ("CPU", "usable CPUs", "clock", "ISA", "caches", "memory", "OS", "GPU 0"):
        assert f"{part.lower():<12} {rows[part]}\n" in text
    assert rows["container"] == "docker, sha256:aa"  # no tag: the image id
    assert "NUMA" not in rows and "GPUs" not in rows
    assert rows["not read"].startswith("3 fields: only readable for the running system")
    assert machine_label(fp) == (
        "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz (2 CPUs), NVIDIA H200"
    )


def test_rows_of_the_harness_and_turbo() -> None:
    data = _fp("dual-socket", environ={}).to_dict()
    data["harness"] = {"version": "0.1.0", "git_commit": "a" * 40, "git_dirty": None}
    rows = dict(machine_rows(Fingerprint(data=data)))
    assert rows["harness"] == "0.1.0, commit aaaaaaaaaaaa, uncommitted changes unknown"
    assert rows["clock"].endswith("turbo on")
    data["harness"] = {"version": "0.1.0", "git_commit": "a" * 40, "git_dirty": True}
    data.pop("container")
    rows = dict(machine_rows(Fingerprint(data=data)))
    assert rows["harness"] == "0.1.0, commit aaaaaaaaaaaa with uncommitted changes"
    assert "container" not in rows
