"""The FP32 reference cache (issue #11): keyed by what the outputs follow from, not by names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from harness.models.prepare import reference_outputs


class FakeSession:
    """A reference session over one input `x` of shape (1, seq); output: the row's sum."""

    def __init__(self, seq: int) -> None:
        self.inputs = (SimpleNamespace(name="x", shape=(1, seq), dtype=np.dtype(np.float32)),)
        self.providers = ("CPUExecutionProvider",)
        self.settings: dict[str, Any] = {}
        self.runs = 0

    def run(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        self.runs += 1
        return [feeds["x"].sum(axis=1, keepdims=True)]


class FakeSource:
    """Sample i is `i * scale` in every position, like a .npy file regenerated with `scale`."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    def fill(self, indices: Sequence[int], out: Mapping[str, np.ndarray]) -> None:
        for row, index in enumerate(indices):
            out["x"][row] = index * self.scale


def _prepared(session: FakeSession) -> Any:
    return SimpleNamespace(source=SimpleNamespace(sha256="ab" * 32), reference=session)


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BEYOND_TOPS_CACHE", str(tmp_path))
    return tmp_path / "references"


KEY = "npy:data/bert:0:4"  # the same name for both: what the old key was made of


def test_the_same_model_and_data_compute_the_reference_once(cache: Path) -> None:
    session = FakeSession(seq=8)
    first = reference_outputs(_prepared(session), FakeSource(), [0, 1, 2], data_key=KEY)
    again = reference_outputs(_prepared(session), FakeSource(), [0, 1, 2], data_key=KEY)
    assert session.runs == 3
    assert {i: float(v[0]) for i, v in again.items()} == {0: 0.0, 1: 8.0, 2: 16.0}
    assert {i: v.tolist() for i, v in first.items()} == {i: v.tolist() for i, v in again.items()}
    assert len(list(cache.glob("*.npz"))) == 1


def test_other_dims_are_another_reference(cache: Path) -> None:
    """bert-singlestream (seq 384) and bert-seq128 share model, data dir and seed."""
    long, short = FakeSession(seq=384), FakeSession(seq=128)
    reference_outputs(_prepared(long), FakeSource(), [1], data_key=KEY)
    got = reference_outputs(_prepared(short), FakeSource(), [1], data_key=KEY)
    assert short.runs == 1
    assert float(got[1][0]) == 128.0
    assert len(list(cache.glob("*.npz"))) == 2


def test_regenerated_npy_data_is_another_reference(cache: Path) -> None:
    session = FakeSession(seq=4)
    reference_outputs(_prepared(session), FakeSource(scale=1.0), [2], data_key=KEY)
    got = reference_outputs(_prepared(session), FakeSource(scale=10.0), [2], data_key=KEY)
    assert session.runs == 2
    assert float(got[2][0]) == 80.0


def test_other_indices_or_settings_are_another_reference(cache: Path) -> None:
    session = FakeSession(seq=4)
    reference_outputs(_prepared(session), FakeSource(), [0, 1], data_key=KEY)
    reference_outputs(_prepared(session), FakeSource(), [0, 2], data_key=KEY)
    session.settings = {"graph_optimization_level": "all"}
    reference_outputs(_prepared(session), FakeSource(), [0, 2], data_key=KEY)
    assert session.runs == 6
