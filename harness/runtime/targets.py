"""Hardware targets as data: image, onnxruntime package, provider chain and options, telemetry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.errors import ConfigError, DeviceError


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
    """A hardware target: where it runs, with which onnxruntime build and providers."""

    name: str
    image: str
    ort_package: str
    providers: tuple[ProviderSpec, ...]
    device_type: str
    telemetry: str
    install_hint: str

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
        image="beyond-tops/cpu",
        ort_package="onnxruntime",
        providers=(ProviderSpec(name="CPUExecutionProvider"),),
        device_type="cpu",
        telemetry="rapl",
        install_hint="pip install onnxruntime",
    ),
    "nvidia": HardwareTarget(
        name="nvidia",
        image="beyond-tops/nvidia",
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
        telemetry="nvml",
        install_hint="pip install onnxruntime-gpu (not onnxruntime), or run in the nvidia image",
    ),
    "rocm": HardwareTarget(
        name="rocm",
        image="beyond-tops/rocm",
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
        telemetry="amdsmi",
        install_hint="pip install onnxruntime-migraphx, or run in the rocm image",
    ),
}


def get_target(name: str) -> HardwareTarget:
    """Look a target up by name; unknown names are one-line errors."""
    if name in TARGETS:
        return TARGETS[name]
    raise DeviceError(f"HW={name}: unknown hardware target (known: {', '.join(TARGETS)})")


def resolve_options(
    spec: ProviderSpec, overrides: Mapping[str, Mapping[str, str]], cache_dir: str
) -> dict[str, str]:
    """Target defaults, then the scenario's overrides, with the cache path filled in."""
    merged = {**spec.options, **overrides.get(spec.name, {})}
    return {key: value.replace("{cache}", cache_dir) for key, value in merged.items()}


def selected_providers(target: HardwareTarget, names: Sequence[str]) -> tuple[ProviderSpec, ...]:
    """The target's chain, or the part of it that `runtime.providers` names, in chain order."""
    if not names:
        return target.providers
    unknown = [name for name in names if name not in target.provider_names]
    if unknown:
        raise ConfigError(
            f"runtime.providers: {unknown[0]} is not in HW={target.name}'s chain "
            f"(allowed: {', '.join(target.provider_names)})"
        )
    order = [name for name in target.provider_names if name in names]
    if list(names) != order:
        raise ConfigError(
            f"runtime.providers: {list(names)} must keep HW={target.name}'s order (use {order})"
        )
    return tuple(spec for spec in target.providers if spec.name in names)
