"""ImageNet as MLPerf's reference prepares it for ResNet-50: JPEGs and val_map.txt, cached as NCHW.

The image library is OpenCV (opencv-python-headless), for fidelity: MLPerf's reference
(mlcommons/inference, vision/classification_and_detection/python/dataset.py, `pre_process_vgg`)
decodes with `cv2.imread` and resizes with `cv2.INTER_AREA`, and a benchmark's accuracy is only
comparable when the model sees the same numbers. Pillow decoded a test JPEG to the same pixels,
but its closest filter (BOX) is not OpenCV's area interpolation: resizing that 500x375 image to
341x256, it differed in 89 % of the pixels, by up to 36 levels (mean 4). Decoding goes through
`cv2.imdecode` of the bytes that are hashed, so the cache key and the pixels come from one read;
it applies the EXIF orientation as `cv2.imread` does (the tests compare the two).

The reference's steps, as facts (not its code): BGR to RGB; the shorter side becomes
int(100 * 224 / 87.5) = 256 and the longer int(256 * long / short) (truncated); the centre
crop runs from int((side - 224) / 2) to int((side + 224) / 2) on each axis; float32 minus the
RGB means [123.68, 116.78, 103.94]; HWC to CHW. val_map.txt lines are `<file> <label>` with
0-based ImageNet labels, in sample order.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from harness.datasets.samples import SampleSpec
from harness.errors import ConfigError, ResultError
from harness.paths import cache_root

# Bump when the preprocessing changes what lands in the cache: the key includes it.
PREPROCESSING_VERSION = 1
VAL_MAP = "val_map.txt"
CROP_SIDE = 224
CROP_PERCENT = 87.5  # of the resized shorter side
MEANS_RGB = np.array([123.68, 116.78, 103.94], dtype=np.float32)
SAMPLE_SHAPE = (3, CROP_SIDE, CROP_SIDE)
IMAGENET_CLASSES = 1000  # labels are 0-999
_KEY_CHARS = 32


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One val_map.txt line: an image file (relative to the folder), its label, its line."""

    name: str
    label: int
    line: int


@dataclass(frozen=True, kw_only=True)
class Dataset:
    """A folder's images, preprocessed: ``array`` is [N, 3, 224, 224] float32 (memory-mapped)."""

    directory: Path
    entries: tuple[Entry, ...]
    key: str
    array: np.ndarray
    cache_path: Path

    @property
    def labels(self) -> tuple[int, ...]:
        """The label of each sample, in sample order."""
        return tuple(e.label for e in self.entries)


class ImagenetSource:
    """MLPerf-preprocessed ImageNet samples for a model with one [N, 3, 224, 224] float32 input."""

    def __init__(self, directory: Path, specs: Sequence[SampleSpec]) -> None:
        self._name = _check_input(specs)
        dataset = load_dataset(directory)
        self.total_count = len(dataset.entries)
        self.content_key = dataset.key
        self._array = dataset.array

    def fill(self, indices: Sequence[int], out: Mapping[str, np.ndarray]) -> None:
        """Copy the requested preprocessed images."""
        np.take(self._array, list(indices), axis=0, out=out[self._name][: len(indices)])


def load_dataset(directory: Path, *, cache: Path | None = None) -> Dataset:
    """The folder's images preprocessed, from the cache when its content was seen before.

    The key is a sha256 over the preprocessing version, OpenCV's version, val_map.txt and every
    listed file's name and bytes, so any changed byte gives a new entry; the array is written
    atomically, one .npy per dataset, under ``<cache root>/imagenet/``.

    Raises:
        ConfigError: On a missing folder or val_map.txt, a malformed line, a listed file that
            is missing or that OpenCV cannot decode; each names the file and line.
        ResultError: If the cache cannot be written.
    """
    val_map, entries = read_val_map(directory)
    key = _scan(directory, val_map, entries)
    path = (cache if cache is not None else cache_root() / "imagenet") / f"{key}.npy"
    array = _cached(path, len(entries))
    if array is None:
        _build(path, directory, val_map, entries, key)
        array = _cached(path, len(entries))
        if array is None:
            raise ResultError(f"{path}: the preprocessed images just written cannot be read back")
    return Dataset(directory=directory, entries=entries, key=key, array=array, cache_path=path)


def read_val_map(directory: Path) -> tuple[bytes, tuple[Entry, ...]]:
    """val_map.txt's bytes and its entries, every listed file checked to exist.

    Raises:
        ConfigError: Naming the folder, or val_map.txt and the line at fault.
    """
    if not directory.is_dir():
        raise ConfigError(
            f"{directory}: data.dir is not a directory; source imagenet needs a folder of "
            f"images with {VAL_MAP}"
        )
    path = directory / VAL_MAP
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: missing; source imagenet needs it in data.dir, one '<file> <label>' line "
            "per image"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it ({exc})") from None
    entries = _entries(path, text)
    if not entries:
        raise ConfigError(f"{path}: lists no images; one '<file> <label>' line per image")
    return data, entries


def _entries(path: Path, text: str) -> tuple[Entry, ...]:
    entries: list[Entry] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        entry = _entry(path, number, line)
        if entry.name in seen:
            raise ConfigError(
                f"{path}:{number}: {entry.name} is listed again (first on line "
                f"{seen[entry.name]}); list each image once"
            )
        seen[entry.name] = number
        if not (path.parent / entry.name).is_file():
            raise ConfigError(f"{path}:{number}: {entry.name}: no such file in {path.parent}")
        entries.append(entry)
    return tuple(entries)


def _entry(path: Path, number: int, line: str) -> Entry:
    parts = line.split()
    if len(parts) != 2 or not parts[1].isdigit() or int(parts[1]) >= IMAGENET_CLASSES:
        raise ConfigError(
            f"{path}:{number}: expected '<file> <label>' with a label 0-"
            f"{IMAGENET_CLASSES - 1}, got {line.strip()!r}"
        )
    name = parts[0]
    if Path(name).is_absolute() or ".." in Path(name).parts:
        raise ConfigError(f"{path}:{number}: {name}: must be a path inside data.dir")
    return Entry(name=name, label=int(parts[1]), line=number)


def resized_size(height: int, width: int) -> tuple[int, int]:
    """(height, width) after the reference's resize: the shorter side 256, the aspect kept."""
    side = int(100.0 * CROP_SIDE / CROP_PERCENT)
    if height > width:
        return int(side * height / width), side
    return side, int(side * width / height)


def crop_box(height: int, width: int) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) of the centre 224 x 224 crop of an image of that size."""
    top, bottom = int((height - CROP_SIDE) / 2), int((height + CROP_SIDE) / 2)
    left, right = int((width - CROP_SIDE) / 2), int((width + CROP_SIDE) / 2)
    return top, bottom, left, right


def preprocess(bgr: np.ndarray) -> np.ndarray:
    """A decoded BGR image (HWC uint8) as the reference feeds ResNet-50: CHW float32."""
    rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    height, width = resized_size(*rgb.shape[:2])
    resized = cv2.resize(rgb, (width, height), interpolation=cv2.INTER_AREA)
    top, bottom, left, right = crop_box(height, width)
    image = np.asarray(resized[top:bottom, left:right], dtype=np.float32)
    image -= MEANS_RGB
    return image.transpose(2, 0, 1)


def resize_bicubic(image: np.ndarray, side: int) -> np.ndarray:
    """An HWC uint8 image resized to side x side with OpenCV's bicubic interpolation.

    For harness.datasets.photos, whose model was evaluated with a bicubic resize: OpenCV
    stays behind this module.
    """
    return np.asarray(cv2.resize(image, (side, side), interpolation=cv2.INTER_CUBIC))


def decode(data: bytes, *, where: str) -> np.ndarray:
    """Image bytes as a BGR HWC uint8 array, as `cv2.imread` gives them (EXIF orientation too).

    Raises:
        ConfigError: If OpenCV cannot decode them; ``where`` names the file.
    """
    try:
        image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    except cv2.error:
        image = None  # OpenCV asserts on an empty buffer instead of returning None
    if image is None:
        raise ConfigError(
            f"{where}: not a readable image (OpenCV cannot decode it); replace the file or "
            "remove its line"
        )
    return np.asarray(image)


def _scan(
    directory: Path,
    val_map: bytes,
    entries: Sequence[Entry],
    on_image: Callable[[int, Entry, bytes], None] | None = None,
) -> str:
    """The dataset's content key, reading every listed file once (and handing it on)."""
    digest = hashlib.sha256(
        f"beyond-tops imagenet v{PREPROCESSING_VERSION} opencv {cv2.__version__}\n".encode()
    )
    digest.update(len(val_map).to_bytes(8, "little") + val_map)
    for row, entry in enumerate(entries):
        data = _read(directory, entry)
        digest.update(entry.name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
        if on_image is not None:
            on_image(row, entry, data)
    return digest.hexdigest()[:_KEY_CHARS]


def _read(directory: Path, entry: Entry) -> bytes:
    path = directory / entry.name
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"{directory / VAL_MAP}:{entry.line}: {path}: cannot read it ({exc.strerror})"
        ) from None


def _cached(path: Path, count: int) -> np.ndarray | None:
    """The cached array, or None when there is none or it is not [count, 3, 224, 224] float32."""
    try:
        array: np.ndarray = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None  # absent, or cut short by a crash outside our atomic write: rebuild it
    if array.dtype != np.float32 or array.shape != (count, *SAMPLE_SHAPE):
        return None
    return array


def _build(path: Path, directory: Path, val_map: bytes, entries: Sequence[Entry], key: str) -> None:
    """Preprocess every image into a temporary .npy beside ``path``, then rename it into place."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
    except OSError as exc:
        raise _cache_error(path, exc) from None
    tmp = Path(name)
    try:
        _write_rows(tmp, directory, val_map, entries, key)
        _fsync(tmp)
        tmp.chmod(0o644)
        os.replace(tmp, path)
        _fsync(path.parent)
    except OSError as exc:
        raise _cache_error(path, exc) from None
    finally:
        tmp.unlink(missing_ok=True)  # gone already after the rename


def _cache_error(path: Path, exc: OSError) -> ResultError:
    return ResultError(
        f"{path.parent}: cannot write the preprocessed images ({exc.strerror or exc}); free "
        "space there or point BEYOND_TOPS_CACHE at a writable directory"
    )


def _write_rows(
    tmp: Path, directory: Path, val_map: bytes, entries: Sequence[Entry], key: str
) -> None:
    """Rows go into a memory-mapped file, so a 50,000-image set never sits in memory."""
    rows = np.lib.format.open_memmap(
        tmp, mode="w+", dtype=np.float32, shape=(len(entries), *SAMPLE_SHAPE)
    )
    if hasattr(os, "posix_fallocate"):  # a full disk is then an OSError here, not a SIGBUS later
        with tmp.open("r+b") as handle:
            os.posix_fallocate(handle.fileno(), 0, tmp.stat().st_size)

    def write_row(row: int, entry: Entry, data: bytes) -> None:
        where = f"{directory / VAL_MAP}:{entry.line}: {directory / entry.name}"
        rows[row] = preprocess(decode(data, where=where))

    if _scan(directory, val_map, entries, write_row) != key:
        raise ConfigError(f"{directory}: files changed while being preprocessed; run again")
    rows.flush()


def _fsync(path: Path) -> None:
    """Flush a file, or a directory's entries, to disk (where the platform can)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the data itself is synced
    finally:
        os.close(fd)


def _check_input(specs: Sequence[SampleSpec]) -> str:
    """The name of the model's one image input, which must take [N, 3, 224, 224] float32."""
    if len(specs) == 1:
        spec = specs[0]
        if spec.dtype == np.float32 and tuple(spec.shape[1:]) == SAMPLE_SHAPE:
            return spec.name
    found = ", ".join(f"{s.name} {s.dtype}{list(s.shape)}" for s in specs)
    raise ConfigError(
        f"data.source imagenet: the model's inputs are {found}; MLPerf's ImageNet preprocessing "
        f"gives one float32[N, 3, {CROP_SIDE}, {CROP_SIDE}] input (NCHW; where the sides are "
        "symbolic, set model.dims height and width to 224)"
    )
