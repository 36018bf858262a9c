"""Dataset labels for accuracy scoring: label files in sample order, a model's label offset."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from harness.config import DataConfig
from harness.datasets.photo_table import photo_labels
from harness.errors import ConfigError

LABEL_FILES = ("val_map.txt", "labels.txt", "labels.npy")
# A sample's label: its one class, or the set of classes that each count as correct.
Label = int | frozenset[int]


def scenario_labels(data: DataConfig) -> dict[int, Label]:
    """The labels of a labelled data source by sample index: the photos' class sets, or files.

    Raises:
        ConfigError: As :func:`load_labels`, for a directory without readable labels.
    """
    if data.source == "photos":
        return dict(photo_labels())
    return dict(labels_by_index(load_labels(Path(str(data.dir)))))


def load_labels(directory: Path, *, count: int | None = None) -> dict[str, int]:
    """A dataset directory's labels, in sample (QSL) order.

    ``val_map.txt`` (ImageNet style, ``<file> <label>`` per line) gives labels keyed by file
    name, in line order, which is the sample order (as in MLPerf's ImageNet loader); else
    ``labels.txt`` (one integer per line) or ``labels.npy`` (1-D integers) give labels keyed
    by sample index ``"0"``, ``"1"``, … for ``.npy`` inputs.

    Raises:
        ConfigError: If none of those files exists, one is malformed, or it holds a number of
            labels other than ``count``.
    """
    for name in LABEL_FILES:
        path = directory / name
        if path.is_file():
            labels = _LOADERS[name](path)
            if count is not None and len(labels) != count:
                raise ConfigError(f"{path}: holds {len(labels)} labels, the data has {count}")
            return labels
    raise ConfigError(
        f"{directory}: no labels; expected val_map.txt ('<file> <label>' per line, ImageNet "
        "style) or labels.txt / labels.npy (one integer label per sample, in .npy order)"
    )


def labels_by_index(labels: Mapping[str, int]) -> dict[int, int]:
    """Labels keyed by sample index (their order), as label_accuracy takes them."""
    return dict(enumerate(labels.values()))


# ImageNet's labels are 0-999; MLPerf's ResNet-50 (resnet50_v1.onnx) scores 1001 classes whose
# class 0 is "background", so its ArgMax:0 minus 1 is the label (the reference's offset -1).
IMAGENET_LABEL_OFFSETS = {1000: 0, 1001: 1}


def label_offset(source: str, output_shapes: Sequence[Sequence[int | str | None]]) -> int:
    """The label offset (see :func:`label_accuracy`) for a data source and model outputs.

    For ``imagenet`` it follows the class count: the last dimension of the first 2-D output
    wider than 1, which for MLPerf's file (outputs ``ArgMax:0`` [N], ``softmax_tensor:0``
    [N, 1001]) is the scores, not the class index. Other sources' labels are in the model's
    own classes: 0.

    Raises:
        ConfigError: If an imagenet model has no output of 1000 or 1001 classes.
    """
    if source != "imagenet":
        return 0
    classes = next((s[-1] for s in output_shapes if len(s) == 2 and s[-1] != 1), None)
    offset = IMAGENET_LABEL_OFFSETS.get(classes) if isinstance(classes, int) else None
    if offset is None:
        shapes = ", ".join(str(list(s)) for s in output_shapes)
        raise ConfigError(
            f"data.source imagenet: the model's outputs are {shapes}; scoring ImageNet labels "
            "needs a [N, 1000] or [N, 1001] (class 0 background, as MLPerf's) scores output"
        )
    return offset


def _val_map(path: Path) -> dict[str, int]:
    labels: dict[str, int] = {}
    for number, line in _lines(path):
        parts = line.split()
        if len(parts) != 2 or not _is_int(parts[1]):
            raise ConfigError(f"{path}:{number}: expected '<file> <label>', got {line!r}")
        labels[parts[0]] = int(parts[1])
    return labels


def _labels_txt(path: Path) -> dict[str, int]:
    labels: dict[str, int] = {}
    for number, line in _lines(path):
        if not _is_int(line.strip()):
            raise ConfigError(f"{path}:{number}: expected one integer label, got {line!r}")
        labels[str(len(labels))] = int(line)
    return labels


def _labels_npy(path: Path) -> dict[str, int]:
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, OSError) as exc:
        raise ConfigError(f"{path}: not a readable .npy array ({exc})") from None
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise ConfigError(f"{path}: holds {array.dtype}{list(array.shape)}, expected int[N]")
    return {str(i): int(v) for i, v in enumerate(array)}


def _lines(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of the non-blank lines."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read labels ({exc})") from None
    return [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


_LOADERS = {"val_map.txt": _val_map, "labels.txt": _labels_txt, "labels.npy": _labels_npy}
