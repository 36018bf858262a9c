"""A model file as a path names it: a regular file, hashed with a bound and a progress line.

A path given as --model (or recorded in a job that `reproduce` runs again) may be a link
loop, a FIFO, a device or a directory: each is one ModelError naming it. Hashing goes
through harness.foreign.sha256_file: at most MAX_MODEL_BYTES, a line to stderr per GiB.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from harness.errors import ModelError
from harness.foreign import MAX_MODEL_BYTES, open_regular, sha256_file

GIB = 1024**3


def check_model_file(path: Path) -> None:
    """ModelError naming `path` unless it is an existing regular file (links followed)."""
    if not os.path.lexists(path):
        raise ModelError(f"{path}: no such model file; pass an existing .onnx file to --model")
    os.close(open_regular(path, ModelError))


def file_sha256(path: Path) -> str:
    """Hex sha256 of a model file; ModelError for anything but a regular file within bounds."""
    check_model_file(path)

    def progress(done_bytes: int, size_bytes: int) -> None:
        print(f"hashing {path}: {done_bytes // GIB} of {size_bytes / GIB:.0f} GiB", file=sys.stderr)

    return sha256_file(path, ModelError, MAX_MODEL_BYTES, progress)


def job_model_path(path: Path) -> Path:
    """`path` made absolute for a job file, links resolved where they can be.

    A link loop is kept as given (made absolute): the worker's check names it, so such a
    --model is refused there, with nothing left behind, as a missing one is.
    """
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a link loop, on Python < 3.13
        return path.absolute()
