"""Preflight warnings per machine shape, per GPU state and per profile."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from harness.errors import HarnessError, RunError
from harness.fingerprint import (
    Fingerprint,
    PreflightError,
    PreflightWarning,
    collect_fingerprint,
    enforce_strict,
    preflight,
)

SYSROOTS = Path(__file__).resolve().parents[2] / "fixtures" / "sysroots"
NO_REPO = Path("/nonexistent/beyond-tops-no-repo")  # git fails at once, whatever the checkout
QUICK = PreflightWarning(
    code="quick_profile",
    message="quick profile: shortened LoadGen run, NOT valid for an MLPerf submission; "
    "use `--profile submission` for a valid result",
)


def _fp(tree: str, gpus: tuple[dict[str, Any], ...] = ()) -> Fingerprint:
    root = SYSROOTS / tree
    return collect_fingerprint(root=root, environ={}, gpus=gpus, repo_dir=NO_REPO)


def test_vm_has_nothing_to_warn_about_in_the_submission_profile() -> None:
    assert preflight(_fp("vm-2core"), root=SYSROOTS / "vm-2core", profile="submission") == []


def test_quick_profile_is_labelled() -> None:
    assert preflight(_fp("vm-2core"), root=SYSROOTS / "vm-2core") == [QUICK]


def test_dual_socket_governor_and_turbo() -> None:
    root = SYSROOTS / "dual-socket"
    assert preflight(_fp("dual-socket"), root=root, profile="submission") == [
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


def test_container_cgroup_quota_and_swap() -> None:
    root = SYSROOTS / "cgroup-container"
    assert preflight(_fp("cgroup-container"), root=root, profile="submission") == [
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


def test_high_load_is_relative_to_usable_cpus() -> None:
    fp = _fp("vm-2core")
    assert preflight(fp, root=SYSROOTS / "high-load", profile="submission") == [
        PreflightWarning(
            code="load",
            message="load average is 3.50, above 1 (0.5 x 2 usable CPUs): other work is "
            "running; stop it or wait for it before benchmarking",
        )
    ]
    assert (
        preflight(fp, root=SYSROOTS / "high-load", profile="submission", load_threshold=2.0) == []
    )
    # The same load is no problem for the 60 usable CPUs of the dual-socket server.
    dual = [w.code for w in preflight(_fp("dual-socket"), root=SYSROOTS / "high-load")]
    assert "load" not in dual


def test_unreadable_loadavg_is_a_warning(tmp_path: Path) -> None:
    warnings = preflight(_fp("vm-2core"), root=tmp_path, profile="submission")
    assert warnings == [
        PreflightWarning(
            code="load",
            message="cannot read /proc/loadavg: whether other work is running is unknown",
        )
    ]


GPU_OK = {
    "index": 0,
    "name": "NVIDIA H200",
    "processes": [],
    "throttle_reasons_active": [],
    "persistence_mode": True,
}


def test_healthy_gpu_adds_nothing() -> None:
    fp = _fp("vm-2core", gpus=(GPU_OK,))
    assert preflight(fp, root=SYSROOTS / "vm-2core", profile="submission") == []


def test_gpu_persistence_processes_and_throttling() -> None:
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
    assert preflight(fp, root=SYSROOTS / "vm-2core", profile="submission") == [
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


def test_amd_throttling_points_to_amd_smi() -> None:
    mi300x = {**GPU_OK, "vendor": "amd", "name": "AMD Instinct MI300X"}
    fp = _fp("vm-2core", gpus=({**mi300x, "throttle_reasons_active": ["ppt"]},))
    assert preflight(fp, root=SYSROOTS / "vm-2core", profile="submission") == [
        PreflightWarning(
            code="gpu_throttling",
            message="GPU 0 (AMD Instinct MI300X) is already throttling (ppt): let it cool down "
            "and check its power cap and clocks (`amd-smi metric --throttle`)",
        )
    ]


def test_idle_is_not_throttling() -> None:
    idle = {**GPU_OK, "throttle_reasons_active": ["gpu_idle"]}
    fp = _fp("vm-2core", gpus=(idle,))
    assert preflight(fp, root=SYSROOTS / "vm-2core", profile="submission") == []


def test_gpu_without_the_keys_is_not_judged() -> None:
    amd = {"name": "AMD Instinct MI300X", "persistence_mode": None, "throttle_reasons_active": None}
    fp = _fp("vm-2core", gpus=(amd,))
    assert preflight(fp, root=SYSROOTS / "vm-2core", profile="submission") == []


def test_warning_forms() -> None:
    assert str(QUICK) == QUICK.message
    assert QUICK.to_dict() == {"code": "quick_profile", "message": QUICK.message}


def test_strict_turns_warnings_into_one_error() -> None:
    enforce_strict([])
    with pytest.raises(PreflightError) as caught:
        enforce_strict(preflight(_fp("dual-socket"), root=SYSROOTS / "dual-socket"))
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
    found = preflight(_fp("vm-2core", gpus=(gpu,)), root=root, profile="submission")
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
    enforce_strict(preflight(_fp("vm-2core"), root=root, profile="submission"))
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
