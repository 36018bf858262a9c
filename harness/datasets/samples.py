"""Sample data for the QSL: seeded synthetic tensors or `.npy` arrays from a directory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harness.errors import ConfigError

# Synthetic integer inputs stay below this so that embedding lookups of any vocabulary are valid.
_MAX_SYNTHETIC_ID = 100


class SampleSpec(Protocol):
    """A model input: its name, element type and shape (axis 0 is the batch)."""

    @property
    def name(self) -> str:
        """The input's name in the model."""

    @property
    def dtype(self) -> np.dtype[Any]:
        """Its element type."""

    @property
    def shape(self) -> tuple[int, ...]:
        """Its full shape, batch first."""


class SampleSource(Protocol):
    """Produces samples by index, writing them into caller-owned arrays."""

    total_count: int

    def fill(self, indices: Sequence[int], out: Mapping[str, np.ndarray]) -> None:
        """Write sample `indices[i]` of each input into row i of `out[name]`."""


class SyntheticSource:
    """Seeded random samples; sample i is the same for a given seed whatever else is loaded."""

    def __init__(self, specs: Sequence[SampleSpec], *, total_count: int, seed: int) -> None:
        self.total_count = total_count
        self._specs = tuple(specs)
        self._seed = seed

    def fill(self, indices: Sequence[int], out: Mapping[str, np.ndarray]) -> None:
        """Generate each requested sample from its own seeded stream."""
        for row, index in enumerate(indices):
            rng = np.random.default_rng([self._seed, index])
            for spec in self._specs:
                out[spec.name][row] = _synthetic(rng, spec)


class NpySource:
    """Samples from `<dir>/<input name>.npy`, one array per input with samples on axis 0."""

    def __init__(self, directory: Path, specs: Sequence[SampleSpec]) -> None:
        self._arrays = {spec.name: _load_npy(directory, spec) for spec in specs}
        counts = {name: len(array) for name, array in self._arrays.items()}
        if len(set(counts.values())) != 1:
            raise ConfigError(f"{directory}: inputs hold different sample counts {counts}")
        self.total_count = next(iter(counts.values()))

    def fill(self, indices: Sequence[int], out: Mapping[str, np.ndarray]) -> None:
        """Copy the requested rows."""
        for name, array in self._arrays.items():
            np.take(array, list(indices), axis=0, out=out[name][: len(indices)])


def npy_file_name(input_name: str) -> str:
    """The file that holds an input's samples (path separators replaced)."""
    return input_name.replace("/", "_") + ".npy"


def _synthetic(rng: np.random.Generator, spec: SampleSpec) -> np.ndarray:
    shape = spec.shape[1:]
    kind = spec.dtype.kind
    if kind == "f":
        return rng.standard_normal(shape, dtype=np.float32).astype(spec.dtype, copy=False)
    if kind == "b":
        return np.ones(shape, dtype=spec.dtype)
    lowered = spec.name.lower()
    if "mask" in lowered:
        return np.ones(shape, dtype=spec.dtype)
    if shape and ("type" in lowered or "segment" in lowered):
        return (np.arange(shape[-1]) >= shape[-1] // 2).astype(spec.dtype) * np.ones(
            shape, spec.dtype
        )
    return rng.integers(0, _MAX_SYNTHETIC_ID, size=shape, dtype=spec.dtype)


def _load_npy(directory: Path, spec: SampleSpec) -> np.ndarray:
    path = directory / npy_file_name(spec.name)
    try:
        array: np.ndarray = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise ConfigError(f"{path}: missing; data.dir needs one .npy per model input") from None
    except (ValueError, EOFError) as exc:
        raise ConfigError(f"{path}: not a readable .npy array ({exc or 'empty file'})") from None
    if array.dtype != spec.dtype or tuple(array.shape[1:]) != tuple(spec.shape[1:]):
        raise ConfigError(
            f"{path}: holds {array.dtype}{list(array.shape)}, the model needs "
            f"{spec.dtype}[N, {', '.join(map(str, spec.shape[1:]))}]"
        )
    return array
