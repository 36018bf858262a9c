"""Build an onnxruntime session from the config, refuse silent CPU fallback, record what runs."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from harness.config import RuntimeConfig
from harness.errors import ConfigError, DeviceError, ModelError
from harness.runtime.targets import HardwareTarget, resolve_options

CPU_EP = "CPUExecutionProvider"
_OPT_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
_MODES = {
    "sequential": ort.ExecutionMode.ORT_SEQUENTIAL,
    "parallel": ort.ExecutionMode.ORT_PARALLEL,
}
DTYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


@dataclass(frozen=True, kw_only=True)
class TensorSpec:
    """A model input with its element type and fully resolved shape (batch first)."""

    name: str
    dtype: np.dtype[Any]
    shape: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class OutputSpec:
    """A model output; dimensions onnxruntime could not infer stay symbolic."""

    name: str
    dtype: np.dtype[Any]
    shape: tuple[int | str | None, ...]


@dataclass(frozen=True, kw_only=True)
class SessionRequest:
    """Everything needed to build a session."""

    model_path: Path
    runtime: RuntimeConfig
    target: HardwareTarget
    dims: Mapping[str, int]
    cache_dir: Path


class Session:
    """An onnxruntime session with resolved input specs; `run` is the host-memory hot path."""

    def __init__(
        self,
        session: Any,
        target: HardwareTarget,
        inputs: Sequence[TensorSpec],
        settings: Mapping[str, Any],
    ) -> None:
        self.ort_session = session
        self.target = target
        self.inputs = tuple(inputs)
        self.outputs = tuple(_spec(o) for o in session.get_outputs())
        self.output_names = [o.name for o in self.outputs]
        self.providers = tuple(session.get_providers())
        self.settings = dict(settings)

    def run(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """One inference on host arrays; returns the outputs in model order."""
        return self.ort_session.run(self.output_names, feeds)  # type: ignore[no-any-return]


def create_session(request: SessionRequest) -> Session:
    """Create a session on the target's provider chain and verify it really runs there."""
    target, runtime = request.target, request.runtime
    # onnxruntime's own usage telemetry is background work a benchmark does not want.
    ort.disable_telemetry_events()
    _check_overrides(target, runtime)
    _check_available(target)
    chain = _provider_chain(request)
    options = _session_options(runtime, request.dims)
    if target.is_gpu and not runtime.allow_cpu_fallback:
        # Nodes the accelerator cannot take must fail the session, not move to the CPU.
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    session = _create(request.model_path, options, chain, target)
    used = list(session.get_providers())
    _check_used(target, runtime, used)
    placement = _placement(request, chain) if target.is_gpu and runtime.allow_cpu_fallback else {}
    inputs = [_resolve(i) for i in session.get_inputs()]
    settings = {
        "graph_optimization_level": runtime.graph_optimization_level,
        "intra_op_threads": runtime.intra_op_threads,
        "inter_op_threads": runtime.inter_op_threads,
        "execution_mode": runtime.execution_mode,
        "allow_spinning": runtime.allow_spinning,
        "free_dimension_overrides": dict(request.dims),
        "provider_options": dict(session.get_provider_options()),
        "requested_providers": [name for name, _ in chain],
        "cpu_fallback_allowed": runtime.allow_cpu_fallback,
        "node_placement": placement,
    }
    return Session(session, target, inputs, settings)


def onnxruntime_version() -> str:
    """The installed onnxruntime version."""
    return str(ort.__version__)


def onnxruntime_distributions() -> list[str]:
    """Which onnxruntime distributions are installed (onnxruntime, onnxruntime-gpu, …)."""
    names = ("onnxruntime", "onnxruntime-gpu", "onnxruntime-migraphx", "onnxruntime-openvino")
    found = []
    for name in names:
        try:
            found.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return found


def _check_overrides(target: HardwareTarget, runtime: RuntimeConfig) -> None:
    unknown = sorted(set(runtime.provider_options) - set(target.provider_names))
    if unknown:
        raise ConfigError(
            f"runtime.provider_options.{unknown[0]}: HW={target.name} does not use this provider "
            f"(it uses: {', '.join(target.provider_names)})"
        )


def _check_available(target: HardwareTarget) -> None:
    available = ort.get_available_providers()
    for name in target.provider_names:
        if name not in available:
            installed = ", ".join(onnxruntime_distributions()) or "no onnxruntime"
            raise DeviceError(
                f"HW={target.name}: {name} is not available in this onnxruntime (installed: "
                f"{installed}; providers: {', '.join(available)}); fix: {target.install_hint}"
            )


def _provider_chain(request: SessionRequest) -> list[tuple[str, dict[str, str]]]:
    overrides = {
        provider: {k: str(v) for k, v in values.items()}
        for provider, values in request.runtime.provider_options.items()
    }
    cache = str(request.cache_dir)
    chain = [(p.name, resolve_options(p, overrides, cache)) for p in request.target.providers]
    if request.target.is_gpu and request.runtime.allow_cpu_fallback:
        chain.append((CPU_EP, {}))
    return chain


def _session_options(runtime: RuntimeConfig, dims: Mapping[str, int]) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.graph_optimization_level = _OPT_LEVELS[runtime.graph_optimization_level]
    options.execution_mode = _MODES[runtime.execution_mode]
    options.intra_op_num_threads = runtime.intra_op_threads
    options.inter_op_num_threads = runtime.inter_op_threads
    options.add_session_config_entry(
        "session.intra_op.allow_spinning", "1" if runtime.allow_spinning else "0"
    )
    for name, value in dims.items():
        options.add_free_dimension_override_by_name(name, value)
    options.log_severity_level = 3
    return options


def _create(
    model_path: Path,
    options: ort.SessionOptions,
    chain: list[tuple[str, dict[str, str]]],
    target: HardwareTarget,
) -> Any:
    try:
        # enable_fallback=0: onnxruntime's Python layer would otherwise retry on the CPU when a
        # provider fails at session creation, with nothing but a print to show for it.
        return ort.InferenceSession(
            str(model_path), sess_options=options, providers=chain, enable_fallback=0
        )
    except Exception as exc:  # onnxruntime raises untyped errors; map them once, here
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        if target.is_gpu:
            raise DeviceError(_gpu_creation_message(target, first)) from None
        raise ModelError(f"{model_path}: onnxruntime cannot load it: {first}") from None


def _gpu_creation_message(target: HardwareTarget, first: str) -> str:
    chain = " then ".join(target.provider_names)
    if (
        "fallback to CPU EP has been explicitly disabled" in first
        or "assigned to the default CPU" in first
    ):
        return (
            f"HW={target.name}: some nodes of this model cannot run on {chain} and would run on "
            f"the CPU; set runtime.allow_cpu_fallback: true to accept (the placement is recorded "
            f"and the result flagged) ({first})"
        )
    return (
        f"HW={target.name}: {chain} failed at session creation: {first}; likely cause: no "
        f"visible device (check nvidia-smi/rocm-smi, CUDA_VISIBLE_DEVICES, --gpus all) or a "
        f"driver/CUDA mismatch with {target.ort_package}"
    )


def _check_used(target: HardwareTarget, runtime: RuntimeConfig, used: list[str]) -> None:
    missing = [name for name in target.provider_names if name not in used]
    if missing:
        raise DeviceError(
            f"HW={target.name}: asked for {list(target.provider_names)} but onnxruntime uses "
            f"{used}; {missing[0]} did not load; fix: {target.install_hint}"
        )
    if target.is_gpu and CPU_EP in used and not runtime.allow_cpu_fallback:
        raise DeviceError(
            f"HW={target.name}: onnxruntime added {CPU_EP} to the session; set "
            "runtime.allow_cpu_fallback: true to accept partial CPU placement"
        )


def _placement(request: SessionRequest, chain: list[tuple[str, dict[str, str]]]) -> dict[str, int]:
    """Count graph nodes per provider from one profiled inference in a probe session."""
    with tempfile.TemporaryDirectory() as tmp:
        options = _session_options(request.runtime, request.dims)
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(tmp) / "placement")
        probe = ort.InferenceSession(
            str(request.model_path), sess_options=options, providers=chain, enable_fallback=0
        )
        specs = [_resolve(i) for i in probe.get_inputs()]
        feeds = {spec.name: np.zeros(spec.shape, dtype=spec.dtype) for spec in specs}
        probe.run(None, feeds)
        profile = Path(probe.end_profiling())
        return node_placement(json.loads(profile.read_text()))


def node_placement(events: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Nodes per execution provider, from onnxruntime profiling events."""
    seen: dict[str, str] = {}
    for event in events:
        args = event.get("args") or {}
        if event.get("cat") == "Node" and "provider" in args:
            seen[str(args.get("node_index", event.get("name")))] = str(args["provider"])
    return dict(Counter(seen.values()))


def _spec(node: Any) -> OutputSpec:
    dtype = np.dtype(DTYPES.get(node.type, np.float32))
    return OutputSpec(name=node.name, dtype=dtype, shape=tuple(node.shape))


def _resolve(node: Any) -> TensorSpec:
    shape = tuple(node.shape)
    if not all(isinstance(d, int) and d > 0 for d in shape):
        raise ModelError(
            f"input '{node.name}' still has unresolved dimensions {list(shape)}; "
            "name them in model.dims"
        )
    if node.type not in DTYPES:
        raise ModelError(f"input '{node.name}' has unsupported type {node.type}")
    return TensorSpec(name=node.name, dtype=np.dtype(DTYPES[node.type]), shape=shape)
