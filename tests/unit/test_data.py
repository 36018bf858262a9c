"""QSL sample data: seeded synthetic tensors and .npy directories."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.datasets.samples import NpySource, SyntheticSource, npy_file_name
from harness.errors import ConfigError


@dataclass(frozen=True)
class Spec:
    """Stand-in for a session's input spec: name, element type and shape (batch first)."""

    name: str
    dtype: np.dtype[Any]
    shape: tuple[int, ...]


IMAGE = Spec("input", np.dtype(np.float32), (1, 3, 8, 8))
SEQ = 16
BERT = (
    Spec("input_ids", np.dtype(np.int64), (1, SEQ)),
    Spec("attention_mask", np.dtype(np.int64), (1, SEQ)),
    Spec("token_type_ids", np.dtype(np.int64), (1, SEQ)),
)


def _buffers(specs: Sequence[Spec], rows: int) -> dict[str, np.ndarray]:
    """Caller-owned arrays, pre-filled with a sentinel so unwritten rows are visible."""
    return {s.name: np.full((rows, *s.shape[1:]), 77, dtype=s.dtype) for s in specs}


def _synthetic(
    specs: Sequence[Spec], indices: Sequence[int], *, seed: int = 0
) -> dict[str, np.ndarray]:
    out = _buffers(specs, len(indices))
    SyntheticSource(specs, total_count=1000, seed=seed).fill(indices, out)
    return out


# --- SyntheticSource --------------------------------------------------------------------------


def test_synthetic_total_count() -> None:
    assert SyntheticSource([IMAGE], total_count=123, seed=0).total_count == 123


def test_synthetic_same_seed_and_index_is_identical() -> None:
    first = _synthetic([IMAGE], [5], seed=3)["input"][0]
    second = _synthetic([IMAGE], [5], seed=3)["input"][0]
    np.testing.assert_array_equal(first, second)
    assert first.shape == (3, 8, 8)
    assert first.dtype == np.float32


def test_synthetic_sample_does_not_depend_on_its_batch_mates() -> None:
    alone = _synthetic([IMAGE, *BERT], [7], seed=1)
    batch = _synthetic([IMAGE, *BERT], [0, 999, 7, 3], seed=1)
    reordered = _synthetic([IMAGE, *BERT], [7, 2], seed=1)
    for name in alone:
        np.testing.assert_array_equal(alone[name][0], batch[name][2])
        np.testing.assert_array_equal(alone[name][0], reordered[name][0])


def test_synthetic_same_index_twice_in_one_call() -> None:
    out = _synthetic([IMAGE], [4, 4])
    np.testing.assert_array_equal(out["input"][0], out["input"][1])


def test_synthetic_different_seed_or_index_differs() -> None:
    base = _synthetic([IMAGE], [5], seed=0)["input"][0]
    other_seed = _synthetic([IMAGE], [5], seed=1)["input"][0]
    other_index = _synthetic([IMAGE], [6], seed=0)["input"][0]
    assert not np.array_equal(base, other_seed)
    assert not np.array_equal(base, other_index)


def test_synthetic_float_values_look_standard_normal() -> None:
    out = _synthetic([Spec("x", np.dtype(np.float32), (1, 64, 64))], [0])["x"][0]
    assert np.all(np.isfinite(out))
    assert abs(float(out.mean())) < 0.1
    assert 0.9 < float(out.std()) < 1.1


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_synthetic_float_dtypes(dtype: type[np.floating[Any]]) -> None:
    spec = Spec("x", np.dtype(dtype), (1, 4))
    out = _buffers([spec], 1)
    SyntheticSource([spec], total_count=1, seed=0).fill([0], out)
    assert out["x"].dtype == dtype
    assert not np.any(out["x"] == 77)


def test_synthetic_bert_inputs() -> None:
    out = _synthetic(BERT, [0, 1, 2])
    ids, mask, types = out["input_ids"], out["attention_mask"], out["token_type_ids"]
    for array in (ids, mask, types):
        assert array.dtype == np.int64
        assert array.shape == (3, SEQ)
    assert ids.min() >= 0
    assert ids.max() < 100
    assert len(np.unique(ids)) > 10  # random, not constant
    np.testing.assert_array_equal(mask, np.ones((3, SEQ), dtype=np.int64))
    expected_types = np.array([0] * (SEQ // 2) + [1] * (SEQ // 2), dtype=np.int64)
    for row in types:
        np.testing.assert_array_equal(row, expected_types)


def test_synthetic_segment_ids_and_int32() -> None:
    specs = [
        Spec("segment_ids", np.dtype(np.int32), (1, 5)),
        Spec("ids", np.dtype(np.int32), (1, 50)),
        Spec("input_mask", np.dtype(np.int32), (1, 5)),
    ]
    out = _synthetic(specs, [0])
    np.testing.assert_array_equal(out["segment_ids"][0], [0, 0, 1, 1, 1])
    assert out["ids"].dtype == np.int32
    assert out["ids"].min() >= 0 and out["ids"].max() < 100
    np.testing.assert_array_equal(out["input_mask"][0], np.ones(5, dtype=np.int32))


def test_synthetic_bool_inputs_are_true() -> None:
    spec = Spec("flags", np.dtype(np.bool_), (1, 3))
    out = {"flags": np.zeros((1, 3), dtype=np.bool_)}
    SyntheticSource([spec], total_count=1, seed=0).fill([0], out)
    assert out["flags"].tolist() == [[True, True, True]]


def test_synthetic_fills_only_requested_rows() -> None:
    out = _buffers([IMAGE], 4)
    SyntheticSource([IMAGE], total_count=10, seed=0).fill([1, 2], out)
    assert not np.any(out["input"][:2] == 77)
    assert np.all(out["input"][2:] == 77)


# --- NpySource --------------------------------------------------------------------------------


def _save(directory: Path, name: str, array: np.ndarray) -> Path:
    path = directory / npy_file_name(name)
    np.save(path, array)
    return path


def test_npy_file_name() -> None:
    assert npy_file_name("input_tensor:0") == "input_tensor:0.npy"
    assert npy_file_name("bert/input_ids") == "bert_input_ids.npy"


def test_npy_source_reads_one_file_per_input(tmp_path: Path) -> None:
    spec = Spec("input_tensor:0", np.dtype(np.float32), (1, 3, 4))
    data = np.arange(5 * 3 * 4, dtype=np.float32).reshape(5, 3, 4)
    path = _save(tmp_path, spec.name, data)
    assert path == tmp_path / "input_tensor:0.npy"
    source = NpySource(tmp_path, [spec])
    assert source.total_count == 5
    out = _buffers([spec], 4)
    source.fill([4, 0, 2], out)
    np.testing.assert_array_equal(out[spec.name][:3], data[[4, 0, 2]])
    assert np.all(out[spec.name][3] == 77)  # rows past the request are untouched


def test_npy_source_several_inputs(tmp_path: Path) -> None:
    ids = np.arange(3 * SEQ, dtype=np.int64).reshape(3, SEQ)
    for spec in BERT:
        _save(tmp_path, spec.name, ids + len(spec.name))
    source = NpySource(tmp_path, BERT)
    assert source.total_count == 3
    out = _buffers(BERT, 2)
    source.fill([2, 1], out)
    for spec in BERT:
        np.testing.assert_array_equal(out[spec.name], (ids + len(spec.name))[[2, 1]])


def _npy_error(directory: Path, specs: Sequence[Spec]) -> str:
    with pytest.raises(ConfigError) as info:
        NpySource(directory, specs)
    assert info.value.exit_code == 2
    message = str(info.value)
    assert "\n" not in message
    return message


def test_npy_missing_file(tmp_path: Path) -> None:
    message = _npy_error(tmp_path, [IMAGE])
    assert message == f"{tmp_path / 'input.npy'}: missing; data.dir needs one .npy per model input"


def test_npy_missing_directory(tmp_path: Path) -> None:
    message = _npy_error(tmp_path / "nope", [IMAGE])
    assert message.startswith(f"{tmp_path / 'nope' / 'input.npy'}: missing")


def test_npy_wrong_shape(tmp_path: Path) -> None:
    path = _save(tmp_path, "input", np.zeros((2, 3, 8, 9), dtype=np.float32))
    message = _npy_error(tmp_path, [IMAGE])
    assert message == f"{path}: holds float32[2, 3, 8, 9], the model needs float32[N, 3, 8, 8]"


def test_npy_missing_sample_axis(tmp_path: Path) -> None:
    path = _save(tmp_path, "input", np.zeros((3, 8, 8), dtype=np.float32))
    message = _npy_error(tmp_path, [IMAGE])
    assert message == f"{path}: holds float32[3, 8, 8], the model needs float32[N, 3, 8, 8]"


def test_npy_wrong_dtype(tmp_path: Path) -> None:
    path = _save(tmp_path, "input", np.zeros((2, 3, 8, 8), dtype=np.float64))
    message = _npy_error(tmp_path, [IMAGE])
    assert message == f"{path}: holds float64[2, 3, 8, 8], the model needs float32[N, 3, 8, 8]"


def test_npy_differing_counts(tmp_path: Path) -> None:
    _save(tmp_path, "input_ids", np.zeros((4, SEQ), dtype=np.int64))
    _save(tmp_path, "attention_mask", np.zeros((4, SEQ), dtype=np.int64))
    _save(tmp_path, "token_type_ids", np.zeros((3, SEQ), dtype=np.int64))
    message = _npy_error(tmp_path, BERT)
    assert message == (
        f"{tmp_path}: inputs hold different sample counts "
        "{'input_ids': 4, 'attention_mask': 4, 'token_type_ids': 3}"
    )


@pytest.mark.parametrize(
    "content",
    [b"this is text, not an array\n", b"\x93NUMPY\x01\x00garbage"],
    ids=["text", "bad-header"],
)
def test_npy_not_an_array(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "input.npy"
    path.write_bytes(content)
    assert _npy_error(tmp_path, [IMAGE]).startswith(f"{path}: not a readable .npy array (")


def test_npy_truncated_data(tmp_path: Path) -> None:
    path = _save(tmp_path, "input", np.zeros((20, 3, 8, 8), dtype=np.float32))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert _npy_error(tmp_path, [IMAGE]).startswith(f"{path}: not a readable .npy array (")


def test_npy_object_array_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "input.npy"
    np.save(path, np.array([[1, "a"]], dtype=object), allow_pickle=True)
    assert _npy_error(tmp_path, [IMAGE]).startswith(f"{path}: not a readable .npy array (")


def test_npy_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "input.npy"
    path.write_bytes(b"")
    assert _npy_error(tmp_path, [IMAGE]).startswith(f"{path}: ")
