"""The labelled photos decoded and preprocessed for the QSL (the table: photo_table.py).

Preprocessing is the one EfficientNet-Lite was evaluated with in TensorFlow, as facts: decode
to RGB (a grey photo's channel repeated), a centred square of 224/256 of the shorter side
(offset ``(side - crop + 1) // 2``), a bicubic resize to 224x224, then ``(pixel - 127) / 128``;
HWC to CHW. Each photo gives ``VIEWS`` samples: that crop and its mirror image, then the
centred square of the whole shorter side and its mirror; a mirror shows the same object.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np

from harness.datasets.imagenet import decode, resize_bicubic
from harness.datasets.photo_table import PHOTOS, VIEWS, Photo
from harness.datasets.samples import SampleSpec
from harness.errors import ConfigError

SIDE: Final = 224
CROP_FRACTION: Final = 224 / 256
PIXEL_MEAN: Final = 127.0
PIXEL_SCALE: Final = 128.0
SAMPLE_SHAPE: Final = (3, SIDE, SIDE)
MAX_PHOTO_BYTES: Final = 4 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class PhotoSet:
    """The preprocessed views, [N, 3, 224, 224] float32, and each sample's acceptable classes."""

    array: np.ndarray
    labels: tuple[frozenset[int], ...]
    names: tuple[str, ...]


def photo_path(photo: Photo) -> Path:
    """Where the installed package keeps the photo.

    Raises:
        ConfigError: If the package is not installed, saying which to install.
    """
    spec = importlib.util.find_spec(photo.package)
    if spec is None or spec.origin is None:
        raise ConfigError(
            f"data.source photos: photo {photo.name} ships with the package {photo.package}, "
            "which is not installed; run `pip install -e '.[real]'`"
        )
    return Path(spec.origin).parent / photo.member


def load_photos(photos: Sequence[Photo] = PHOTOS) -> PhotoSet:
    """Every photo's views, preprocessed, with their label sets, in table order.

    Raises:
        ConfigError: Naming a photo that is missing, too large or not decodable.
    """
    arrays, labels, names = [], [], []
    for photo in photos:
        rgb = _decode(photo_path(photo))
        for view, sample in zip(VIEWS, views(rgb), strict=True):
            arrays.append(sample)
            labels.append(frozenset(photo.classes))
            names.append(f"{photo.name} ({view})")
    return PhotoSet(array=np.stack(arrays), labels=tuple(labels), names=tuple(names))


def _decode(path: Path) -> np.ndarray:
    try:
        if path.stat().st_size > MAX_PHOTO_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_PHOTO_BYTES} bytes; not a shipped photo")
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the photo ({exc.strerror})") from None
    return np.ascontiguousarray(decode(data, where=str(path))[:, :, ::-1])


def views(rgb: np.ndarray) -> list[np.ndarray]:
    """The photo's samples, in ``VIEWS`` order, each [3, 224, 224] float32."""
    short = min(rgb.shape[:2])
    crops = [_square(rgb, int(CROP_FRACTION * short)), _square(rgb, short)]
    out = []
    for crop in crops:
        sample = preprocess(crop)
        out += [sample, np.ascontiguousarray(sample[:, :, ::-1])]
    return out


def _square(rgb: np.ndarray, side: int) -> np.ndarray:
    top = (rgb.shape[0] - side + 1) // 2
    left = (rgb.shape[1] - side + 1) // 2
    return rgb[top : top + side, left : left + side]


def preprocess(square: np.ndarray) -> np.ndarray:
    """An RGB square (uint8 HWC) as the model's input: bicubic to 224, scaled, CHW."""
    resized = resize_bicubic(square, SIDE)
    scaled = (resized.astype(np.float32) - np.float32(PIXEL_MEAN)) / np.float32(PIXEL_SCALE)
    return np.ascontiguousarray(scaled.transpose(2, 0, 1))


class PhotoSource:
    """The labelled photos' views as the QSL's samples, for a [N, 3, 224, 224] float32 input."""

    def __init__(self, specs: Sequence[SampleSpec]) -> None:
        self._name = _check_input(specs)
        photos = load_photos()
        self.total_count = len(photos.labels)
        self._array = photos.array

    def fill(self, indices: Sequence[int], out: Mapping[str, np.ndarray]) -> None:
        """Copy the requested views."""
        np.take(self._array, list(indices), axis=0, out=out[self._name][: len(indices)])


def _check_input(specs: Sequence[SampleSpec]) -> str:
    if len(specs) != 1:
        raise ConfigError(
            f"data.source photos: the model has {len(specs)} inputs; the photos feed one "
            "[N, 3, 224, 224] float32 image input"
        )
    spec = specs[0]
    if spec.dtype != np.float32 or tuple(spec.shape[1:]) != SAMPLE_SHAPE:
        raise ConfigError(
            f"data.source photos: input {spec.name} is {spec.dtype}{list(spec.shape)}; the "
            "photos are float32 [N, 3, 224, 224], scaled (pixel - 127) / 128"
        )
    return spec.name
