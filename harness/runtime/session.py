"""Build an onnxruntime session from the config and read back what it really uses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from harness.config import RuntimeConfig
from harness.errors import DeviceError, ModelError
from harness.runtime.targets import HardwareTarget

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
_DTYPES = {
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
    """A model input with every dimension resolved."""

    name: str
    dtype: np.dtype[Any]
    shape: tuple[int, ...]


class Session:
    """An onnxruntime session with resolved input specs; `run` is the hot path."""

    def __init__(
        self,
        session: ort.InferenceSession,
        inputs: Sequence[TensorSpec],
        settings: Mapping[str, Any],
    ) -> None:
        self._session = session
        self.inputs = tuple(inputs)
        self.output_names = [o.name for o in session.get_outputs()]
        self.providers = tuple(session.get_providers())
        self.settings = dict(settings)

    def run(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """One inference; returns the outputs in model order."""
        return self._session.run(self.output_names, feeds)  # type: ignore[no-any-return]


def create_session(
    model_path: Path, *, runtime: RuntimeConfig, target: HardwareTarget, dims: Mapping[str, int]
) -> Session:
    """Create a session with every symbolic dimension fixed from `dims` (batch included)."""
    options = _session_options(runtime)
    for name, value in dims.items():
        options.add_free_dimension_override_by_name(name, value)
    _check_providers_available(target)
    try:
        session = ort.InferenceSession(
            str(model_path), sess_options=options, providers=list(target.providers)
        )
    except Exception as exc:  # onnxruntime raises its own untyped errors; map them once, here
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"{model_path}: onnxruntime cannot load it: {first}") from None
    inputs = [_resolve(i) for i in session.get_inputs()]
    used = session.get_providers()
    if list(used) != list(target.providers):
        raise DeviceError(
            f"{target.name}: asked for providers {list(target.providers)} but onnxruntime uses "
            f"{used}; install {target.ort_package}"
        )
    settings = {
        "graph_optimization_level": runtime.graph_optimization_level,
        "intra_op_threads": runtime.intra_op_threads,
        "inter_op_threads": runtime.inter_op_threads,
        "execution_mode": runtime.execution_mode,
        "allow_spinning": runtime.allow_spinning,
        "free_dimension_overrides": dict(dims),
        "provider_options": dict(session.get_provider_options()),
    }
    return Session(session, inputs, settings)


def onnxruntime_version() -> str:
    """The installed onnxruntime version."""
    return str(ort.__version__)


def _session_options(runtime: RuntimeConfig) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.graph_optimization_level = _OPT_LEVELS[runtime.graph_optimization_level]
    options.execution_mode = _MODES[runtime.execution_mode]
    options.intra_op_num_threads = runtime.intra_op_threads
    options.inter_op_num_threads = runtime.inter_op_threads
    options.add_session_config_entry(
        "session.intra_op.allow_spinning", "1" if runtime.allow_spinning else "0"
    )
    options.log_severity_level = 3
    return options


def _check_providers_available(target: HardwareTarget) -> None:
    available = ort.get_available_providers()
    missing = [p for p in target.providers if p not in available]
    if missing:
        raise DeviceError(
            f"{target.name}: execution provider {missing[0]} is not available in this "
            f"onnxruntime (has {available}); install {target.ort_package}"
        )


def _resolve(node: Any) -> TensorSpec:
    shape = tuple(node.shape)
    if not all(isinstance(d, int) and d > 0 for d in shape):
        raise ModelError(
            f"input '{node.name}' still has unresolved dimensions {list(shape)}; "
            "name them in model.dims"
        )
    if node.type not in _DTYPES:
        raise ModelError(f"input '{node.name}' has unsupported type {node.type}")
    return TensorSpec(name=node.name, dtype=np.dtype(_DTYPES[node.type]), shape=shape)
