"""Preflight warnings per machine shape, per GPU state and per profile."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.errors import HarnessError, RunError
from harness.fingerprint import (
    PreflightError,
    PreflightWarning,
    collect_fingerprint,
    enforce_strict,
    preflight,
)
from harness.fingerprint.busy import Sleep
from harness.records.fingerprint import Fingerprint

SYSROOTS = Path(__file__).resolve().parents[2] / "fixtures" / "sysroots"
NO_REPO = Path("/nonexistent/beyond-tops-no-repo")  # git fails at once, whatever the checkout
QUICK = PreflightWarning(
    code="quick_profile",
    message="quick profile: shortened LoadGen run, NOT valid for an MLPerf submission; "
    "use `--profile submission` for a valid result",
)


Sysroot = Callable[[str], Path]


@pytest.fixture
def sysroot(tmp_path: Path) -> Sysroot:
    """A copy of a fixture sysroot, which the CPU load sampling may write /proc/stat into."""

    def copy(tree: str) -> Path:
        target = tmp_path / tree
        if not target.exists():
            shutil.copytree(SYSROOTS / tree, target, symlinks=True)
        return target

    return copy


def cpu_stat(busy: int, idle: int, cpus: int = 2) -> str:
    """A /proc/stat with `busy` user ticks and `idle` idle ticks over `cpus` CPUs."""
    per_cpu = "".join(f"cpu{n} 0 0 0 0 0 0 0 0 0 0\n" for n in range(cpus))
    return f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\n{per_cpu}intr 0\nctxt 0\n"


def window(root: Path, busy_cpus: float = 0.0, cpus: int = 2) -> Sleep:
    """Write /proc/stat; return a sleep after which 100 ticks per CPU passed, `busy_cpus` busy."""
    stat = root / "proc" / "stat"
    stat.parent.mkdir(parents=True, exist_ok=True)
    stat.write_text(cpu_stat(1000, 5000, cpus))
    busy = round(100 * busy_cpus)

    def sleep(seconds: float) -> None:
        assert seconds == 0.5
        stat.write_text(cpu_stat(1000 + busy, 5000 + 100 * cpus - busy, cpus))

    return sleep


def _preflight(
    fp: Fingerprint, *, root: Path, busy_cpus: float = 0.0, **kwargs: Any
) -> list[PreflightWarning]:
    return preflight(fp, root=root, sleep=window(root, busy_cpus), **kwargs)


def _fp(tree: str, gpus: tuple[dict[str, Any], ...] = ()) -> Fingerprint:
    root = SYSROOTS / tree
    return collect_fingerprint(root=root, environ={}, gpus=gpus, repo_dir=NO_REPO)


def test_vm_has_nothing_to_warn_about_in_the_submission_profile(sysroot: Sysroot) -> None:
    assert _preflight(_fp("vm-2core"), root=sysroot("vm-2core"), profile="submission") == []


def test_quick_profile_is_labelled(sysroot: Sysroot) -> None:
    assert _preflight(_fp("vm-2core"), root=sysroot("vm-2core")) == [QUICK]


def test_dual_socket_governor_and_turbo(sysroot: Sysroot) -> None:
    root = sysroot("dual-socket")
    assert _preflight(_fp("dual-socket"), root=root, profile="submission") == [
        PreflightWarning(
            code="governor",
            message="CPU governor is 'powersave', not 'performance': "
            "run `sudo cpupower frequency-set -g performance`",
        ),
        PreflightWarning(
            code="turbo",
            message="turbo/boost is on (/sys/devices/system/cpu/intel_pstate/no_turbo): clocks "
            "follow temperature and load, so results vary; for steadier numbers run "
            "`echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo`",
        ),
    ]


def test_container_cgroup_quota_and_swap(sysroot: Sysroot) -> None:
    root = sysroot("cgroup-container")
    assert _preflight(_fp("cgroup-container"), root=root, profile="submission") == [
        PreflightWarning(
            code="cgroup_quota",
            message="cgroup CPU quota is 1.5 CPUs but 8 CPUs are visible: thread pools sized to "
            "8 get throttled; raise the quota (`docker run --cpus 8`) or set "
            "runtime.intra_op_threads to 2",
        ),
        PreflightWarning(
            code="swap",
            message="1024 MiB of swap in use: paging can stall the run; free memory and run "
            "`sudo swapoff -a && sudo swapon -a` to bring it back into RAM",
        ),
    ]


def test_high_load_is_relative_to_usable_cpus(sysroot: Sysroot) -> None:
    fp = _fp("vm-2core")
    root = sysroot("high-load")
    assert _preflight(fp, root=root, busy_cpus=1.4, profile="submission") == [
        PreflightWarning(
            code="load",
            message="other processes keep 1.40 CPUs busy, above 1 (0.5 x 2 usable CPUs, this "
            "harness not counted): other work is running; stop it or wait for it before "
            "benchmarking",
        )
    ]
    assert _preflight(fp, root=root, busy_cpus=1.4, profile="submission", load_threshold=2.0) == []
    # The same load is no problem for the 60 usable CPUs of the dual-socket server.
    dual = [w.code for w in _preflight(_fp("dual-socket"), root=root, busy_cpus=1.4)]
    assert "load" not in dual


def test_unreadable_proc_stat_is_a_warning(tmp_path: Path) -> None:
    warnings = preflight(_fp("vm-2core"), root=tmp_path, profile="submission", sleep=lambda s: None)
    assert warnings == [
        PreflightWarning(
            code="load",
            message="cannot read /proc/stat: whether other work is running is unknown",
        )
    ]


def _proc(root: Path, pid: int, ppid: int, ticks: int, reaped: int = 0) -> None:
    """/proc/<pid>/stat of a process with `ticks` of utime and `reaped` of cutime."""
    (root / "proc" / str(pid)).mkdir(parents=True, exist_ok=True)
    fields = f"S {ppid} {' '.join(['0'] * 9)} {ticks} 0 {reaped} 0 20 0 1 0"
    (root / "proc" / str(pid) / "stat").write_text(f"{pid} (py (3) x) {fields}\n")


def test_an_idle_machine_after_a_trial_is_fit_to_benchmark(sysroot: Sysroot) -> None:
    """Issue #11: the previous trial and this harness's own threads are no "other work"."""
    root = sysroot("vm-2core")
    (root / "proc" / "loadavg").write_text("1.92 1.02 0.40 3/120 4300\n")  # the last trial's
    stat = root / "proc" / "stat"
    stat.write_text(cpu_stat(1000, 5000))
    _proc(root, 4000, 1, 10)  # make bench
    _proc(root, 4242, 4000, 100)  # this harness, its ORT threads still spinning
    _proc(root, 4243, 4242, 0)  # a worker it started

    def sleep(seconds: float) -> None:
        stat.write_text(cpu_stat(1000 + 190, 5000 + 10))
        _proc(root, 4000, 1, 10, reaped=5000)  # reaped the previous trial: not this window's
        _proc(root, 4242, 4000, 190)
        _proc(root, 4243, 4242, 100)

    fp = _fp("vm-2core")
    assert preflight(fp, root=root, pid=4242, profile="submission", sleep=sleep) == []


GPU_OK = {
    "index": 0,
    "name": "NVIDIA H200",
    "processes": [],
    "throttle_reasons_active": [],
    "persistence_mode": True,
}


def test_healthy_gpu_adds_nothing(sysroot: Sysroot) -> None:
    fp = _fp("vm-2core", gpus=(GPU_OK,))
    assert _preflight(fp, root=sysroot("vm-2core"), profile="submission") == []


def test_gpu_persistence_processes_and_throttling(sysroot: Sysroot) -> None:
    busy = {
        **GPU_OK,
        "index": 1,
        "processes": [
            {"pid": 4242, "type": "compute", "used_memory_mib": 512},
            {"pid": 77, "name": "python"},
            777,
            {"pid": 2},
        ],
        "throttle_reasons_active": ["gpu_idle", "sw_thermal_slowdown", "hw_slowdown"],
        "persistence_mode": False,
    }
    fp = _fp("vm-2core", gpus=(busy,))
    assert _preflight(fp, root=sysroot("vm-2core"), profile="submission") == [
        PreflightWarning(
            code="gpu_processes",
            message="GPU 1 (NVIDIA H200) runs 4 other process(es) (pid 4242, pid 77 python, 777 "
            "and 1 more): stop them or pick another GPU with "
            "CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES",
        ),
        PreflightWarning(
            code="gpu_throttling",
            message="GPU 1 (NVIDIA H200) is already throttling (sw_thermal_slowdown, hw_slowdown): "
            "let it cool down and check its power cap and clocks (`nvidia-smi -q -d PERFORMANCE`)",
        ),
        PreflightWarning(
            code="gpu_persistence",
            message="GPU 1 (NVIDIA H200) has persistence mode off: the driver re-initialises the "
            "GPU between runs; run `sudo nvidia-smi -pm 1`",
        ),
    ]


def test_amd_throttling_points_to_amd_smi(sysroot: Sysroot) -> None:
    mi300x = {**GPU_OK, "vendor": "amd", "name": "AMD Instinct MI300X"}
    fp = _fp("vm-2core", gpus=({**mi300x, "throttle_reasons_active": ["ppt"]},))
    assert _preflight(fp, root=sysroot("vm-2core"), profile="submission") == [
        PreflightWarning(
            code="gpu_throttling",
            message="GPU 0 (AMD Instinct MI300X) is already throttling (ppt): let it cool down "
            "and check its power cap and clocks (`amd-smi metric --throttle`)",
        )
    ]


def test_idle_is_not_throttling(sysroot: Sysroot) -> None:
    idle = {**GPU_OK, "throttle_reasons_active": ["gpu_idle"]}
    fp = _fp("vm-2core", gpus=(idle,))
    assert _preflight(fp, root=sysroot("vm-2core"), profile="submission") == []


def test_gpu_without_the_keys_is_not_judged(sysroot: Sysroot) -> None:
    amd = {"name": "AMD Instinct MI300X", "persistence_mode": None, "throttle_reasons_active": None}
    fp = _fp("vm-2core", gpus=(amd,))
    assert _preflight(fp, root=sysroot("vm-2core"), profile="submission") == []


def test_warning_forms() -> None:
    assert str(QUICK) == QUICK.message
    assert QUICK.to_dict() == {"code": "quick_profile", "message": QUICK.message}


def test_strict_turns_warnings_into_one_error(sysroot: Sysroot) -> None:
    enforce_strict([])
    with pytest.raises(PreflightError) as caught:
        enforce_strict(_preflight(_fp("dual-socket"), root=sysroot("dual-socket")))
    assert isinstance(caught.value, RunError)
    assert isinstance(caught.value, HarnessError)
    message = str(caught.value)
    assert message.startswith("preflight failed under --strict (3): CPU governor is 'powersave'")
    assert "\n" not in message


CONTAINER_NS = "pid:[4026532999]"  # any PID namespace but the host's
HOST_NS = f"pid:[{0xEFFFFFFC}]"


def _machine(root: Path, *, nspid: str, namespace: str, runtime: bool = False) -> Path:
    """A /proc where this process has the PIDs `nspid`, and CUDA's device open if `runtime`."""
    proc = root / "proc"
    (proc / "self" / "ns").mkdir(parents=True)
    (proc / "self" / "fd").mkdir()
    (proc / "loadavg").write_text("0.00 0.00 0.00 1/100 12\n")
    (proc / "self" / "status").write_text(f"Name:\tpython\nNSpid:\t{nspid}\n")
    (proc / "self" / "ns" / "pid").symlink_to(namespace)
    (proc / "self" / "fd" / "3").symlink_to("/dev/nvidiactl")  # NVML alone opens this
    if runtime:
        (proc / "self" / "fd" / "4").symlink_to("/dev/nvidia-uvm")
    return root


def _process_warnings(root: Path, *pids: int) -> list[str]:
    gpu = {**GPU_OK, "processes": [{"pid": p, "type": "compute"} for p in pids]}
    found = _preflight(_fp("vm-2core", gpus=(gpu,)), root=root, profile="submission")
    return [w.message.split(": stop them")[0] for w in found if w.code == "gpu_processes"]


def test_the_harness_own_gpu_context_is_not_another_process(tmp_path: Path) -> None:
    root = _machine(tmp_path, nspid="4242", namespace=HOST_NS, runtime=True)
    assert _process_warnings(root, 4242) == []
    assert _process_warnings(root, 4242, 99) == [
        "GPU 0 (NVIDIA H200) runs 1 other process(es) (pid 99)"
    ]


def test_a_second_run_in_this_process_does_not_flag_its_own_session() -> None:
    # The session of the first run shows up as this process, in both NVML lists.
    me = {"pid": os.getpid(), "type": "compute", "used_memory_mib": 900}
    gpu = {**GPU_OK, "processes": [me, {**me, "type": "graphics"}]}
    warnings = preflight(_fp("vm-2core", gpus=(gpu,)), root=Path("/"), pid=None)
    assert [w for w in warnings if w.code == "gpu_processes"] == []


def test_in_a_container_a_lone_host_pid_may_be_this_harness(tmp_path: Path) -> None:
    root = _machine(tmp_path, nspid="12", namespace=CONTAINER_NS, runtime=True)
    assert _process_warnings(root, 3141592) == []
    enforce_strict(_preflight(_fp("vm-2core"), root=root, profile="submission"))
    assert _process_warnings(root, 3141592, 2718281) == [
        "GPU 0 (NVIDIA H200) runs 1 or 2 other process(es) (pid 3141592, pid 2718281; "
        "host PIDs, one of them maybe this harness)"
    ]


def test_in_a_container_without_a_gpu_runtime_every_host_pid_is_another(tmp_path: Path) -> None:
    root = _machine(tmp_path, nspid="12", namespace=CONTAINER_NS)
    assert _process_warnings(root, 3141592) == [
        "GPU 0 (NVIDIA H200) runs 1 other process(es) (pid 3141592; host PIDs)"
    ]


def test_in_a_container_that_shows_its_host_pid_this_harness_is_known(tmp_path: Path) -> None:
    root = _machine(tmp_path, nspid="3141592\t12", namespace=CONTAINER_NS, runtime=True)
    assert _process_warnings(root, 3141592) == []
    assert _process_warnings(root, 3141592, 2718281) == [
        "GPU 0 (NVIDIA H200) runs 1 other process(es) (pid 2718281; host PIDs)"
    ]
