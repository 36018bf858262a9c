"""harness.models.modelfile: a model path is a regular file, hashed bounded with progress."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from harness import foreign
from harness.errors import ModelError
from harness.models import modelfile


def test_a_large_model_prints_one_progress_line_per_gib_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(foreign, "PROGRESS_EVERY_BYTES", 4 * foreign.HASH_CHUNK_BYTES)
    monkeypatch.setattr(modelfile, "GIB", 4 * foreign.HASH_CHUNK_BYTES)  # a "GiB" of 16 MiB
    model = tmp_path / "big.onnx"
    data = os.urandom(1024) * (50 * 1024)  # 50 MiB: three whole "GiB"
    model.write_bytes(data)
    assert modelfile.file_sha256(model) == hashlib.sha256(data).hexdigest()
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"hashing {model}: {n} of 3 GiB" for n in (1, 2, 3)]


def test_a_model_over_the_bound_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(modelfile, "MAX_MODEL_BYTES", 1000)
    model = tmp_path / "big.onnx"
    model.write_bytes(b"\0" * 1001)
    with pytest.raises(ModelError, match=r"big\.onnx: 1,001 bytes, larger than the 1,000 bytes"):
        modelfile.file_sha256(model)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.symlink_to(p.name), "cannot be read (a symbolic link loop)"),
        (lambda p: os.mkfifo(p), "is a FIFO, not a regular file"),
        (lambda p: p.mkdir(), "is a directory, not a regular file"),
        (lambda p: p.symlink_to("/dev/null"), "is a device, not a regular file"),
        (lambda p: None, "no such model file; pass an existing .onnx file to --model"),
    ],
    ids=["loop", "fifo", "directory", "device", "missing"],
)
def test_anything_but_a_regular_file_is_one_model_error(
    make: Callable[[Path], object], message: str, tmp_path: Path
) -> None:
    path = tmp_path / "m.onnx"
    make(path)
    with pytest.raises(ModelError) as caught:
        modelfile.file_sha256(path)
    assert str(caught.value).startswith(f"{path}: {message}")


def test_a_link_loop_goes_into_a_job_as_given_for_the_worker_to_refuse(tmp_path: Path) -> None:
    loop = tmp_path / "loop.onnx"
    loop.symlink_to("loop.onnx")
    assert modelfile.job_model_path(loop) == loop.absolute()
    target = tmp_path / "real.onnx"
    target.write_bytes(b"x")
    (tmp_path / "link.onnx").symlink_to(target)
    assert modelfile.job_model_path(tmp_path / "link.onnx") == target.resolve()
