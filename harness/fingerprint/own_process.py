"""This process as a GPU driver sees it: its PIDs, its PID namespace and its GPU runtime."""

from __future__ import annotations

import os
from dataclasses import dataclass

from harness.fingerprint.cgroup import proc_dir
from harness.fingerprint.probe import Probe

# The inode of the host's (initial) PID namespace, fixed by the kernel (PROC_PID_INIT_INO).
HOST_PID_NAMESPACE = 0xEFFFFFFC
# Device files only a GPU runtime (CUDA, HIP) opens, never NVML or amdsmi alone.
GPU_RUNTIME_DEVICES = ("/dev/nvidia-uvm", "/dev/kfd")


@dataclass(frozen=True, kw_only=True)
class OwnProcess:
    """How to tell this process among the PIDs NVML and amdsmi list.

    The drivers list host PIDs. Outside a container this process's PID is one; inside one
    (a private PID namespace) the host PID is usually invisible, so a listed PID may be this
    process without matching any of `pids`.
    """

    pids: frozenset[int]  # its PID in every PID namespace /proc shows (NSpid)
    host_pids: bool  # whether the host PID is among them (the host's PID namespace)
    gpu_runtime: bool  # whether a GPU runtime is up here, so it may hold a GPU context


def own_process(probe: Probe, pid: int | None = None) -> OwnProcess:
    """Read /proc/<pid> (default: self) under the probe's root."""
    proc = proc_dir(pid)
    namespace = _pid_namespace(probe, proc)
    return OwnProcess(
        pids=frozenset(_pids(probe.optional(f"{proc}/status") or "")),
        # unreadable: assume the host's, as before namespaces existed
        host_pids=namespace is None or namespace == HOST_PID_NAMESPACE,
        gpu_runtime=_opens_gpu_runtime(probe, proc),
    )


def _pids(status: str) -> list[int]:
    """The PIDs of a /proc/<pid>/status text: NSpid (every namespace) or else Pid."""
    fields = dict(line.partition(":")[::2] for line in status.splitlines())
    text = fields.get("NSpid") or fields.get("Pid") or ""
    return [int(word) for word in text.split() if word.isdigit()]


def _pid_namespace(probe: Probe, proc: str) -> int | None:
    """The inode of the process's PID namespace ("pid:[4026531836]"), None if unreadable."""
    try:
        link = os.readlink(probe.path(f"{proc}/ns/pid"))
    except OSError:
        return None
    inode = link.removeprefix("pid:[").removesuffix("]")
    return int(inode) if inode.isdigit() else None


def _opens_gpu_runtime(probe: Probe, proc: str) -> bool:
    """Whether any open file of the process is a GPU runtime's device."""
    try:
        fds = list(probe.path(f"{proc}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed while we looked
        if target.startswith(GPU_RUNTIME_DEVICES):
            return True
    return False
