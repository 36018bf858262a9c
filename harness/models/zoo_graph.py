"""Graph building for the zoo's generators: seeded initializers, nodes, opset and metadata."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import onnx
from onnx import helper, numpy_helper

from harness.records.generators import GENERATOR_VERSIONS as GENERATOR_VERSIONS

OPSET: Final = 17
IR_VERSION: Final = 8
PRODUCER: Final = "beyond-tops"

Dims = Sequence[int | str]


class Graph:
    """Accumulates nodes and seeded initializers with unique names, then emits a model."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._names: set[str] = set()
        self._consts: dict[tuple[str, tuple[int, ...], bytes], str] = {}

    def init(self, name: str, array: npt.NDArray[Any]) -> str:
        """Adds an initializer under a name that must be new; returns the name."""
        if name in self._names:
            raise ValueError(f"duplicate tensor name {name!r}")
        self._names.add(name)
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def array(self, name: str) -> npt.NDArray[Any]:
        """The values of an initializer added before, by name."""
        for tensor in self.inits:
            if tensor.name == name:
                return numpy_helper.to_array(tensor)
        raise KeyError(name)

    def normal(self, name: str, shape: tuple[int, ...], std: float) -> str:
        """Adds a float32 N(0, std^2) initializer drawn from the seeded generator."""
        return self.init(name, self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std))

    def uniform(self, name: str, size: int, low: float, high: float) -> str:
        """Adds a float32 vector drawn uniformly from [low, high)."""
        return self.init(name, self.rng.uniform(low, high, size).astype(np.float32))

    def const(self, values: float | Sequence[float], dtype: type[np.generic]) -> str:
        """Returns a shared constant initializer holding ``values`` as ``dtype``."""
        arr = np.asarray(values, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self._consts:
            self._consts[key] = self.init(f"const_{len(self._consts)}", arr)
        return self._consts[key]

    def ops(
        self,
        op_type: str,
        inputs: Sequence[str],
        n_out: int,
        outs: Sequence[str] = (),
        **attrs: Any,
    ) -> list[str]:
        """Appends a node with ``n_out`` outputs (auto-named unless ``outs``); returns them."""
        name = f"{op_type}_{len(self.nodes)}"
        outputs = list(outs) or [f"{name}_out{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, name=name, **attrs))
        return outputs

    def op(self, op_type: str, inputs: Sequence[str], out: str = "", **attrs: Any) -> str:
        """Appends a single-output node and returns its output name."""
        return self.ops(op_type, inputs, 1, [out] if out else (), **attrs)[0]

    def model(
        self,
        name: str,
        seed: int,
        version: int,
        inputs: Sequence[onnx.ValueInfoProto],
        outputs: Sequence[onnx.ValueInfoProto],
    ) -> onnx.ModelProto:
        """Wraps the accumulated graph into a model with the zoo's opset, IR and metadata."""
        graph = helper.make_graph(self.nodes, name, list(inputs), list(outputs), self.inits)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            ir_version=IR_VERSION,
            producer_name=PRODUCER,
            producer_version=str(version),
            doc_string=(
                f"Seeded synthetic-weight generator output for {name} (seed={seed}, "
                f"generator_version={version}): the exact architecture with random "
                "weights, not trained weights; accuracy is meaningless."
            ),
        )
        meta = {"zoo.model": name, "zoo.seed": str(seed), "zoo.generator_version": str(version)}
        helper.set_model_props(model, meta)
        return model


def value_info(name: str, elem_type: int, dims: Dims) -> onnx.ValueInfoProto:
    """A tensor's name, element type and dims (ints, or names for symbolic dims)."""
    return helper.make_tensor_value_info(name, elem_type, list(dims))
