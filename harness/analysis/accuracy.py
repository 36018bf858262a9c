"""Score LoadGen accuracy logs against FP32 reference outputs and labels (pure; no LoadGen).

The score is a record (harness.records.accuracy); accuracy.json is its JSON form.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.analysis.degenerate import degenerate_reference
from harness.analysis.labels import Label
from harness.errors import ConfigError, ResultError
from harness.files import atomic_write_text
from harness.records.accuracy import Accuracy, ClosedDivision, Fp32Agreement, LabelAccuracy
from harness.records.codec import from_data, to_object
from harness.records.layout import ACCURACY_BLOCK, ACCURACY_TXT
from harness.strictjson import JsonObject

# Top-k accuracies by name (top1, top5, ...): None where k exceeds what the outputs allow.
LabelScores = dict[str, float | int | None]

MLPERF_CLOSED_FRACTION = 0.99


def read_accuracy_log(path: Path) -> list[tuple[int, bytes]]:
    """The (qsl_idx, response bytes) of each entry of LoadGen's ``mlperf_log_accuracy.json``.

    Raises:
        ResultError: If the file is missing or not a list of ``{"qsl_idx", "data"}`` entries.
    """
    try:
        entries = json.loads(path.read_text())
    except OSError as exc:
        raise ResultError(f"{path}: cannot read the accuracy log ({exc.strerror})") from None
    except ValueError as exc:
        raise ResultError(f"{path}: not JSON ({exc}); was the accuracy run interrupted?") from None
    if not isinstance(entries, list):
        raise ResultError(f"{path}: expected a JSON list of LoadGen responses")
    try:
        return [(int(e["qsl_idx"]), bytes.fromhex(e["data"])) for e in entries]
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultError(f"{path}: malformed entry ({type(exc).__name__}: {exc})") from None


def decode_outputs(
    entries: Sequence[tuple[int, bytes]], *, dtype: np.dtype[Any], shape: tuple[int, ...]
) -> dict[int, np.ndarray]:
    """One array per sample: each response's bytes as ``dtype`` of the per-sample ``shape``.

    A sample logged more than once keeps its first response.

    Raises:
        ResultError: If a response's size does not match ``dtype`` and ``shape``.
    """
    dtype = np.dtype(dtype)
    expected = math.prod(shape) * dtype.itemsize
    outputs: dict[int, np.ndarray] = {}
    for index, data in entries:
        if len(data) != expected:
            raise ResultError(
                f"accuracy log: sample {index} holds {len(data)} bytes, expected {expected} "
                f"({dtype.name}{list(shape)}); the SUT returned no or another output"
            )
        outputs.setdefault(index, np.frombuffer(data, dtype=dtype).reshape(shape))
    return outputs


def agreement(
    outputs: Mapping[int, np.ndarray], reference: Mapping[int, np.ndarray], *, kind: str
) -> Fp32Agreement:
    """How closely outputs match the FP32 reference outputs of the same samples.

    Args:
        outputs: Per-sample outputs (qsl_idx -> array).
        reference: The FP32 model's outputs for at least the same samples.
        kind: ``classifier`` (top-1 agreement, first index wins ties, plus the error metrics
            of the scores) or ``tensor`` (error metrics only). A classifier whose output is a
            class index (an integer scalar per sample) gets top-1 agreement only.

    Returns:
        ``count``, ``top1_agreement`` (classifier; fraction of samples whose top-1 class
        matches), ``max_abs_error``, ``mean_abs_error`` (over all elements),
        ``cosine_similarity`` (mean over samples) and ``min_cosine_similarity``, each None
        where it does not apply. Two zero vectors have cosine 1, one zero vector 0.

    Raises:
        ResultError: If there are no outputs or a sample has no reference.
    """
    if kind not in ("classifier", "tensor"):
        raise ConfigError(f"accuracy kind: {kind!r} is not 'classifier' or 'tensor'")
    got, ref = _paired(outputs, reference)
    indices = got.dtype.kind in "iu" and got[0].size == 1
    top1 = None
    if kind == "classifier":
        same = (got == ref) if indices else (got.argmax(axis=1) == ref.argmax(axis=1))
        top1 = float(np.mean(same))
    errors = (None,) * 4 if indices else _errors(got.astype(np.float64), ref.astype(np.float64))
    return Fp32Agreement(
        kind="classifier" if kind == "classifier" else "tensor",
        count=len(got),
        top1_agreement=top1,
        max_abs_error=errors[0],
        mean_abs_error=errors[1],
        cosine_similarity=errors[2],
        min_cosine_similarity=errors[3],
    )


def _paired(
    outputs: Mapping[int, np.ndarray], reference: Mapping[int, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Outputs and references as [samples, elements] arrays in qsl_idx order."""
    if not outputs:
        raise ResultError("accuracy: no outputs to score")
    keys = sorted(outputs)
    missing = [k for k in keys if k not in reference]
    if missing:
        raise ResultError(
            f"accuracy: {len(missing)} samples have no reference output (first: {missing[0]})"
        )
    got = np.stack([np.asarray(outputs[k]).reshape(-1) for k in keys])
    ref = np.stack([np.asarray(reference[k]).reshape(-1) for k in keys])
    if got.shape != ref.shape:
        raise ResultError(f"accuracy: outputs {got.shape[1:]} vs reference {ref.shape[1:]}")
    return got, ref


def _errors(got: np.ndarray, ref: np.ndarray) -> tuple[float, float, float, float]:
    """Max and mean absolute error, mean and minimum cosine similarity."""
    diff = np.abs(got - ref)
    dots = np.sum(got * ref, axis=1)
    # sqrt(|a|^2 |b|^2), not |a| |b|: for a == b it is exactly a.a, so the cosine is exactly 1.
    norms = np.sqrt(np.sum(got * got, axis=1) * np.sum(ref * ref, axis=1))
    both_zero = ~got.any(axis=1) & ~ref.any(axis=1)
    cosine = np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), both_zero * 1.0)
    return float(diff.max()), float(diff.mean()), float(cosine.mean()), float(cosine.min())


def label_accuracy(
    outputs: Mapping[int, np.ndarray],
    labels: Mapping[int, Label],
    *,
    top_k: Sequence[int] = (1, 5),
    label_offset: int = 0,
) -> LabelScores:
    """Top-k accuracy of per-sample class scores (or class indices) against labels.

    Args:
        outputs: Per-sample scores (qsl_idx -> [classes]) or class indices (integer scalars).
        labels: The true class of each sample (qsl_idx -> class), or the set of classes
            that each count as correct (a photo of a tabby cat: tabby, tiger cat, ...).
        top_k: The k to report; a k above the number of classes (or above 1 for class-index
            outputs) is reported as None.
        label_offset: Subtracted from the predicted class index before comparing: 1 for
            models with 1001 classes whose class 0 is "background" (MLPerf ResNet-50).

    Returns:
        ``count``, ``label_offset`` and ``top{k}`` (fraction correct) for each k.

    Raises:
        ConfigError: If a sample has no label.
    """
    keys = sorted(outputs)
    missing = [k for k in keys if k not in labels]
    if missing:
        raise ConfigError(
            f"labels: {len(missing)} samples have no label (first: sample {missing[0]})"
        )
    scores = np.stack([np.asarray(outputs[k]).reshape(-1) for k in keys])
    truth = [_classes(labels[k], label_offset) for k in keys]
    block: LabelScores = {"count": len(keys), "label_offset": label_offset}
    indices = scores.dtype.kind in "iu" and scores.shape[1] == 1
    for k in top_k:
        if (indices and k != 1) or k > scores.shape[1]:
            block[f"top{k}"] = None
            continue
        best = scores if indices else np.argsort(-scores, axis=1, kind="stable")[:, :k]
        hits = [not truth[i].isdisjoint(best[i].tolist()) for i in range(len(keys))]
        block[f"top{k}"] = float(np.mean(hits))
    return block


def _classes(label: Label, offset: int) -> frozenset[int]:
    """A label's acceptable class indices in the model's numbering."""
    return frozenset({label + offset} if isinstance(label, int) else {c + offset for c in label})


def closed_division_check(
    accuracy: float, reference: float, *, fraction: float = MLPERF_CLOSED_FRACTION
) -> ClosedDivision:
    """MLPerf's closed-division rule: accuracy must reach ``fraction`` of the FP32 reference."""
    target = fraction * reference
    return ClosedDivision(
        accuracy=accuracy,
        reference=reference,
        fraction=fraction,
        target=target,
        passed=bool(accuracy >= target),
    )


def score_accuracy(
    outputs: Mapping[int, np.ndarray],
    reference: Mapping[int, np.ndarray],
    *,
    kind: str,
    described_as: str,
    labels: Mapping[int, Label] | None = None,
    label_offset: int = 0,
    reference_top1: float | None = None,
) -> Accuracy:
    """The accuracy record of result.json: agreement with FP32, label accuracy if any, verdict.

    The verdict is "not measurable" (``passed`` False, ``not_measurable`` the reason) when the
    reference answers alike for every input (harness.analysis.degenerate).

    Args:
        outputs: Per-sample outputs decoded from the accuracy log.
        reference: The FP32 model's outputs on the same samples.
        kind: ``classifier`` or ``tensor`` (see :func:`agreement`).
        described_as: What the reference is (the record's ``reference``).
        labels: True classes by sample index, when the dataset has labels.
        label_offset: See :func:`label_accuracy`.
        reference_top1: The FP32 top-1 the closed-division target is 99 % of; by default
            the FP32 model's top-1 on the same samples (MLPerf uses the published FP32
            accuracy on the full dataset).
    """
    fp32 = agreement(outputs, reference, kind=kind)
    labelled = None
    if labels is not None:
        labelled = _against_labels(outputs, reference, labels, label_offset, reference_top1)
    passed, criterion = verdict(fp32, labelled)
    # A reference that answers alike for every input passes a SUT that computes nothing.
    reason = degenerate_reference({k: reference[k] for k in outputs}, kind=kind)
    return Accuracy(
        samples=len(outputs),
        against_fp32=fp32,
        against_labels=labelled,
        passed=passed and reason is None,
        criterion=criterion,
        reference=described_as,
        not_measurable=reason,
    )


def _against_labels(
    outputs: Mapping[int, np.ndarray],
    reference: Mapping[int, np.ndarray],
    labels: Mapping[int, Label],
    offset: int,
    reference_top1: float | None,
) -> LabelAccuracy:
    got = label_accuracy(outputs, labels, label_offset=offset)
    fp32 = label_accuracy({k: reference[k] for k in outputs}, labels, label_offset=offset)
    top1, fp32_top1 = _share(got["top1"]), _share(fp32["top1"])
    target = fp32_top1 if reference_top1 is None else reference_top1
    return LabelAccuracy(
        count=len(outputs),
        label_offset=offset,
        top1=top1,
        top5=_share(got["top5"]),
        fp32_top1=fp32_top1,
        fp32_top5=_share(fp32["top5"]),
        closed_division=closed_division_check(top1 or 0.0, target or 0.0),
    )


def _share(value: float | int | None) -> float | None:
    return None if value is None else float(value)


def render_accuracy(accuracy: Accuracy) -> str:
    """accuracy.txt: the accuracy record as aligned, human-readable lines."""
    lines = [f"accuracy over {accuracy.samples} samples (LoadGen AccuracyOnly)", ""]
    lines.append("against the FP32 reference (same model, same inputs):")
    for key, label in _FP32_ROWS:
        value = getattr(accuracy.against_fp32, key)
        if value is not None:
            lines.append(f"  {label:<22}{_number(key, value)}")
    lines.append("")
    labelled = accuracy.against_labels
    lines += _label_lines(labelled) if labelled else ["against labels: no labelled dataset given"]
    if accuracy.not_measurable is not None:
        lines += ["", f"verdict: NOT MEASURABLE: {accuracy.not_measurable}"]
    return "\n".join(lines) + "\n"


def _label_lines(labelled: LabelAccuracy) -> list[str]:
    lines = [f"against labels (label_offset {labelled.label_offset}):"]
    for k, got, fp32 in (
        ("top1", labelled.top1, labelled.fp32_top1),
        ("top5", labelled.top5, labelled.fp32_top5),
    ):
        if got is not None:
            lines.append(f"  {k:<22}{_percent(got)}  (FP32 {_percent(fp32)})")
    check = labelled.closed_division
    share = f"{check.fraction * 100:g} % of {_percent(check.reference)}"
    verdict = "PASS" if check.passed else "FAIL"
    lines.append(
        f"  MLPerf closed division: top-1 {_percent(check.accuracy)}, target "
        f"{_percent(check.target)} ({share}): {verdict}"
    )
    return lines


def write_accuracy_txt(accuracy: Accuracy, path: Path) -> None:
    """Write :func:`render_accuracy` atomically."""
    atomic_write_text(path, render_accuracy(accuracy))


# What "passed" means without labels: agreement with the FP32 model on the same inputs.
MIN_TOP1_AGREEMENT = 0.99
MIN_COSINE = 0.99


def verdict(fp32: Fp32Agreement, labelled: LabelAccuracy | None) -> tuple[bool, str]:
    """Whether the score passes, and by which criterion (labels beat FP32)."""
    if labelled is not None:
        return labelled.closed_division.passed, "top-1 >= 99 % of FP32 (MLPerf closed division)"
    if fp32.top1_agreement is not None:
        return (
            fp32.top1_agreement >= MIN_TOP1_AGREEMENT,
            f"top-1 agreement with FP32 >= {MIN_TOP1_AGREEMENT:.0%} (no labels)",
        )
    return (
        fp32.cosine_similarity is not None and fp32.cosine_similarity >= MIN_COSINE,
        f"mean cosine similarity with FP32 >= {MIN_COSINE} (no labels)",
    )


def write_accuracy_block(accuracy: Accuracy, accuracy_dir: Path) -> None:
    """accuracy.txt for people and accuracy.json for the performance test's result."""
    write_accuracy_txt(accuracy, accuracy_dir / ACCURACY_TXT)
    text = json.dumps(to_object(accuracy), indent=2) + "\n"
    atomic_write_text(accuracy_dir / ACCURACY_BLOCK, text)


def load_accuracy(accuracy_dir: Path) -> Accuracy:
    """The score an accuracy test left in its directory, as its record."""
    where = str(accuracy_dir / ACCURACY_BLOCK)
    return from_data(Accuracy, read_accuracy_block(accuracy_dir), where)


def scored_label_offset(accuracy_dir: Path) -> int | None:
    """The label offset the accuracy test scored with; None when it had no labels."""
    labelled = read_accuracy_block(accuracy_dir).get("against_labels")
    if not isinstance(labelled, dict):
        return None
    offset = labelled.get("label_offset", 0)
    return offset if isinstance(offset, int) and not isinstance(offset, bool) else 0


def read_accuracy_block(accuracy_dir: Path) -> JsonObject:
    """The scored block an accuracy test left in its directory, as JSON data."""
    path = accuracy_dir / ACCURACY_BLOCK
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultError(f"{path}: no accuracy verdict; the accuracy test did not end") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultError(f"{path}: unreadable accuracy verdict ({exc})") from None
    if not isinstance(data, dict):
        raise ResultError(f"{path}: expected a JSON object")
    return data


_FP32_ROWS = (
    ("top1_agreement", "top-1 agreement"),
    ("max_abs_error", "max abs error"),
    ("mean_abs_error", "mean abs error"),
    ("cosine_similarity", "cosine similarity"),
    ("min_cosine_similarity", "min cosine similarity"),
)


def _number(key: str, value: float) -> str:
    return _percent(value) if key == "top1_agreement" else f"{value:.6g}"


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.2f} %"
