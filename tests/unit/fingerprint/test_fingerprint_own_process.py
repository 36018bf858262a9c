"""Which PIDs are this process, whether they are host PIDs, and whether a GPU runtime is up."""

from __future__ import annotations

import os
from pathlib import Path

from harness.fingerprint.own_process import HOST_PID_NAMESPACE, OwnProcess, own_process
from harness.fingerprint.probe import Probe


def test_a_container_process_seen_from_an_outer_namespace(tmp_path: Path) -> None:
    proc = tmp_path / "proc" / "77"
    (proc / "ns").mkdir(parents=True)
    (proc / "fd").mkdir()
    (proc / "status").write_text("Name:\tpython\nPid:\t4242\nNSpid:\t4242\t12\nNSpgid:\t1\n")
    (proc / "ns" / "pid").symlink_to("pid:[4026532999]")
    (proc / "fd" / "0").symlink_to("/dev/null")
    (proc / "fd" / "9").symlink_to("/dev/kfd")
    assert own_process(Probe(tmp_path), 77) == OwnProcess(
        pids=frozenset({4242, 12}), host_pids=False, gpu_runtime=True
    )


def test_older_kernels_without_nspid_or_namespace_links(tmp_path: Path) -> None:
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "status").write_text("Name:\tpython\nPid:\t321\n")
    assert own_process(Probe(tmp_path)) == OwnProcess(
        pids=frozenset({321}), host_pids=True, gpu_runtime=False
    )


def test_nothing_readable_is_no_pid(tmp_path: Path) -> None:
    assert own_process(Probe(tmp_path)).pids == frozenset()


def test_this_process() -> None:
    me = own_process(Probe(Path("/")))
    assert os.getpid() in me.pids
    namespace = os.readlink("/proc/self/ns/pid")
    assert me.host_pids == (namespace == f"pid:[{HOST_PID_NAMESPACE}]")
