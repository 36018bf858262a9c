"""Issue #27: verify reads a bundled token_times.npz as hostile input: one ResultError each."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.bundle.tokens import read_token_times
from harness.errors import ResultError


def _columns(n: int = 3) -> dict[str, np.ndarray]:
    issue = np.arange(n, dtype=np.int64) * 1000
    return {
        "format": np.asarray(1),
        "issue_ns": issue,
        "first_ns": issue + 10,
        "end_ns": issue + 100,
        "tokens": np.full(n, 4, dtype=np.int64),
        "start_ns": issue + 1,
    }


def _write(path: Path, arrays: dict[str, np.ndarray]) -> Path:
    with path.open("wb") as handle:
        np.savez(handle, **arrays)
    return path


def test_the_runners_file_is_read(tmp_path: Path) -> None:
    columns = read_token_times(_write(tmp_path / "t.npz", _columns()))
    assert list(columns["tokens"]) == [4, 4, 4] and set(columns) == {
        "issue_ns",
        "first_ns",
        "end_ns",
        "tokens",
    }


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"format": np.asarray("1")}, "its format is not 1"),
        ({"format": np.asarray(2)}, "its format is not 1"),
        ({"tokens": np.asarray([4, 4, 4], dtype=object)}, "not a token_times.npz"),
        ({"tokens": np.asarray([4.0, 4.0, 4.0])}, "tokens is float64[1d], not int64[1d]"),
        ({"tokens": np.asarray([4, 4], dtype=np.int64)}, "its columns differ in length"),
        ({"tokens": np.asarray([4, -1, 4], dtype=np.int64)}, "a negative token count"),
        ({"extra": np.asarray(1)}, "holds ['end_ns.npy', 'extra.npy'"),
    ],
)
def test_a_hostile_file_is_one_clear_error(
    change: dict[str, np.ndarray], words: str, tmp_path: Path
) -> None:
    path = _write(tmp_path / "t.npz", {**_columns(), **change})
    with pytest.raises(ResultError) as caught:
        read_token_times(path)
    assert str(caught.value).startswith(f"{path}: ") and words in str(caught.value)


def test_not_a_zip_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.npz"
    path.write_bytes(b"not a zip")
    with pytest.raises(ResultError, match=r"not a token_times\.npz"):
        read_token_times(path)
