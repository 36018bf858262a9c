"""fingerprint_id: stable between collections, sensitive only to comparability fields."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.errors import ResultError
from harness.fingerprint import collect_fingerprint
from harness.records.fingerprint import (
    Fingerprint,
    Missing,
    comparability_fields,
    compare_fingerprints,
    fingerprint_of,
)

SYSROOTS = Path(__file__).resolve().parents[2] / "fixtures" / "sysroots"
NO_REPO = Path("/nonexistent/beyond-tops-no-repo")  # git fails at once, whatever the checkout
# Keys as harness/telemetry's nvml_inventory() writes them.
GPU = {
    "index": 0,
    "vendor": "nvidia",
    "driver_version": "550.54.15",
    "cuda_driver_version": "12.4",
    "name": "NVIDIA H200",
    "uuid": "GPU-0c0ffee0",
    "pci_bus_id": "00000000:19:00.0",
    "memory_total_mib": 143771,
    "power_limit_w": 700.0,
    "clock_sm_max_mhz": 1980,
    "pcie_gen": 1,
    "pcie_gen_max": 5,
    "persistence_mode": True,
    "processes": [],
    "throttle_reasons_active": [],
}


def _collect(root: Path, **kwargs: Any) -> Fingerprint:
    kwargs.setdefault("environ", {})
    kwargs.setdefault("repo_dir", NO_REPO)
    return collect_fingerprint(root=root, **kwargs)


@pytest.fixture
def dual(tmp_path: Path) -> Path:
    root = tmp_path / "dual-socket"
    shutil.copytree(SYSROOTS / "dual-socket", root)
    return root


def test_top_level_layout() -> None:
    data = _collect(SYSROOTS / "vm-2core").to_dict()
    assert list(data) == [
        "fingerprint_version",
        "fingerprint_id",
        "complete",
        "missing",
        "cpu",
        "memory",
        "os",
        "container",
        "software",
        "env",
        "gpus",
        "harness",
    ]
    assert re.fullmatch(r"[0-9a-f]{16}", data["fingerprint_id"])
    assert data["complete"] is False
    assert {
        "field": "os.glibc",
        "reason": "only readable for the running system (root is not /)",
    } in (data["missing"])


def test_id_is_stable_across_collections() -> None:
    first = _collect(SYSROOTS / "dual-socket")
    second = _collect(SYSROOTS / "dual-socket")
    assert first.fingerprint_id == second.fingerprint_id
    assert first.to_dict() == second.to_dict()


def test_machine_shapes_have_different_ids() -> None:
    ids = {_collect(SYSROOTS / tree).fingerprint_id for tree in ("vm-2core", "dual-socket")}
    assert len(ids) == 2


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n"),
        ("sys/devices/system/cpu/intel_pstate/no_turbo", "1\n"),
        ("sys/devices/system/cpu/smt/active", "0\n"),
        ("proc/self/status", "Cpus_allowed_list:\t0-31\n"),
        ("proc/sys/kernel/osrelease", "6.8.0-45-generic\n"),
        ("sys/fs/cgroup/user.slice/cpu.max", "400000 100000\n"),
    ],
)
def test_id_changes_with_a_comparability_field(dual: Path, rel: str, text: str) -> None:
    before = _collect(dual).fingerprint_id
    (dual / rel).write_text(text)
    assert _collect(dual).fingerprint_id != before


@pytest.mark.parametrize(
    ("rel", "old", "new"),
    [
        ("proc/meminfo", "MemAvailable:   517384120", "MemAvailable:   1"),
        ("proc/meminfo", "SwapFree:        8388604", "SwapFree:        4"),
        ("proc/cpuinfo", "3600.000", "800.123"),
    ],
)
def test_id_ignores_volatile_fields(dual: Path, rel: str, old: str, new: str) -> None:
    before = _collect(dual)
    path = dual / rel
    path.write_text(path.read_text().replace(old, new))
    after = _collect(dual)
    assert after.to_dict() != before.to_dict()
    assert after.fingerprint_id == before.fingerprint_id


def test_id_ignores_env_harness_and_git_dirty() -> None:
    fp = _collect(SYSROOTS / "vm-2core")
    data = fp.to_dict()
    data["env"] = {"OMP_NUM_THREADS": "1"}
    data["harness"] = {"version": "0.1.0", "git_commit": "abc", "git_dirty": True}
    rebuilt = fingerprint_of(data, fp.missing)
    assert rebuilt.fingerprint_id == fp.fingerprint_id


def test_gpu_identity_counts_but_live_readings_do_not() -> None:
    root = SYSROOTS / "vm-2core"
    base = _collect(root, gpus=[GPU]).fingerprint_id
    other_card = {**GPU, "index": 1, "uuid": "GPU-beef", "pci_bus_id": "00000000:2a:00.0"}
    assert _collect(root, gpus=[other_card]).fingerprint_id == base
    live = {**GPU, "pcie_gen": 4, "persistence_mode": False, "processes": [{"pid": 9}]}
    assert _collect(root, gpus=[live]).fingerprint_id == base
    assert _collect(root, gpus=[{**GPU, "power_limit_w": 500.0}]).fingerprint_id != base
    assert _collect(root, gpus=[{**GPU, "driver_version": "560.1"}]).fingerprint_id != base
    assert _collect(root, gpus=[{**GPU, "clock_sm_max_mhz": 1500}]).fingerprint_id != base
    assert _collect(root).fingerprint_id != base


def test_image_id_counts() -> None:
    root = SYSROOTS / "cgroup-container"
    a = _collect(root, environ={"BEYOND_TOPS_IMAGE_ID": "sha256:aa"})
    b = _collect(root, environ={"BEYOND_TOPS_IMAGE_ID": "sha256:bb"})
    assert a.fingerprint_id != b.fingerprint_id
    assert compare_fingerprints(a, b) == ["container.image_id: 'sha256:aa' != 'sha256:bb'"]


def test_gpus_and_gpu_missing_pass_through() -> None:
    fp = _collect(
        SYSROOTS / "vm-2core",
        gpus=[{**GPU, "clocks": (1, 2)}],
        gpu_missing=[
            ("gpu0.power_limit_w", "NVML: not supported on this GPU"),
            ("nvml", "libnvidia-ml.so.1 not found"),
        ],
    )
    assert fp.to_dict()["gpus"][0]["clocks"] == [1, 2]
    assert fp.missing[-2:] == [
        Missing(field="gpu0.power_limit_w", reason="NVML: not supported on this GPU"),
        Missing(field="gpus.nvml", reason="libnvidia-ml.so.1 not found"),
    ]


def test_comparability_fields_of_the_container() -> None:
    fields = comparability_fields(
        _collect(SYSROOTS / "cgroup-container", environ={"BEYOND_TOPS_IMAGE_ID": "sha256:aa"}).data
    )
    assert fields["cpu"] == {
        "model": "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz",
        "vendor": "GenuineIntel",
        "sockets": 1,
        "cores": 4,
        "threads": 8,
        "usable_cpus": 2,
        "isa": ["avx2", "avx512f", "avx512_vnni"],
        "governor": "performance",
        "turbo": False,
        "smt_active": True,
    }
    assert (fields["memory"], fields["os"], fields["container"], fields["gpus"]) == (
        {"total_bytes": 16694693888},
        {"kernel": "6.8.0-45-generic"},
        {"image_id": "sha256:aa"},
        [],
    )


def test_compare_lists_each_differing_field(dual: Path) -> None:
    before = _collect(dual)
    (dual / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").write_text("performance\n")
    (dual / "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor").write_text("performance\n")
    assert compare_fingerprints(before, _collect(dual)) == [
        "cpu.governor: 'powersave' != 'performance'"
    ]
    assert compare_fingerprints(before, before) == []


def test_from_dict_round_trip_and_refusal() -> None:
    fp = _collect(SYSROOTS / "vm-2core")
    loaded = Fingerprint.from_dict(json.loads(json.dumps(fp.to_dict())))
    assert loaded == fp
    assert (loaded.fingerprint_id, loaded.complete) == (fp.fingerprint_id, False)
    with pytest.raises(ResultError, match="fingerprint_id, complete, missing absent or malformed"):
        Fingerprint.from_dict({"cpu": {}})


def test_to_dict_is_a_copy() -> None:
    fp = _collect(SYSROOTS / "vm-2core")
    fp.to_dict()["cpu"]["model"] = "changed"
    assert fp.data["cpu"]["model"] == "AMD EPYC"


def test_real_root_is_json_serialisable() -> None:
    fp = collect_fingerprint()
    text = json.dumps(fp.to_dict())
    data = json.loads(text)
    assert data["fingerprint_id"] == fp.fingerprint_id
    assert data["cpu"]["usable_cpus"] >= 1
    assert data["software"]["packages"]["onnxruntime"] is not None
    assert all(set(m) == {"field", "reason"} for m in data["missing"])
    assert data["complete"] is (not data["missing"])
