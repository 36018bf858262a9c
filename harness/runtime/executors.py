"""The timed path: run preloaded samples from host arrays or, with IO binding, from the device."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

from harness.errors import ConfigError
from harness.runtime.session import Session, create_helper_session

Response = tuple[int, int]  # (address, bytes) handed to LoadGen


class HostExecutor:
    """onnxruntime's plain `run` on host arrays; what CPU targets use."""

    data_path = "host"

    def __init__(self, session: Session) -> None:
        self._session = session
        self.batch_size = session.inputs[0].shape[0]
        self._arrays: Mapping[str, np.ndarray] = {}
        self._single: list[dict[str, np.ndarray]] = []
        self._batch = {s.name: np.empty(s.shape, dtype=s.dtype) for s in session.inputs}
        self._keep: list[np.ndarray] = []
        self._bound: _BoundSingle | None = None

    def attach(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Take the QSL's loaded arrays and prepare batch-1 views of them."""
        self._arrays = arrays
        rows = len(next(iter(arrays.values()))) if arrays else 0
        self._single = [{n: a[r : r + 1] for n, a in arrays.items()} for r in range(rows)]
        self._bound = _BoundSingle.of(self._session, arrays) if self.batch_size == 1 else None

    def run_single(self, row: int) -> Response:
        """Infer one loaded sample (bound in place where the model's outputs have fixed shapes)."""
        if self._bound is not None:
            return self._bound.run(row)
        out = self._session.run(self._single[row])[0]
        self._keep = [out]
        return out.ctypes.data, out.nbytes

    def run_batch(self, rows: Sequence[int]) -> Response:
        """Gather rows into the preallocated batch and infer; returns (base, per-sample bytes)."""
        for name, buffer in self._batch.items():
            # A short last batch leaves stale rows as padding: the model's batch is fixed.
            np.take(self._arrays[name], rows, axis=0, out=buffer[: len(rows)])
        out = self._session.run(self._batch)[0]
        self._keep = [out]
        return out.ctypes.data, out.nbytes // self.batch_size


class _BoundSingle:
    """SingleStream's one-sample query through IO binding on host memory.

    The outputs are preallocated once, so a query neither allocates its result nor asks
    numpy for its address (`ndarray.ctypes` costs ~1.5 us, a third of what the harness adds
    to a query); each query only rebinds the inputs to its sample's rows. The response
    points at the first output's buffer, untouched until the next query: LoadGen reads it
    inside QuerySamplesComplete, before it issues the next one.
    """

    def __init__(self, session: Session, arrays: Mapping[str, np.ndarray]) -> None:
        # An untimed first run gives the outputs' real shapes and types to preallocate.
        first = session.run({n: a[:1] for n, a in arrays.items()})
        self._outputs = [np.empty_like(out) for out in first]
        self._run = session.ort_session.run_with_iobinding
        self._binding = session.ort_session.io_binding()
        self._bind = self._binding.bind_input
        for spec, out in zip(session.outputs, self._outputs, strict=True):
            self._binding.bind_output(
                spec.name, "cpu", 0, out.dtype, list(out.shape), out.ctypes.data
            )
        self._rows = [
            (
                name,
                a.dtype,
                [1, *a.shape[1:]],
                [a.ctypes.data + r * a.strides[0] for r in range(len(a))],
            )
            for name, a in arrays.items()
        ]
        self._response = (self._outputs[0].ctypes.data, self._outputs[0].nbytes)

    @classmethod
    def of(cls, session: Session, arrays: Mapping[str, np.ndarray]) -> _BoundSingle | None:
        """Bound single queries; None where they cannot be.

        That is where an output's shape is known only at run time (it could change from
        sample to sample) or a sample array is not one dense block.
        """
        static = all(isinstance(d, int) for o in session.outputs for d in o.shape)
        dense = all(a.flags.c_contiguous and len(a) > 0 for a in arrays.values())
        if not (session.outputs and arrays and static and dense):
            return None
        return cls(session, arrays)

    def run(self, row: int) -> Response:
        for name, dtype, shape, ptrs in self._rows:
            self._bind(name, "cpu", 0, dtype, shape, ptrs[row])
        self._run(self._binding)
        return self._response


class DeviceExecutor:
    """IO binding: samples live on the device from the QSL's load step; outputs are preallocated.

    With `include_host_copies` every query copies its inputs to the device and its outputs
    back, as an application would (end-to-end timing); without, the timed path copies nothing
    but the few bytes of batch indices, and responses carry no data. Inputs are fixed device
    buffers wherever CUDA graphs are on, since a replayed graph reads the addresses it recorded.
    """

    def __init__(self, session: Session, *, include_host_copies: bool) -> None:
        self._session = session
        self._ort = session.ort_session
        self._device = session.target.device_type
        self._copies = include_host_copies
        self.data_path = "device+host-copies" if include_host_copies else "device"
        self.batch_size = session.inputs[0].shape[0]
        self._binding = self._ort.io_binding()
        self._host: Mapping[str, np.ndarray] = {}
        self._rows: dict[str, list[Any]] = {}
        self._gather: dict[str, _DeviceGather] = {}
        self._gather_sessions: dict[tuple[str, tuple[int, ...]], Any] = {}
        self._staging = {s.name: np.empty(s.shape, dtype=s.dtype) for s in session.inputs}
        self._fixed: dict[str, Any] = {}
        self._bind_outputs()
        if include_host_copies:
            self._bind_fixed_inputs()

    def attach(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Upload the loaded samples to the device once (this is untimed QSL load time)."""
        self._host = arrays
        self._rows, self._gather = {}, {}
        if self._copies or not arrays:  # nothing to upload (or an unload)
            return
        if self.batch_size == 1 and not self._session.cuda_graphs:
            self._rows = {
                name: [self._ortvalue(array[r : r + 1]) for r in range(len(array))]
                for name, array in arrays.items()
            }
            return
        for spec in self._session.inputs:
            samples = arrays[spec.name]
            gather = _DeviceGather(
                self._gather_session(samples), samples, batch=self.batch_size, device=self._device
            )
            self._binding.bind_ortvalue_input(spec.name, gather.output)
            self._gather[spec.name] = gather

    def run_single(self, row: int) -> Response:
        """Infer one sample already on the device (or copied there when timing end to end)."""
        if self._gather:
            return self.run_batch([row])
        for name in self._host:
            if self._copies:
                self._fixed[name].update_inplace(self._host[name][row : row + 1])
            else:
                self._binding.bind_ortvalue_input(name, self._rows[name][row])
        return self._run(1)

    def run_batch(self, rows: Sequence[int]) -> Response:
        """Gather a batch on the device and infer it."""
        if self._copies:
            padded = _pad(rows, self.batch_size)
            for name, array in self._host.items():
                np.take(array, padded, axis=0, out=self._staging[name])
                self._fixed[name].update_inplace(self._staging[name])
        else:
            for gather in self._gather.values():
                gather.run(rows)
        return self._run(self.batch_size)

    def _run(self, batch: int) -> Response:
        self._ort.run_with_iobinding(self._binding)
        if not self._copies:
            return 0, 0
        out = self._binding.copy_outputs_to_cpu()[0]
        self._keep = out
        return out.ctypes.data, out.nbytes // batch

    def _bind_fixed_inputs(self) -> None:
        for spec in self._session.inputs:
            value = ort.OrtValue.ortvalue_from_shape_and_type(
                list(spec.shape), spec.dtype.type, self._device, 0
            )
            self._binding.bind_ortvalue_input(spec.name, value)
            self._fixed[spec.name] = value

    def _bind_outputs(self) -> None:
        for spec in self._session.outputs:
            if all(isinstance(d, int) for d in spec.shape):
                value = ort.OrtValue.ortvalue_from_shape_and_type(
                    list(spec.shape), spec.dtype.type, self._device, 0
                )
                self._binding.bind_ortvalue_output(spec.name, value)
            elif self._session.cuda_graphs:
                raise ConfigError(
                    f"CUDA graphs: output '{spec.name}' has shape {list(spec.shape)}, known only "
                    "at run time, so it cannot live at a fixed address; name its dimensions "
                    "in model.dims or turn CUDA graphs off"
                )
            else:  # shape known only at run time: onnxruntime allocates on the device
                self._binding.bind_output(spec.name, self._device, 0)

    def _gather_session(self, samples: np.ndarray) -> Any:
        """One helper session per sample tensor shape, built and warmed once (untimed)."""
        key = (samples.dtype.str, tuple(samples.shape))
        if key not in self._gather_sessions:
            model = _gather_model(samples.dtype, samples.shape, self.batch_size)
            self._gather_sessions[key] = create_helper_session(
                self._session, model.SerializeToString()
            )
        return self._gather_sessions[key]

    def _ortvalue(self, array: np.ndarray) -> Any:
        return ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(array), self._device, 0)


class _DeviceGather:
    """Gathers batch rows from a device-resident sample tensor with a one-node ONNX graph."""

    def __init__(self, session: Any, samples: np.ndarray, *, batch: int, device: str) -> None:
        self._batch = batch
        self._session = session
        self._binding = session.io_binding()
        self._samples = ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(samples), device, 0)
        self._indices = ort.OrtValue.ortvalue_from_numpy(np.zeros(batch, dtype=np.int64), device, 0)
        shape = [batch, *samples.shape[1:]]
        self.output = ort.OrtValue.ortvalue_from_shape_and_type(
            shape, samples.dtype.type, device, 0
        )
        self._binding.bind_ortvalue_input("samples", self._samples)
        self._binding.bind_ortvalue_input("indices", self._indices)
        self._binding.bind_ortvalue_output("batch", self.output)
        # Warm-up: the provider's first-run work (kernel selection, compilation) happens here,
        # at load time, not inside LoadGen's timed window.
        self._session.run_with_iobinding(self._binding)

    def run(self, rows: Sequence[int]) -> None:
        """Write the rows into the bound batch tensor (only the indices cross to the device)."""
        self._indices.update_inplace(np.asarray(_pad(rows, self._batch), dtype=np.int64))
        self._session.run_with_iobinding(self._binding)


def executor_for(
    session: Session, *, io_binding: bool, include_host_copies: bool
) -> HostExecutor | DeviceExecutor:
    """The device path (IO binding) on accelerators or when asked for, else plain `run`."""
    if session.target.is_gpu or io_binding:
        return DeviceExecutor(session, include_host_copies=include_host_copies)
    return HostExecutor(session)


def _pad(rows: Sequence[int], batch: int) -> list[int]:
    rows = list(rows)
    return rows + [rows[-1]] * (batch - len(rows))


def _gather_model(dtype: np.dtype[Any], shape: Sequence[int], batch: int) -> onnx.ModelProto:
    # Concrete shapes: TensorRT and MIGraphX compile once, for exactly these shapes.
    elem = helper.np_dtype_to_tensor_dtype(dtype)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["samples", "indices"], ["batch"], axis=0)],
        "device_gather",
        [
            helper.make_tensor_value_info("samples", elem, list(shape)),
            helper.make_tensor_value_info("indices", onnx.TensorProto.INT64, [batch]),
        ],
        [helper.make_tensor_value_info("batch", elem, [batch, *shape[1:]])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
