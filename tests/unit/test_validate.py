"""Model file checks before any session is built, and fixing the free (symbolic) dims."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from harness.errors import ModelError
from harness.models.validate import (
    Dim,
    ModelInfo,
    file_sha256,
    inspect_model,
    resolve_dims,
    runtime_max_opset,
)
from harness.models.zoo import build_tiny


def _save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def tiny_bytes() -> bytes:
    return build_tiny().SerializeToString()


@pytest.fixture
def tiny_path(tmp_path: Path, tiny_bytes: bytes) -> Path:
    path = tmp_path / "tiny.onnx"
    path.write_bytes(tiny_bytes)
    return path


def _info(inputs: Mapping[str, tuple[Dim, ...]], path: Path = Path("m.onnx")) -> ModelInfo:
    return ModelInfo(path=path, sha256="0" * 64, opset=17, inputs=inputs, outputs=("y",))


def _model_error(path: Path) -> str:
    with pytest.raises(ModelError) as info:
        inspect_model(path)
    assert info.value.exit_code == 3
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: "), message
    return message


# --- inspect_model on a valid model -----------------------------------------------------------


def test_inspect_tiny_model(tiny_path: Path) -> None:
    info = inspect_model(tiny_path)
    assert info.path == tiny_path
    assert info.sha256 == hashlib.sha256(tiny_path.read_bytes()).hexdigest()
    assert info.opset == 17
    assert dict(info.inputs) == {"input": ("batch", 3, 32, 32)}
    assert info.outputs == ("logits",)


def test_initializers_listed_as_inputs_are_not_inputs(tmp_path: Path) -> None:
    # IR < 4 style: weights appear in graph.input too; they are not fed by the harness.
    weight = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 2])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    info = inspect_model(_save(model, tmp_path / "add.onnx"))
    assert dict(info.inputs) == {"x": ("n", 2)}
    assert info.opset == 13


def test_file_sha256_matches_hashlib(tmp_path: Path) -> None:
    path = tmp_path / "blob.bin"
    data = bytes(range(256)) * 9000  # > 1 MiB: more than one chunk
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()


def test_runtime_max_opset_covers_the_zoo_opset() -> None:
    assert runtime_max_opset() >= 17


# --- bad model files --------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.onnx"
    assert _model_error(path) == (
        f"{path}: no such model file; pass an existing .onnx file to --model"
    )


def test_directory_is_not_a_model(tmp_path: Path) -> None:
    assert _model_error(tmp_path) == (
        f"{tmp_path}: is a directory, not a regular file; give a regular file"
    )


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    assert _model_error(path) == (
        f"{path}: not an ONNX model (no IR version or no graph nodes); the file may be empty, "
        "truncated or another format"
    )


def test_truncated_file(tmp_path: Path, tiny_bytes: bytes) -> None:
    path = tmp_path / "truncated.onnx"
    path.write_bytes(tiny_bytes[: len(tiny_bytes) // 2])
    message = _model_error(path)
    assert message.startswith(
        (f"{path}: not a readable ONNX model (", f"{path}: not an ONNX model (")
    ), message
    assert "truncated" in message


def test_text_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.onnx"
    path.write_text("hello, this is not a model\n", encoding="utf-8")
    message = _model_error(path)
    assert message.startswith(f"{path}: not a readable ONNX model (")
    assert "re-export or re-download it" in message


def test_opset_newer_than_runtime(tmp_path: Path) -> None:
    model = build_tiny()
    limit = runtime_max_opset()
    model.opset_import[0].version = limit + 1
    path = _save(model, tmp_path / "future.onnx")
    assert _model_error(path) == (
        f"{path}: opset {limit + 1} is newer than this onnxruntime supports ({limit}); "
        f"re-export the model with opset <= {limit} or upgrade onnxruntime"
    )


def test_no_default_opset(tmp_path: Path) -> None:
    model = build_tiny()
    model.opset_import[0].domain = "com.example"
    path = _save(model, tmp_path / "custom.onnx")
    assert _model_error(path) == (f"{path}: declares no ai.onnx opset; re-export it with an opset")


def test_checker_failure_undefined_input(tmp_path: Path) -> None:
    model = build_tiny()
    model.graph.node[0].input[0] = "undefined_tensor"
    path = _save(model, tmp_path / "broken.onnx")
    message = _model_error(path)
    assert message.startswith(f"{path}: fails onnx.checker: ")
    assert "undefined_tensor" in message


def test_graph_without_nodes(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [], "empty", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = _save(model, tmp_path / "nodes.onnx")
    assert "no IR version or no graph nodes" in _model_error(path)


# --- resolve_dims -----------------------------------------------------------------------------


def test_resolve_tiny_batch(tiny_path: Path) -> None:
    info = inspect_model(tiny_path)
    assert resolve_dims(info, batch_size=4, dims={}) == {"batch": 4}
    assert resolve_dims(info, batch_size=1, dims={}) == {"batch": 1}


def test_resolve_named_dims_from_mapping() -> None:
    info = _info({"input": ("N", 3, "height", "width")})
    assert resolve_dims(info, batch_size=8, dims={"height": 224, "width": 160}) == {
        "N": 8,
        "height": 224,
        "width": 160,
    }


def test_resolve_dims_shared_between_inputs() -> None:
    info = _info(
        {
            "input_ids": ("batch", "seq_len"),
            "attention_mask": ("batch", "seq_len"),
            "token_type_ids": ("batch", "seq_len"),
        }
    )
    assert resolve_dims(info, batch_size=1, dims={"seq_len": 128}) == {
        "batch": 1,
        "seq_len": 128,
    }


def test_resolve_fixed_batch_that_matches() -> None:
    info = _info({"x": (1, 3, 32, 32)})
    assert resolve_dims(info, batch_size=1, dims={}) == {}


def test_resolve_fixed_batch_mismatch() -> None:
    info = _info({"x": (1, 3, 32, 32)}, Path("fixed.onnx"))
    with pytest.raises(ModelError) as err:
        resolve_dims(info, batch_size=8, dims={})
    assert str(err.value) == (
        "fixed.onnx: input 'x' has a fixed batch of 1, so batch_size 8 cannot run; "
        "export the model with a symbolic batch dim"
    )
    assert err.value.exit_code == 3


def test_resolve_symbolic_dim_not_provided() -> None:
    info = _info({"input": ("batch", 3, "height", "width")}, Path("mnv2.onnx"))
    with pytest.raises(ModelError) as err:
        resolve_dims(info, batch_size=1, dims={"height": 224})
    assert str(err.value) == (
        "mnv2.onnx: input 'input' dim 'width' is symbolic; set model.dims.width in the scenario"
    )
    assert err.value.exit_code == 3


def test_resolve_unnamed_dim() -> None:
    info = _info({"input": ("batch", None)}, Path("anon.onnx"))
    with pytest.raises(ModelError, match=re.escape("anon.onnx: input 'input' axis 1 has no size")):
        resolve_dims(info, batch_size=1, dims={})


def test_resolve_unknown_dim_names_are_an_error() -> None:
    info = _info({"input": ("batch", 3, "height", "width")}, Path("mnv2.onnx"))
    with pytest.raises(ModelError) as err:
        resolve_dims(
            info, batch_size=1, dims={"height": 224, "width": 224, "heigth": 1, "depth": 2}
        )
    assert "heigth" in str(err.value)
    assert "depth" in str(err.value)
    assert err.value.exit_code == 3
