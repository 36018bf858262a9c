"""harness.hardware: the one table of targets, and every layer reading its part of it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pytest_mock import MockerFixture

from harness.analysis.peaks import resolve_peak
from harness.errors import ConfigError, DeviceError
from harness.execution import containers_devices, images
from harness.hardware import HW_NAMES, IMAGE_REPO, ONNXRUNTIME_BUILDS, TARGETS, get_target
from harness.runtime import targets as runtime_targets
from harness.telemetry.discover import discover_sources

REPO = Path(__file__).resolve().parents[2]


def test_each_target_has_its_image_directory_and_repository() -> None:
    for name, target in TARGETS.items():
        assert target.name == name
        assert target.image == f"{IMAGE_REPO}/{name}"
        assert (REPO / "docker" / name / "Dockerfile").is_file()


def test_each_build_installs_the_onnxruntime_module_once() -> None:
    assert len(set(ONNXRUNTIME_BUILDS)) == len(ONNXRUNTIME_BUILDS)
    assert {t.ort_package for t in TARGETS.values()} <= set(ONNXRUNTIME_BUILDS)


def test_rapl_first_then_one_vendor_source_per_accelerator() -> None:
    for target in TARGETS.values():
        assert target.telemetry[0] == "rapl"
        assert len(target.telemetry) == (2 if target.is_gpu else 1)
        assert (target.docker_devices != "none") == target.is_gpu


def test_the_runtime_reads_the_same_table() -> None:
    assert runtime_targets.TARGETS is TARGETS
    assert runtime_targets.get_target is get_target


def test_unknown_target() -> None:
    with pytest.raises(DeviceError, match=r"HW=tpu: unknown hardware target \(known: cpu, "):
        get_target("tpu")


def test_images_and_telemetry_accept_exactly_the_targets() -> None:
    for name in HW_NAMES:
        images.check_hw(name)
    with pytest.raises(DeviceError, match=r"images: cpu, nvidia, rocm\)"):
        images.check_hw("tpu")
    with pytest.raises(ConfigError, match=r"allowed: cpu, nvidia, rocm\)"):
        discover_sources(hw="tpu")


def test_image_tags_use_the_targets_repository(mocker: MockerFixture) -> None:
    mocker.patch.object(images, "git_commit", return_value="c" * 40)
    for name, target in TARGETS.items():
        assert images.default_tag(name, repo=REPO).startswith(f"{target.image}:")
    with pytest.raises(DeviceError, match=r"HW=tpu: no image"):
        images.default_tag("tpu", repo=REPO)


def test_docker_devices_follow_the_table(mocker: MockerFixture) -> None:
    assert containers_devices.device_kwargs("cpu") == {}
    (request,) = containers_devices.device_kwargs("nvidia")["device_requests"]
    assert request["Capabilities"] == [["gpu"]]
    mocker.patch.object(containers_devices.os.path, "exists", return_value=True)
    mocker.patch.object(containers_devices, "rocm_groups", return_value=["44"])
    rocm: dict[str, Any] = containers_devices.device_kwargs("rocm")
    assert rocm == {
        "devices": ["/dev/kfd:/dev/kfd:rwm", "/dev/dri:/dev/dri:rwm"],
        "group_add": ["44"],
    }


def test_peaks_know_gpu_targets_from_the_table() -> None:
    fingerprint = {"gpus": [{"name": "NVIDIA H100 80GB HBM3"}]}
    for name, target in TARGETS.items():
        peak = resolve_peak(hw=name, precision="fp16", fingerprint=fingerprint)
        assert (peak is not None) == target.is_gpu, name
    assert resolve_peak(hw="tpu", precision="fp16", fingerprint=fingerprint) is None


def test_the_table_and_its_readers_import_no_onnxruntime() -> None:
    code = (
        "import sys, harness.hardware, harness.execution.images, harness.telemetry.discover, "
        "harness.packages; print('onnxruntime' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
