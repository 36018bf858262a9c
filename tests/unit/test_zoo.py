"""Tests for the seeded synthetic-weight model zoo (real onnx and onnxruntime)."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, numpy_helper

from harness.errors import ModelError
from harness.models import zoo

FloatArray = npt.NDArray[np.float32]
BERT_SMALL = {"num_layers": 2}


@pytest.fixture(scope="module")
def models() -> dict[str, onnx.ModelProto]:
    """Each model built once with seed 0; ``bert_small`` has 2 layers for fast runs."""
    built = {name: entry.builder(0) for name, entry in zoo.ZOO.items()}
    built["bert_small"] = zoo.build_bert_base(0, **BERT_SMALL)
    return built


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _sig(values: Sequence[onnx.ValueInfoProto]) -> list[tuple[str, int, list[int | str]]]:
    out = []
    for v in values:
        dims = [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
        out.append((v.name, v.type.tensor_type.elem_type, dims))
    return out


def _params(model: onnx.ModelProto) -> int:
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer)


def _weights(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def _image(shape: tuple[int, ...]) -> FloatArray:
    return np.random.default_rng(123).standard_normal(shape).astype(np.float32)


IMAGE = ["batch", 3, "height", "width"]
SEQ = ["batch", "seq_len"]
F, I64 = TensorProto.FLOAT, TensorProto.INT64
INTERFACES = {
    "tiny": ([("input", F, ["batch", 3, 32, 32])], [("logits", F, ["batch", 10])]),
    "mobilenet_v2": ([("input", F, IMAGE)], [("output", F, ["batch", 1000])]),
    "resnet50": (
        [("input_tensor:0", F, IMAGE)],
        [("ArgMax:0", I64, ["batch"]), ("softmax_tensor:0", F, ["batch", 1001])],
    ),
    "bert_base": (
        [("input_ids", I64, SEQ), ("attention_mask", I64, SEQ), ("token_type_ids", I64, SEQ)],
        [("output_start_logits", F, SEQ), ("output_end_logits", F, SEQ)],
    ),
    "null": ([("input", F, ["batch", 16])], [("output", F, ["batch", 16])]),
}


def test_registry_entries_are_complete_and_frozen() -> None:
    assert list(zoo.ZOO) == [
        "tiny",
        "mobilenet_v2",
        "resnet50",
        "bert_base",
        "null",
        "efficientnet-lite0",
    ]
    assert zoo.ZOO["tiny"].builder is zoo.build_tiny
    assert zoo.ZOO["bert_base"].builder is zoo.build_bert_base
    assert dict(zoo.ZOO["tiny"].default_dims) == {}
    assert dict(zoo.ZOO["resnet50"].default_dims) == {"height": 224, "width": 224}
    assert dict(zoo.ZOO["mobilenet_v2"].default_dims) == {"height": 224, "width": 224}
    assert dict(zoo.ZOO["bert_base"].default_dims) == {"seq_len": 384}
    assert zoo.ZOO["null"].builder is zoo.build_null
    assert dict(zoo.ZOO["null"].default_dims) == {}
    for name, entry in zoo.ZOO.items():
        assert entry.name == name
        assert entry.description
        assert isinstance(entry.generator_version, int)
        assert entry.generator_version >= 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        zoo.ZOO["tiny"].name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("name", list(INTERFACES))
def test_interface_names_dtypes_and_dims(models: dict[str, onnx.ModelProto], name: str) -> None:
    inputs, outputs = INTERFACES[name]
    model = models[name]
    assert _sig(model.graph.input) == inputs
    assert _sig(model.graph.output) == outputs
    # Every non-batch symbolic input dim has a default value.
    symbolic = {d for _, _, dims in inputs for d in dims if isinstance(d, str)} - {"batch"}
    assert set(zoo.ZOO[name].default_dims) == symbolic


@pytest.mark.parametrize("name", [*INTERFACES, "bert_small"])
def test_checker_opset_and_metadata(models: dict[str, onnx.ModelProto], name: str) -> None:
    model = models[name]
    onnx.checker.check_model(model, full_check=True)
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    assert model.ir_version == 8
    assert model.producer_name == "beyond-tops"
    assert "synthetic" in model.doc_string
    assert "not trained" in model.doc_string
    assert all(node.domain in ("", "ai.onnx") for node in model.graph.node)
    props = {p.key: p.value for p in model.metadata_props}
    assert props["zoo.seed"] == "0"
    assert props["zoo.generator_version"] == str(
        zoo.ZOO[name.replace("_small", "_base")].generator_version
    )
    assert all(numpy_helper.to_array(t).dtype != np.float64 for t in model.graph.initializer)


@pytest.mark.parametrize(
    ("name", "low", "high"),
    [
        ("tiny", 20_000, 200_000),
        ("mobilenet_v2", 3_504_872 * 0.98, 3_504_872 * 1.02),
        ("resnet50", 25_600_000 * 0.98, 25_600_000 * 1.02),
        ("bert_base", 108_000_000, 110_000_000),
    ],
)
def test_parameter_counts(
    models: dict[str, onnx.ModelProto], name: str, low: float, high: float
) -> None:
    assert low <= _params(models[name]) <= high


def test_architecture_landmarks(models: dict[str, onnx.ModelProto]) -> None:
    resnet = _weights(models["resnet50"])
    assert resnet["fc.weight"].shape == (1001, 2048)
    assert resnet["conv1.weight"].shape == (64, 3, 7, 7)
    # v1.5: the stride-2 downsampling of a stage's first block sits on the 3x3 conv.
    strides = {
        n.input[1]: list(next(a.ints for a in n.attribute if a.name == "strides"))
        for n in models["resnet50"].graph.node
        if n.op_type == "Conv"
    }
    assert strides["layer2.0.conv1.weight"] == [1, 1]
    assert strides["layer2.0.conv2.weight"] == [2, 2]
    assert strides["layer2.0.downsample.weight"] == [2, 2]
    ops = [n.op_type for n in models["resnet50"].graph.node]
    assert ops.count("Conv") == 53
    assert ops.count("BatchNormalization") == 53
    mobile_ops = [n for n in models["mobilenet_v2"].graph.node if n.op_type == "Conv"]
    depthwise = [n for n in mobile_ops if next(a.i for a in n.attribute if a.name == "group") > 1]
    assert len(mobile_ops) == 52
    assert len(depthwise) == 17
    bert_ops = [n.op_type for n in models["bert_base"].graph.node]
    assert bert_ops.count("LayerNormalization") == 1 + 2 * 12
    assert bert_ops.count("Softmax") == 12
    assert bert_ops.count("Erf") == 12
    assert _weights(models["bert_base"])["qa_outputs.weight"].shape == (768, 2)


@pytest.mark.parametrize(
    "build",
    [
        zoo.build_tiny,
        zoo.build_mobilenet_v2,
        zoo.build_resnet50,
        lambda s: zoo.build_bert_base(s, **BERT_SMALL),
    ],
    ids=["tiny", "mobilenet_v2", "resnet50", "bert_small"],
)
def test_same_seed_is_byte_identical_and_other_seed_differs(
    build: Callable[[int], onnx.ModelProto],
) -> None:
    first = build(7)
    assert first.SerializeToString() == build(7).SerializeToString()
    other = build(8)
    assert [n.op_type for n in other.graph.node] == [n.op_type for n in first.graph.node]
    a, b = _weights(first), _weights(other)
    assert a.keys() == b.keys()
    differing = [k for k in a if not np.array_equal(a[k], b[k])]
    assert any(k.endswith("weight") for k in differing)


def test_default_seed_matches_registry_builder(models: dict[str, onnx.ModelProto]) -> None:
    assert zoo.build_tiny().SerializeToString() == models["tiny"].SerializeToString()


def test_tiny_runs_batch2(models: dict[str, onnx.ModelProto]) -> None:
    (logits,) = _session(models["tiny"]).run(None, {"input": _image((2, 3, 32, 32))})
    assert logits.shape == (2, 10)
    assert logits.dtype == np.float32
    assert np.isfinite(logits).all()
    assert logits.std() > 1e-3


@pytest.mark.parametrize("size", [64, 224])
def test_resnet50_outputs_are_well_formed(models: dict[str, onnx.ModelProto], size: int) -> None:
    sess = _session(models["resnet50"])
    argmax, probs = sess.run(None, {"input_tensor:0": _image((2, 3, size, size))})
    assert argmax.shape == (2,)
    assert argmax.dtype == np.int64
    assert probs.shape == (2, 1001)
    assert probs.dtype == np.float32
    assert np.isfinite(probs).all()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-4)
    np.testing.assert_array_equal(argmax, probs.argmax(axis=1))
    assert probs.max() < 0.99  # not degenerate: activations neither exploded nor vanished
    assert probs.std() > 0


def test_mobilenet_v2_runs_at_small_size(models: dict[str, onnx.ModelProto]) -> None:
    (out,) = _session(models["mobilenet_v2"]).run(None, {"input": _image((2, 3, 64, 64))})
    assert out.shape == (2, 1000)
    assert out.dtype == np.float32
    assert np.isfinite(out).all()
    assert 1e-3 < out.std() < 100


def _bert_feed(seq_len: int, valid: Sequence[int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seq_len)
    ids = rng.integers(1000, 30522, (len(valid), seq_len), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, n in enumerate(valid):
        mask[row, :n] = 1
        types[row, n // 3 : n] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


@pytest.mark.parametrize("seq_len", [128, 384])
def test_bert_runs_at_both_sequence_lengths(
    models: dict[str, onnx.ModelProto], seq_len: int
) -> None:
    sess = _session(models["bert_small"])
    feed = _bert_feed(seq_len, [seq_len, seq_len // 2])
    start, end = sess.run(["output_start_logits", "output_end_logits"], feed)
    for out in (start, end):
        assert out.shape == (2, seq_len)
        assert out.dtype == np.float32
        assert np.isfinite(out).all()
        assert out.std() > 1e-3
    assert not np.allclose(start, end)
    # The attention mask works: tokens past row 1's valid length do not affect its valid part.
    padded = {k: v.copy() for k, v in feed.items()}
    padded["input_ids"][1, seq_len // 2 :] = 7
    start2, _ = sess.run(["output_start_logits", "output_end_logits"], padded)
    np.testing.assert_allclose(start2[1, : seq_len // 2], start[1, : seq_len // 2], atol=1e-4)
    np.testing.assert_array_equal(start2[0], start[0])


def test_bert_position_embeddings_follow_runtime_length(models: dict[str, onnx.ModelProto]) -> None:
    sess = _session(models["bert_small"])
    n = 16
    feed = {
        "input_ids": np.full((1, n), 2023, np.int64),
        "attention_mask": np.ones((1, n), np.int64),
        "token_type_ids": np.zeros((1, n), np.int64),
    }
    start, _ = sess.run(["output_start_logits", "output_end_logits"], feed)
    # Identical tokens at every position only differ through their position embedding.
    assert np.unique(np.round(start, 5)).size == n


def test_null_is_one_identity_that_returns_its_input(models: dict[str, onnx.ModelProto]) -> None:
    model = models["null"]
    assert [n.op_type for n in model.graph.node] == ["Identity"]
    assert not model.graph.initializer
    x = _image((3, 16))
    (out,) = _session(model).run(None, {"input": x})
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, x)


def test_null_generation_is_deterministic() -> None:
    digests = {hashlib.sha256(zoo.build_null(0).SerializeToString()).hexdigest() for _ in range(2)}
    assert len(digests) == 1
    assert digests == {hashlib.sha256(zoo.build_null().SerializeToString()).hexdigest()}
    # No weights: the seed only shows in the metadata.
    assert zoo.build_null(1).SerializeToString() != zoo.build_null(0).SerializeToString()


def test_bert_rejects_heads_not_dividing_hidden() -> None:
    with pytest.raises(ValueError, match="num_heads"):
        zoo.build_bert_base(0, num_layers=1, hidden=100, num_heads=12)


# --- input dependence (#25): a model that answers one class for every input tests nothing ---

SEEDED_INPUTS = 64


def _seeded_images(shape: tuple[int, ...]) -> FloatArray:
    """The harness's synthetic samples 0..63 (seed 0): one N(0, 1) image each."""
    return np.stack(
        [
            np.random.default_rng([0, i]).standard_normal(shape, dtype=np.float32)
            for i in range(SEEDED_INPUTS)
        ]
    )


def _top1(model: onnx.ModelProto, images: FloatArray) -> np.ndarray:
    session = _session(model)
    name = session.get_inputs()[0].name
    scores = [session.run(None, {name: images[i : i + 16]})[-1] for i in range(0, len(images), 16)]
    top1: np.ndarray = np.concatenate(scores).argmax(axis=1)
    return top1


@pytest.mark.parametrize(
    ("name", "shape", "least"),
    [
        ("resnet50", (3, 224, 224), 32),
        ("mobilenet_v2", (3, 224, 224), 32),
        ("tiny", (3, 32, 32), 10),  # all of its 10 classes
    ],
)
def test_each_cnn_answers_many_classes_over_seeded_inputs(
    models: dict[str, onnx.ModelProto], name: str, shape: tuple[int, ...], least: int
) -> None:
    top1 = _top1(models[name], _seeded_images(shape))
    _, counts = np.unique(top1, return_counts=True)
    assert len(counts) >= least, f"{name}: {len(counts)} distinct top-1 classes of 64"
    assert counts.max() <= SEEDED_INPUTS // 2  # no class answers most inputs


def test_generator_1_answered_one_class_for_every_input() -> None:
    """Why version 2 exists: version 1's tiny CNN answers one class for all 64 inputs."""
    top1 = _top1(zoo.ZOO["tiny"].build(0, 1), _seeded_images((3, 32, 32)))
    assert len(np.unique(top1)) == 1


def test_bert_outputs_differ_materially_between_samples(
    models: dict[str, onnx.ModelProto],
) -> None:
    """Per-sample spread: the start logits of different random sequences are far apart."""
    session = _session(models["bert_base"])
    rng = np.random.default_rng(0)
    starts = []
    for _ in range(6):
        ids = rng.integers(0, 30522, (1, 64), dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        feed["token_type_ids"] = np.zeros_like(ids)
        starts.append(session.run(["output_start_logits"], feed)[0][0])
    out = np.stack(starts)
    # Across samples, each position's logit varies by most of the logits' overall spread
    # (0.57 measured); a constant model gives 0. What samples share (positions) stays partial.
    spread = float(out.std(axis=0).mean() / out.std())
    assert spread > 0.4, spread
    correlation = np.corrcoef(out)[np.triu_indices(len(out), 1)]
    assert correlation.max() < 0.9, correlation


def test_every_generator_version_builds_and_stamps_itself(
    models: dict[str, onnx.ModelProto],
) -> None:
    for name, entry in zoo.ZOO.items():
        assert entry.versions == tuple(range(1, entry.generator_version + 1))
        props = {p.key: p.value for p in models[name].metadata_props}
        assert props["zoo.generator_version"] == str(entry.generator_version), name
    first = zoo.ZOO["tiny"].build(0, 1)
    assert {p.key: p.value for p in first.metadata_props}["zoo.generator_version"] == "1"
    assert first.SerializeToString() != models["tiny"].SerializeToString()
    assert zoo.ZOO["tiny"].build(0, 2).SerializeToString() == models["tiny"].SerializeToString()
    with pytest.raises(ModelError, match="'bert_base' has no generator version 2"):
        zoo.ZOO["bert_base"].build(0, 2)
