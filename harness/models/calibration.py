"""INT8 via onnxruntime's quantizers, calibrated on seeded, recorded draws of the QSL's data."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from harness.datasets.samples import SampleSource, SampleSpec
from harness.errors import ConfigError
from harness.runtime.convert import Int8Options, preprocess, quantize_dynamic, quantize_static


@dataclass(frozen=True)
class CalibrationData:
    """The samples a static quantization is calibrated on, and where they came from.

    Attributes:
        inputs: One array per model input, samples on axis 0; each sample has the model's
            per-sample shape and is fed to the calibrator on its own, as a batch of 1.
        seed: Seed of the draw.
        indices: QSL sample indices drawn, ascending (row i of each array is ``indices[i]``).
        source: What the samples were drawn from (for the record).
    """

    inputs: Mapping[str, np.ndarray]
    seed: int
    indices: tuple[int, ...]
    source: str

    def sha256(self) -> str:
        """Hex sha256 of the tensors: names, dtypes, shapes and bytes, in name order."""
        digest = hashlib.sha256()
        for name in sorted(self.inputs):
            array = np.ascontiguousarray(self.inputs[name])
            header = {"name": name, "dtype": array.dtype.str, "shape": list(array.shape)}
            digest.update(json.dumps(header, sort_keys=True).encode())
            digest.update(array.tobytes())
        return digest.hexdigest()

    @property
    def count(self) -> int:
        """Number of samples."""
        return len(self.indices)

    def record(self) -> dict[str, Any]:
        """What result.json records about the set: seed, count, indices, source, sha256."""
        return {
            "seed": self.seed,
            "count": self.count,
            "indices": list(self.indices),
            "source": self.source,
            "sha256": self.sha256(),
        }


def draw_calibration(
    source: SampleSource,
    specs: Sequence[SampleSpec],
    *,
    count: int,
    seed: int,
    source_name: str = "",
) -> CalibrationData:
    """Draw ``count`` distinct QSL samples, chosen by ``seed``, into a calibration set.

    Args:
        source: The QSL's sample source (``total_count`` and ``fill``).
        specs: The model inputs (name, dtype, shape with the batch first).
        count: Samples to draw; at most ``source.total_count``.
        seed: Seed of the choice; the same seed and data give the same set.
        source_name: Description of the source for the record (default: its class name).

    Returns:
        The set, its rows in ascending index order.

    Raises:
        ConfigError: If ``count`` is below 1 or larger than the data.
    """
    total = int(source.total_count)
    if count < 1:
        raise ConfigError(f"calibration_samples: must be >= 1, got {count}")
    if count > total:
        raise ConfigError(
            f"calibration set too small: INT8 static quantization needs {count} samples, "
            f"data has {total}; lower calibration_samples or give more data"
        )
    rng = np.random.default_rng(seed)
    indices = tuple(sorted(int(i) for i in rng.choice(total, size=count, replace=False)))
    arrays = {s.name: np.empty((count, *s.shape[1:]), dtype=s.dtype) for s in specs}
    source.fill(indices, arrays)
    return CalibrationData(
        inputs=arrays,
        seed=seed,
        indices=indices,
        source=source_name or type(source).__name__,
    )


class CalibrationReader:
    """Feeds a calibration set to onnxruntime's calibrators, one batch-1 sample per call.

    onnxruntime's ``CalibrationDataReader`` accepts any class with ``get_next`` (its
    ``__subclasshook__``), so this one needs no import of onnxruntime.
    """

    def __init__(self, data: CalibrationData) -> None:
        self._data = data
        self._next = 0

    def get_next(self) -> dict[str, np.ndarray] | None:
        """The next sample as ``{input name: array of batch 1}``, or None when done."""
        row = self._next
        if row >= self._data.count:
            return None
        self._next += 1
        return {name: array[row : row + 1] for name, array in self._data.inputs.items()}

    def __len__(self) -> int:
        return self._data.count

    def rewind(self) -> None:
        """Start again from the first sample."""
        self._next = 0


def quantize(
    source: Path,
    out: Path,
    *,
    method: str,
    params: Mapping[str, Any],
    calibration: CalibrationData | None,
) -> None:
    """Quantize ``source`` to ``out`` with onnxruntime's static or dynamic quantizer.

    Args:
        source: The FP32 model.
        out: Where the INT8 model goes (its directory also holds the pre-processed model).
        method: ``static-qdq``, ``static-qoperator`` or ``dynamic``.
        params: A complete INT8 recipe's parameters (see harness.models.recipes).
        calibration: The calibration set; required by the static methods.

    Raises:
        ConfigError: If a static method has no calibration set.
    """
    model = _prepared(source, params, out.parent)
    common = Int8Options(
        per_channel=params["per_channel"],
        reduce_range=params["reduce_range"],
        weight_type=params["weight_type"],
    )
    if method == "dynamic":
        quantize_dynamic(model, out, common)
        return
    if calibration is None:
        raise ConfigError(f"{method}: static INT8 quantization needs a calibration set")
    options = replace(
        common,
        activation_type=params["activation_type"],
        calibration_method=params["calibration_method"],
        quant_format="QDQ" if method == "static-qdq" else "QOperator",
    )
    quantize_static(model, out, CalibrationReader(calibration), options)


def _prepared(source: Path, params: Mapping[str, Any], work: Path) -> Path:
    """Applies onnxruntime's pre-processing (shape inference, BatchNorm folding) if asked."""
    if not params["preprocess"]:
        return source
    out = work / "preprocessed.onnx"
    preprocess(source, out)
    return out


class _ListHandler(logging.Handler):
    def __init__(self, messages: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.messages = messages

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def captured_tool_output() -> Iterator[list[str]]:
    """Collect onnxruntime's converter advice instead of printing it; logging is restored after.

    onnxruntime.quantization warns through the root logger ("consider pre-processing") and
    its named loggers, and prints calibration progress. A NullHandler on the root logger
    meanwhile stops ``logging.warning`` from calling ``basicConfig``, a global side effect.
    Not thread-safe (it swaps ``sys.stdout``): convert before the benchmark starts.
    """
    messages: list[str] = []

    def keep(record: logging.LogRecord) -> bool:
        if f"{os.sep}onnxruntime{os.sep}" not in record.pathname:
            return True
        messages.append(record.getMessage())
        return False

    root, ort_logger = logging.getLogger(), logging.getLogger("onnxruntime")
    null, handler, propagate = logging.NullHandler(), _ListHandler(messages), ort_logger.propagate
    root.addFilter(keep)
    root.addHandler(null)
    ort_logger.addHandler(handler)
    ort_logger.propagate = False
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield messages
    finally:
        ort_logger.propagate = propagate
        ort_logger.removeHandler(handler)
        root.removeHandler(null)
        root.removeFilter(keep)
