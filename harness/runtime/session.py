"""Build an onnxruntime session from the config, refuse silent CPU fallback, record what runs."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from harness.config import RuntimeConfig
from harness.errors import ConfigError, DeviceError, ModelError
from harness.packages import onnxruntime_builds
from harness.runtime.targets import (
    HardwareTarget,
    ProviderSpec,
    resolve_options,
    selected_providers,
)

CPU_EP = "CPUExecutionProvider"
TRT_EP = "TensorrtExecutionProvider"
CUDA_EP = "CUDAExecutionProvider"
Chain = tuple[tuple[str, dict[str, str]], ...]
_TRUE = frozenset({"1", "true", "True", "TRUE"})
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
        request: SessionRequest,
        chain: Chain,
        inputs: Sequence[TensorSpec],
        settings: Mapping[str, Any],
    ) -> None:
        self.ort_session = session
        self.request = request
        self.target = request.target
        self.chain = chain
        self.inputs = tuple(inputs)
        self.outputs = tuple(_spec(o) for o in session.get_outputs())
        self.output_names = [o.name for o in self.outputs]
        self.providers = tuple(session.get_providers())
        self.settings = dict(settings)
        # CUDA graphs replay recorded device addresses: executors must bind fixed buffers.
        self.cuda_graphs = bool(settings.get("cuda_graphs"))

    def run(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """One inference on host arrays; returns the outputs in model order."""
        return self.ort_session.run(self.output_names, feeds)  # type: ignore[no-any-return]


def create_session(request: SessionRequest) -> Session:
    """Create a session on the target's provider chain and verify it really runs there."""
    target, runtime = request.target, request.runtime
    # onnxruntime's own usage telemetry is background work a benchmark does not want.
    ort.disable_telemetry_events()
    specs = selected_providers(target, runtime.providers)
    _check_overrides(target, specs, runtime)
    _check_available(target, specs)
    chain = _provider_chain(request, specs)
    cuda_graphs = _check_cuda_graphs(specs, chain, runtime)
    _make_directories(specs, chain)
    options = _session_options(runtime, request.dims, ban_cpu=_bans_cpu(request))
    session = _create(request.model_path, options, chain, target)
    used = list(session.get_providers())
    _check_used(target, specs, used)
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
        "cuda_graphs": cuda_graphs,
        "node_placement": placement,
    }
    return Session(session, request, chain, inputs, settings)


def create_helper_session(main: Session, model: bytes) -> Any:
    """A small session beside `main` (the device gather): same options, same device, no CPU.

    TensorRT is left out when CUDA follows it: a one-node helper gains nothing from an engine
    build, which would cost seconds at every sample load. CUDA graphs are left out too: the
    helper's own launches are few and its capture would only add memory.
    """
    request = main.request
    chain = [
        (name, {k: v for k, v in options.items() if k not in _graph_options(main.target)})
        for name, options in main.chain
        if not (name == TRT_EP and CUDA_EP in dict(main.chain))
    ]
    options = _session_options(request.runtime, {}, ban_cpu=_bans_cpu(request))
    return _create_from(model, options, chain, main.target, where="device gather")


def _check_overrides(
    target: HardwareTarget, specs: Sequence[ProviderSpec], runtime: RuntimeConfig
) -> None:
    names = [spec.name for spec in specs]
    unknown = sorted(set(runtime.provider_options) - set(names))
    if unknown:
        raise ConfigError(
            f"runtime.provider_options.{unknown[0]}: HW={target.name} does not use this provider "
            f"here (it uses: {', '.join(names)})"
        )


def _check_available(target: HardwareTarget, specs: Sequence[ProviderSpec]) -> None:
    available = ort.get_available_providers()
    for name in (spec.name for spec in specs):
        if name not in available:
            installed = ", ".join(onnxruntime_builds()) or "no onnxruntime"
            raise DeviceError(
                f"HW={target.name}: {name} is not available in this onnxruntime (installed: "
                f"{installed}; providers: {', '.join(available)}); fix: {target.install_hint}"
            )


def _provider_chain(request: SessionRequest, specs: Sequence[ProviderSpec]) -> Chain:
    overrides = {
        provider: {k: str(v) for k, v in values.items()}
        for provider, values in request.runtime.provider_options.items()
    }
    cache = str(request.cache_dir)
    chain = [(p.name, resolve_options(p, overrides, cache)) for p in specs]
    if request.target.is_gpu and request.runtime.allow_cpu_fallback:
        chain.append((CPU_EP, {}))
    return tuple(chain)


def _bans_cpu(request: SessionRequest) -> bool:
    return request.target.is_gpu and not request.runtime.allow_cpu_fallback


def _make_directories(specs: Sequence[ProviderSpec], chain: Chain) -> None:
    """Create the cache directories providers write into but do not create themselves."""
    options = dict(chain)
    for spec in specs:
        for key in spec.directory_options:
            value = options[spec.name].get(key)
            if not value:
                continue
            try:
                Path(value).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(
                    f"runtime.provider_options.{spec.name}.{key}: cannot create {value} "
                    f"({exc.strerror}); point it at a writable directory"
                ) from None


def _graph_options(target: HardwareTarget) -> set[str]:
    return {key for spec in target.providers for key in spec.cuda_graph_options}


def _check_cuda_graphs(specs: Sequence[ProviderSpec], chain: Chain, runtime: RuntimeConfig) -> bool:
    """CUDA graphs replay fixed kernels on fixed addresses: refuse them where that cannot hold.

    onnxruntime captures a graph only when one provider holds every node. The executors
    keep the other condition, fixed input and output buffers, when `Session.cuda_graphs`.
    """
    options = dict(chain)
    names = [spec.name for spec in specs]
    enabled = [
        (spec.name, key)
        for spec in specs
        for key in spec.cuda_graph_options
        if options[spec.name].get(key) in _TRUE
    ]
    for name, key in enabled:
        where = f"runtime.provider_options.{name}.{key}"
        if runtime.allow_cpu_fallback:
            raise ConfigError(
                f"{where}: CUDA graphs need every node on {name}, but "
                "runtime.allow_cpu_fallback: true lets nodes run on the CPU; turn one off"
            )
        if names != [name]:
            raise ConfigError(
                f"{where}: CUDA graphs need every node on {name}, but the chain is "
                f"{' then '.join(names)}, so nodes may land elsewhere; set "
                f"runtime.providers: [{name}]"
            )
    return bool(enabled)


def _session_options(
    runtime: RuntimeConfig, dims: Mapping[str, int], *, ban_cpu: bool
) -> ort.SessionOptions:
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
    if ban_cpu:
        # Nodes the accelerator cannot take must fail the session, not move to the CPU. This,
        # not get_providers() (which always ends with the CPU provider), is the placement check.
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    options.log_severity_level = 3
    return options


def _create(
    model_path: Path, options: ort.SessionOptions, chain: Chain, target: HardwareTarget
) -> Any:
    return _create_from(str(model_path), options, chain, target, where=str(model_path))


def _create_from(
    model: str | bytes,
    options: ort.SessionOptions,
    chain: Sequence[tuple[str, dict[str, str]]],
    target: HardwareTarget,
    *,
    where: str,
) -> Any:
    try:
        # enable_fallback=0: onnxruntime's Python layer would otherwise retry on the CPU when a
        # provider fails at session creation, with nothing but a print to show for it.
        return ort.InferenceSession(
            model, sess_options=options, providers=list(chain), enable_fallback=0
        )
    except Exception as exc:  # onnxruntime raises untyped errors; map them once, here
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        if target.is_gpu:
            raise DeviceError(_gpu_creation_message(target, first)) from None
        raise ModelError(f"{where}: onnxruntime cannot load it: {first}") from None


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


def _check_used(target: HardwareTarget, specs: Sequence[ProviderSpec], used: list[str]) -> None:
    """Every requested provider must have loaded.

    onnxruntime appends the CPU provider to every session and lists it, so its presence says
    nothing about placement; `session.disable_cpu_ep_fallback` (or the recorded placement
    when fallback is allowed) is what judges where nodes run.
    """
    asked = [spec.name for spec in specs]
    missing = [name for name in asked if name not in used]
    if missing:
        raise DeviceError(
            f"HW={target.name}: asked for {asked} but onnxruntime uses {used}; "
            f"{missing[0]} did not load; fix: {target.install_hint}"
        )


def _placement(request: SessionRequest, chain: Chain) -> dict[str, int]:
    """Count graph nodes per provider from one profiled inference in a probe session."""
    with tempfile.TemporaryDirectory() as tmp:
        options = _session_options(request.runtime, request.dims, ban_cpu=False)
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(tmp) / "placement")
        probe = ort.InferenceSession(
            str(request.model_path), sess_options=options, providers=list(chain), enable_fallback=0
        )
        specs = [_resolve(i) for i in probe.get_inputs()]
        feeds = {spec.name: np.zeros(spec.shape, dtype=spec.dtype) for spec in specs}
        probe.run(None, feeds)
        profile = Path(probe.end_profiling())
        return node_placement(json.loads(profile.read_text()))


def placement_warnings(session: Session) -> list[str]:
    """A warning for a result whose nodes partly ran on the CPU (fallback allowed)."""
    placement: dict[str, int] = session.settings["node_placement"]
    on_cpu = placement.get(CPU_EP, 0)
    if not on_cpu:
        return []
    total = sum(placement.values())
    return [
        f"partial CPU placement: {on_cpu} of {total} nodes ran on {CPU_EP} "
        "(allow_cpu_fallback: true); this is not a pure accelerator result"
    ]


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
