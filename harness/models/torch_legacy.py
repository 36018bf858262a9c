"""Tensors from a torch state dict in torch's legacy (non-zip) pickle format, read without torch.

The format, as facts: five consecutive pickles and raw data. (1) a magic number, (2) the
protocol version 1001, (3) ``sys_info`` (byte order and type sizes), (4) the state dict, whose
tensors are ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)`` calls with
each storage a persistent id ``("storage", <storage class>, key, location, numel, view)``,
(5) the list of storage keys; then, per key in that order, the element count as a little-endian
int64 and the elements' bytes.

The bytes are trusted only after their size and sha256 match the pinned values, and even then
the unpickler resolves nothing but the four globals the format needs, each to a stand-in here:
no torch code, and no other code, can run.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import struct
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.lib.stride_tricks import as_strided

from harness.errors import ModelError

MAGIC: Final = 0x1950A86A20F9469CFC6C
PROTOCOL: Final = 1001
# The storage classes the format may name, and their element types (little-endian).
_STORAGE_DTYPES: Final[Mapping[str, np.dtype[Any]]] = {
    "FloatStorage": np.dtype("<f4"),
    "LongStorage": np.dtype("<i8"),
}


@dataclass(frozen=True)
class _StorageClass:
    """What ``torch.<X>Storage`` resolves to: the element type of its data."""

    dtype: np.dtype[Any]


@dataclass(frozen=True)
class _StorageRef:
    """A persistent id's storage: its key and element count; the data follows the pickles."""

    key: str
    dtype: np.dtype[Any]
    numel: int


@dataclass(frozen=True)
class _TensorRef:
    """A ``_rebuild_tensor_v2`` call, recorded: which storage, where and how it is viewed."""

    storage: _StorageRef
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]


def _rebuild_tensor_v2(
    storage: object, offset: object, size: object, stride: object, *_: object
) -> _TensorRef:
    if not isinstance(storage, _StorageRef):
        raise pickle.UnpicklingError("a tensor's storage is not a persistent storage id")
    return _TensorRef(storage, _int(offset), _ints(size), _ints(stride))


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise pickle.UnpicklingError(f"expected a non-negative integer, got {value!r}")
    return value


def _ints(values: object) -> tuple[int, ...]:
    if not isinstance(values, tuple):
        raise pickle.UnpicklingError(f"expected a tuple of integers, got {type(values).__name__}")
    return tuple(_int(v) for v in values)


_GLOBALS: Final[Mapping[tuple[str, str], Callable[..., object] | type | _StorageClass]] = {
    ("collections", "OrderedDict"): OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    **{("torch", name): _StorageClass(dtype) for name, dtype in _STORAGE_DTYPES.items()},
}


class _Unpickler(pickle.Unpickler):
    """Resolves only the format's four globals, to the stand-ins above."""

    def find_class(self, module: str, name: str) -> Any:
        found = _GLOBALS.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"global {module}.{name} is not allowed")
        return found

    def persistent_load(self, pid: Any) -> _StorageRef:
        if not (isinstance(pid, tuple) and len(pid) == 6 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r:.80}")
        _, cls, key, _location, numel, view = pid
        if not isinstance(cls, _StorageClass) or not isinstance(key, str) or view is not None:
            raise pickle.UnpicklingError(f"unexpected storage id {pid!r:.80}")
        return _StorageRef(key, cls.dtype, _int(numel))


def read_pinned(path: Path, *, size_bytes: int, sha256: str) -> bytes:
    """A file's bytes, only when its size and sha256 are the pinned ones.

    The size is checked before anything is read, so a large file is never loaded.

    Raises:
        ModelError: Naming the file, what differs and the fix.
    """
    try:
        actual = path.stat().st_size
        if actual != size_bytes:
            raise ModelError(
                f"{path}: {actual} bytes, the pinned file has {size_bytes}; reinstall the "
                "package that ships it"
            )
        data = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"{path}: cannot read the weights ({exc.strerror})") from None
    digest = hashlib.sha256(data).hexdigest()
    if len(data) != size_bytes or digest != sha256:
        raise ModelError(
            f"{path}: sha256 {digest} is not the pinned {sha256}; the file was altered, "
            "reinstall the package that ships it"
        )
    return data


def load_state_dict(data: bytes) -> dict[str, np.ndarray]:
    """The state dict's tensors as contiguous numpy arrays, in the file's order.

    Raises:
        ModelError: If the bytes are not this format, name another global, or hold tensors
            that do not fit their storages.
    """
    stream = io.BytesIO(data)
    try:
        tensors, keys = _pickles(stream)
        storages = _storages(stream, keys, _referenced(tensors))
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, struct.error) as exc:
        raise ModelError(f"torch legacy state dict: {exc}") from None
    if stream.tell() != len(data):
        raise ModelError(f"torch legacy state dict: {len(data) - stream.tell()} trailing bytes")
    return {name: _view(name, ref, storages[ref.storage.key]) for name, ref in tensors.items()}


def _pickles(stream: io.BytesIO) -> tuple[dict[str, _TensorRef], list[str]]:
    if _Unpickler(stream).load() != MAGIC:
        raise pickle.UnpicklingError("not a torch legacy file (magic number)")
    if _Unpickler(stream).load() != PROTOCOL:
        raise pickle.UnpicklingError(f"protocol version is not {PROTOCOL}")
    info = _Unpickler(stream).load()
    if not isinstance(info, dict) or not info.get("little_endian"):
        raise pickle.UnpicklingError("sys_info is not little-endian")
    state = _Unpickler(stream).load()
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, _TensorRef) for k, v in state.items()
    ):
        raise pickle.UnpicklingError("the state dict is not a mapping of names to tensors")
    keys = _Unpickler(stream).load()
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise pickle.UnpicklingError("the storage keys are not a list of strings")
    return dict(state), keys


def _referenced(tensors: Mapping[str, _TensorRef]) -> dict[str, _StorageRef]:
    refs: dict[str, _StorageRef] = {}
    for ref in tensors.values():
        if refs.setdefault(ref.storage.key, ref.storage) != ref.storage:
            raise ValueError(f"storage {ref.storage.key} is declared twice, differently")
    return refs


def _storages(
    stream: io.BytesIO, keys: list[str], refs: Mapping[str, _StorageRef]
) -> dict[str, np.ndarray]:
    if sorted(keys) != sorted(refs):
        raise ValueError("the storage keys do not match the tensors' storages")
    storages: dict[str, np.ndarray] = {}
    for key in keys:
        ref = refs[key]
        (count,) = struct.unpack("<q", stream.read(8))
        if count != ref.numel:
            raise ValueError(f"storage {key}: {count} elements, declared {ref.numel}")
        raw = stream.read(count * ref.dtype.itemsize)
        if len(raw) != count * ref.dtype.itemsize:
            raise ValueError(f"storage {key}: truncated")
        storages[key] = np.frombuffer(raw, dtype=ref.dtype)
    return storages


def _view(name: str, ref: _TensorRef, storage: np.ndarray) -> np.ndarray:
    """The tensor's elements, copied out of its storage by shape, stride and offset."""
    if len(ref.shape) != len(ref.stride):
        raise ModelError(f"torch legacy state dict: {name}: shape and stride differ in rank")
    pairs = zip(ref.shape, ref.stride, strict=True)
    last = ref.offset + sum((n - 1) * s for n, s in pairs if n > 0)
    if 0 in ref.shape or last >= storage.size:
        if 0 not in ref.shape:
            raise ModelError(f"torch legacy state dict: {name}: reaches past its storage")
        return np.zeros(ref.shape, dtype=storage.dtype)
    size = storage.dtype.itemsize
    view = as_strided(
        storage[ref.offset :],
        shape=ref.shape,
        strides=tuple(s * size for s in ref.stride),
        writeable=False,
    )
    return np.ascontiguousarray(view).astype(storage.dtype.newbyteorder("="), copy=False)
