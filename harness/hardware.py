"""Hardware targets as data, the one table every layer reads: image, devices, build, providers.

Pure data, no imports of onnxruntime, Docker or vendor libraries: harness.execution.images and
harness.execution.containers (images, Docker devices), harness.telemetry (power sources) and
harness.runtime (onnxruntime build, provider chain) all read their part of a target here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from harness.errors import DeviceError

IMAGE_REPO = "beyond-tops"
# How a container reaches the target's accelerator (execution.containers_devices.device_kwargs):
# "nvidia-gpus": `--gpus all`, or the CDI device nvidia.com/gpu=all where the daemon has CDI;
# "amd-kfd": /dev/kfd and /dev/dri, with the groups that may open them.
DockerDevices = Literal["none", "nvidia-gpus", "amd-kfd"]
# Power and GPU-fact sources (harness.telemetry.discover): RAPL (the host's CPU packages and
# DRAM), NVML, amdsmi.
TelemetrySource = Literal["rapl", "nvml", "amdsmi"]


@dataclass(frozen=True, kw_only=True)
class ProviderSpec:
    """One execution provider and the options that matter for benchmarking."""

    name: str
    options: Mapping[str, str] = field(default_factory=dict)
    # Options whose values are directories the provider writes into but does not create
    # (TensorRT makes one level at most and fails construction when the parent is missing).
    directory_options: tuple[str, ...] = ()
    # Options that switch CUDA graphs on: capture needs the conditions in session.py.
    cuda_graph_options: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class HardwareTarget:
    """A hardware target: its image, onnxruntime build, providers, devices and telemetry."""

    name: str
    image: str  # the image repository; harness.execution.images adds the tag
    ort_package: str  # the onnxruntime distribution (pip name) that has the providers
    providers: tuple[ProviderSpec, ...]
    device_type: str
    telemetry: tuple[TelemetrySource, ...]  # tried in this order
    install_hint: str
    docker_devices: DockerDevices = "none"

    @property
    def is_gpu(self) -> bool:
        """Whether the target measures an accelerator (so the CPU must never stand in)."""
        return self.device_type != "cpu"

    @property
    def provider_names(self) -> tuple[str, ...]:
        """The provider chain, most preferred first."""
        return tuple(p.name for p in self.providers)


# `{cache}` in an option is replaced by the run's engine cache directory.
TARGETS: dict[str, HardwareTarget] = {
    "cpu": HardwareTarget(
        name="cpu",
        image=f"{IMAGE_REPO}/cpu",
        ort_package="onnxruntime",
        providers=(ProviderSpec(name="CPUExecutionProvider"),),
        device_type="cpu",
        telemetry=("rapl",),
        install_hint="pip install onnxruntime",
    ),
    "nvidia": HardwareTarget(
        name="nvidia",
        image=f"{IMAGE_REPO}/nvidia",
        ort_package="onnxruntime-gpu",
        providers=(
            ProviderSpec(
                name="TensorrtExecutionProvider",
                options={
                    "device_id": "0",
                    "trt_fp16_enable": "False",
                    "trt_int8_enable": "False",
                    "trt_max_workspace_size": str(4 << 30),
                    "trt_engine_cache_enable": "True",
                    "trt_engine_cache_path": "{cache}/tensorrt/engines",
                    "trt_timing_cache_enable": "True",
                    "trt_timing_cache_path": "{cache}/tensorrt/timing",
                },
                directory_options=("trt_engine_cache_path", "trt_timing_cache_path"),
                cuda_graph_options=("trt_cuda_graph_enable",),
            ),
            ProviderSpec(
                name="CUDAExecutionProvider",
                options={
                    "device_id": "0",
                    "cudnn_conv_algo_search": "EXHAUSTIVE",
                    "enable_cuda_graph": "0",
                },
                cuda_graph_options=("enable_cuda_graph",),
            ),
        ),
        device_type="cuda",
        telemetry=("rapl", "nvml"),
        install_hint="pip install onnxruntime-gpu (not onnxruntime), or run in the nvidia image",
        docker_devices="nvidia-gpus",
    ),
    "rocm": HardwareTarget(
        name="rocm",
        image=f"{IMAGE_REPO}/rocm",
        # onnxruntime removed its ROCm execution provider in 1.23; MIGraphX is AMD's path.
        ort_package="onnxruntime-migraphx",
        providers=(
            ProviderSpec(
                name="MIGraphXExecutionProvider",
                options={
                    "device_id": "0",
                    "migraphx_fp16_enable": "0",
                    "migraphx_int8_enable": "0",
                    # Without it every session (reference, main, device gather) recompiles.
                    "migraphx_model_cache_dir": "{cache}/migraphx",
                },
                directory_options=("migraphx_model_cache_dir",),
            ),
        ),
        device_type="gpu",
        telemetry=("rapl", "amdsmi"),
        install_hint="pip install onnxruntime-migraphx, or run in the rocm image",
        docker_devices="amd-kfd",
    ),
}
HW_NAMES: tuple[str, ...] = tuple(TARGETS)
# Every distribution that installs the `onnxruntime` module: the targets' builds, and one no
# target uses but that a machine may have (two installed at once overwrite each other's files).
ONNXRUNTIME_BUILDS: tuple[str, ...] = (
    *dict.fromkeys(t.ort_package for t in TARGETS.values()),
    "onnxruntime-openvino",
)


def get_target(name: str) -> HardwareTarget:
    """Look a target up by name; unknown names are one-line errors."""
    if name in TARGETS:
        return TARGETS[name]
    raise DeviceError(f"HW={name}: unknown hardware target (known: {', '.join(TARGETS)})")
