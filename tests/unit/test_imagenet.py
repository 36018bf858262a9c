"""ImageNet as MLPerf prepares it: preprocessing, val_map.txt checks, the content-keyed cache."""

from __future__ import annotations

import shutil
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from harness.analysis.accuracy import label_accuracy
from harness.analysis.labels import label_offset
from harness.config import DataConfig, ModelConfig, Scenario
from harness.datasets.imagenet import (
    MEANS_RGB,
    ImagenetSource,
    crop_box,
    decode,
    load_dataset,
    preprocess,
    resized_size,
)
from harness.errors import ConfigError, ResultError
from harness.models.prepare import data_key

RED_BGR = (0, 0, 255)
BLUE_BGR = (255, 0, 0)


@dataclass(frozen=True)
class Spec:
    """Stand-in for a session's input spec."""

    name: str
    dtype: np.dtype[Any]
    shape: tuple[int, ...]


IMAGE_INPUT = Spec("input_tensor:0", np.dtype(np.float32), (1, 3, 224, 224))


def jpeg_bytes(bgr: np.ndarray, quality: int = 95) -> bytes:
    """A JPEG without chroma subsampling, so flat colours survive nearly exactly."""
    params = [
        cv2.IMWRITE_JPEG_QUALITY,
        quality,
        cv2.IMWRITE_JPEG_SAMPLING_FACTOR,
        cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444,
    ]
    ok, buffer = cv2.imencode(".jpg", bgr, params)
    assert ok
    return buffer.tobytes()


def halves(height: int, width: int, left: Sequence[int], right: Sequence[int]) -> np.ndarray:
    """A BGR image whose left half is one colour and right half another."""
    image = np.empty((height, width, 3), dtype=np.uint8)
    image[:, : width // 2] = left
    image[:, width // 2 :] = right
    return image


def make_folder(root: Path, count: int = 3) -> Path:
    """A folder of `count` JPEGs of different sizes and val_map.txt (labels 7, 8, …)."""
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(count):
        size = (300 + 10 * i, 400 - 20 * i)
        name = f"ILSVRC2012_val_{i + 1:08d}.JPEG"
        (root / name).write_bytes(jpeg_bytes(halves(*size, RED_BGR, BLUE_BGR)))
        lines.append(f"{name} {7 + i}\n")
    (root / "val_map.txt").write_text("".join(lines))
    return root


# --- the reference's geometry ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "resized", "box"),
    [
        ((375, 500), (256, 341), (16, 240, 58, 282)),  # landscape: (341 - 224) / 2 = 58.5
        ((500, 375), (341, 256), (58, 282, 16, 240)),  # portrait
        ((256, 256), (256, 256), (16, 240, 16, 240)),
        ((300, 300), (256, 256), (16, 240, 16, 240)),
        ((1000, 257), (996, 256), (386, 610, 16, 240)),  # 256 * 1000 / 257 = 996.1
        ((333, 334), (256, 256), (16, 240, 16, 240)),  # 256 * 334 / 333 = 256.8, truncated
        ((100, 150), (256, 384), (16, 240, 80, 304)),  # small images are scaled up
    ],
)
def test_resize_and_crop_follow_the_reference(
    size: tuple[int, int], resized: tuple[int, int], box: tuple[int, int, int, int]
) -> None:
    assert resized_size(*size) == resized
    assert crop_box(*resized) == box
    top, bottom, left, right = box
    assert (bottom - top, right - left) == (224, 224)


def area_weights(src: int, dst: int) -> np.ndarray:
    """[dst, src]: the share of each source pixel in each destination pixel (area average)."""
    scale = src / dst
    weights = np.zeros((dst, src))
    for i in range(dst):
        lo, hi = i * scale, (i + 1) * scale
        for j in range(int(np.floor(lo)), min(int(np.ceil(hi)), src)):
            weights[i, j] = min(hi, j + 1) - max(lo, j)
    return weights / scale


def test_preprocess_matches_an_independent_numpy_computation() -> None:
    bgr = np.random.default_rng(3).integers(0, 256, size=(300, 400, 3), dtype=np.uint8)
    got = preprocess(bgr)
    # Area resize of 300x400 to 256x341 as matrix products, then round, crop, subtract, CHW.
    rgb = bgr[..., ::-1].astype(np.float64)
    rows = np.einsum("hy,yxc->hxc", area_weights(300, 256), rgb)
    resized = np.einsum("hxc,wx->hwc", rows, area_weights(400, 341))
    pixels = np.clip(np.rint(resized), 0, 255).astype(np.float32)[16:240, 58:282]
    expected = (pixels - np.array([123.68, 116.78, 103.94], dtype=np.float32)).transpose(2, 0, 1)
    assert got.shape == (3, 224, 224) and got.dtype == np.float32
    difference = np.abs(got - expected)
    assert difference.max() <= 1.0  # OpenCV sums in float32: a .5 may round the other way
    assert np.mean(difference == 0) > 0.99
    # A crop one pixel off would differ everywhere on noise like this.
    shifted = np.abs(got - np.roll(expected, 1, axis=2))
    assert np.mean(shifted == 0) < 0.2


def test_means_are_subtracted_per_rgb_channel() -> None:
    grey = np.full((256, 256, 3), 100, dtype=np.uint8)
    got = preprocess(grey)
    assert np.array_equal(got[:, 0, 0], np.float32(100) - MEANS_RGB)
    assert np.all(got == got[:, :1, :1])


def test_a_jpeg_with_a_red_left_half_is_red_in_channel_0(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "imagenet", count=1)
    source = ImagenetSource(folder, [IMAGE_INPUT])
    out = {IMAGE_INPUT.name: np.zeros((1, 3, 224, 224), dtype=np.float32)}
    source.fill([0], out)
    sample = out[IMAGE_INPUT.name][0]
    # The 300x400 image becomes 256x341; the colours meet at column 170.5 - 58 of the crop.
    left, right = sample[:, :, :100], sample[:, :, 125:]
    red = np.array([255, 0, 0], dtype=np.float32) - MEANS_RGB
    blue = np.array([0, 0, 255], dtype=np.float32) - MEANS_RGB
    assert np.abs(left - red[:, None, None]).max() <= 3  # JPEG keeps flat colours within a level
    assert np.abs(right - blue[:, None, None]).max() <= 3


def test_decoding_bytes_equals_imread_including_exif_orientation(tmp_path: Path) -> None:
    data = jpeg_bytes(halves(40, 60, RED_BGR, BLUE_BGR))
    # An APP1 Exif segment right after SOI: one IFD entry, Orientation (0x0112) = 6 (rotate 90).
    tiff = b"II*\x00" + struct.pack("<IHHHIHHI", 8, 1, 0x0112, 3, 1, 6, 0, 0)
    payload = b"Exif\x00\x00" + tiff
    rotated = data[:2] + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload + data[2:]
    path = tmp_path / "rotated.jpg"
    path.write_bytes(rotated)
    got = decode(rotated, where=str(path))
    assert got.shape == (60, 40, 3)  # turned upright, as cv2.imread turns it
    assert np.array_equal(got, cv2.imread(str(path)))


# --- the cache ------------------------------------------------------------------------------


def test_second_load_reads_the_cache(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "imagenet")
    cache = tmp_path / "cache"
    first = load_dataset(folder, cache=cache)
    assert list(cache.iterdir()) == [first.cache_path]
    assert first.cache_path.name == f"{first.key}.npy"
    assert first.array.shape == (3, 3, 224, 224) and first.labels == (7, 8, 9)
    marked = np.load(first.cache_path, mmap_mode="r+")
    marked[1, 2, 3, 4] = 12345.0  # a value no image gives: the next load must return it
    marked.flush()
    del marked
    again = load_dataset(folder, cache=cache)
    assert again.key == first.key and again.array[1, 2, 3, 4] == 12345.0


def test_the_key_follows_content_not_path(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "imagenet")
    cache = tmp_path / "cache"
    first = load_dataset(folder, cache=cache)
    copy = shutil.copytree(folder, tmp_path / "elsewhere")
    assert load_dataset(copy, cache=cache).key == first.key
    image = folder / "ILSVRC2012_val_00000002.JPEG"
    image.write_bytes(jpeg_bytes(halves(310, 380, BLUE_BGR, RED_BGR)))
    changed = load_dataset(folder, cache=cache)
    assert changed.key != first.key
    assert np.array_equal(changed.array[0], first.array[0])
    assert not np.array_equal(changed.array[1], first.array[1])
    val_map = folder / "val_map.txt"
    val_map.write_text(val_map.read_text().replace(" 9\n", " 10\n"))
    relabelled = load_dataset(folder, cache=cache)
    assert relabelled.key not in (first.key, changed.key) and relabelled.labels == (7, 8, 10)
    assert len(list(cache.glob("*.npy"))) == 3
    assert not list(cache.glob(".*"))  # no temporary files left behind


def test_a_cut_short_cache_file_is_rebuilt(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "imagenet")
    cache = tmp_path / "cache"
    first = load_dataset(folder, cache=cache)
    expected = np.array(first.array)
    first.cache_path.write_bytes(first.cache_path.read_bytes()[:1000])
    again = load_dataset(folder, cache=cache)
    assert np.array_equal(again.array, expected)


def test_an_unwritable_cache_is_a_one_line_error(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "imagenet")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ResultError, match=r"cannot write the preprocessed images .*; free space"):
        load_dataset(folder, cache=blocker / "cache")


def test_data_key_holds_the_content_key(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "imagenet")
    scenario = Scenario(
        name="s",
        scenario="SingleStream",
        model=ModelConfig(zoo="resnet50"),
        data=DataConfig(source="imagenet", dir=str(folder)),
    )
    source = ImagenetSource(folder, [IMAGE_INPUT])
    assert data_key(scenario, source).endswith(f":{source.content_key}")
    (folder / "ILSVRC2012_val_00000001.JPEG").write_bytes(
        jpeg_bytes(halves(300, 400, BLUE_BGR, BLUE_BGR))
    )
    assert data_key(scenario, ImagenetSource(folder, [IMAGE_INPUT])) != data_key(scenario, source)


# --- bad input ------------------------------------------------------------------------------


def _error(folder: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_dataset(folder, cache=folder.parent / "cache")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_missing_folder(tmp_path: Path) -> None:
    folder = tmp_path / "nowhere"
    assert _error(folder).startswith(f"{folder}: data.dir is not a directory")


def test_missing_val_map(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "imagenet")
    (folder / "val_map.txt").unlink()
    assert _error(folder).startswith(f"{folder / 'val_map.txt'}: missing;")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ILSVRC2012_val_00000001.JPEG", "expected '<file> <label>' with a label 0-999"),
        ("ILSVRC2012_val_00000001.JPEG cat", "expected '<file> <label>'"),
        ("ILSVRC2012_val_00000001.JPEG -1", "expected '<file> <label>'"),
        ("ILSVRC2012_val_00000001.JPEG 1000", "expected '<file> <label>'"),
        ("a b 3", "expected '<file> <label>'"),
        ("absent.JPEG 3", "absent.JPEG: no such file in"),
        ("../outside.JPEG 3", "../outside.JPEG: must be a path inside data.dir"),
        ("ILSVRC2012_val_00000001.JPEG 3", "listed again (first on line 1)"),
    ],
    ids=["one-field", "word", "negative", "over-999", "three-fields", "absent", "outside", "twice"],
)
def test_bad_val_map_line_names_file_and_line(tmp_path: Path, line: str, expected: str) -> None:
    folder = make_folder(tmp_path / "imagenet", count=1)
    (tmp_path / "outside.JPEG").write_bytes(b"x")
    val_map = folder / "val_map.txt"
    val_map.write_text(val_map.read_text() + "\n" + line + "\n")  # a blank line 2 is skipped
    message = _error(folder)
    assert message.startswith(f"{val_map}:3: ") and expected in message


@pytest.mark.parametrize("content", [b"not a jpeg at all", b""], ids=["garbage", "empty"])
def test_unreadable_image_names_file_and_line(tmp_path: Path, content: bytes) -> None:
    folder = make_folder(tmp_path / "imagenet", count=2)
    image = folder / "ILSVRC2012_val_00000002.JPEG"
    image.write_bytes(content)
    message = _error(folder)
    assert message.startswith(f"{folder / 'val_map.txt'}:2: {image}: not a readable image")
    assert not list((folder.parent / "cache").glob("*"))  # nothing half-written stays


def test_empty_val_map(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "imagenet")
    (folder / "val_map.txt").write_text("\n\n")
    assert _error(folder) == f"{folder / 'val_map.txt'}: lists no images; one '<file> <label>' " + (
        "line per image"
    )


@pytest.mark.parametrize(
    "specs",
    [
        [Spec("x", np.dtype(np.float32), (1, 3, 299, 299))],
        [Spec("x", np.dtype(np.float16), (1, 3, 224, 224))],
        [Spec("x", np.dtype(np.float32), (1, 224, 224, 3))],
        [IMAGE_INPUT, Spec("y", np.dtype(np.float32), (1, 3, 224, 224))],
    ],
    ids=["299", "fp16", "nhwc", "two-inputs"],
)
def test_the_model_must_take_nchw_224_float32(tmp_path: Path, specs: list[Spec]) -> None:
    # Checked before the folder is read: this one does not exist.
    with pytest.raises(ConfigError, match=r"gives one float32\[N, 3, 224, 224\] input"):
        ImagenetSource(tmp_path / "nowhere", specs)


# --- configuration and labels ---------------------------------------------------------------


def test_imagenet_source_needs_dir_and_always_has_labels() -> None:
    with pytest.raises(ValueError, match="dir: required when source is 'npy' or 'imagenet'"):
        DataConfig(source="imagenet")
    assert DataConfig(source="imagenet", dir="data/imagenet").has_labels
    assert not DataConfig(source="npy", dir="d").has_labels
    assert DataConfig(source="npy", dir="d", labels=True).has_labels


@pytest.mark.parametrize(
    ("shapes", "offset"),
    [
        ([("batch",), ("batch", 1001)], 1),  # MLPerf's file: ArgMax:0 first, then the scores
        ([(1, 1001)], 1),
        ([(1, 1000)], 0),
        ([(1, 1), (1, 1000)], 0),  # an ArgMax kept as [N, 1] is not the class count
    ],
)
def test_imagenet_label_offset_follows_the_class_count(
    shapes: list[tuple[int | str, ...]], offset: int
) -> None:
    assert label_offset("imagenet", shapes) == offset


@pytest.mark.parametrize("shapes", [[(1, 10)], [("batch",)], [(1, "classes")]])
def test_imagenet_labels_need_1000_or_1001_classes(shapes: list[tuple[int | str, ...]]) -> None:
    with pytest.raises(ConfigError, match=r"needs a \[N, 1000\] or \[N, 1001\]"):
        label_offset("imagenet", shapes)


def test_other_sources_have_no_offset() -> None:
    assert label_offset("npy", [(1, 1001)]) == 0


def test_argmax_of_the_1001_class_model_minus_one_is_the_label() -> None:
    # ArgMax:0 outputs (class indices) of three images labelled 4, 0 and 999.
    outputs = {0: np.array([5]), 1: np.array([1]), 2: np.array([1000])}
    labels = {0: 4, 1: 0, 2: 999}
    assert label_accuracy(outputs, labels, label_offset=1)["top1"] == 1.0
    assert label_accuracy(outputs, labels, label_offset=0)["top1"] == 0.0
