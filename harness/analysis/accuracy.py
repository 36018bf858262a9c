"""Score LoadGen accuracy logs against FP32 reference outputs and labels (pure; no LoadGen)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import ConfigError, ResultError
from harness.files import atomic_write_text

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
) -> dict[str, Any]:
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
        ``cosine_similarity`` (mean over samples) and ``min_cosine_similarity``. Two zero
        vectors have cosine 1, one zero vector 0.

    Raises:
        ResultError: If there are no outputs or a sample has no reference.
    """
    if kind not in ("classifier", "tensor"):
        raise ConfigError(f"accuracy kind: {kind!r} is not 'classifier' or 'tensor'")
    got, ref = _paired(outputs, reference)
    block: dict[str, Any] = {"kind": kind, "count": len(got)}
    indices = got.dtype.kind in "iu" and got[0].size == 1
    if kind == "classifier":
        same = (got == ref) if indices else (got.argmax(axis=1) == ref.argmax(axis=1))
        block["top1_agreement"] = float(np.mean(same))
    if indices:
        return block
    return {**block, **_errors(got.astype(np.float64), ref.astype(np.float64))}


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


def _errors(got: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    diff = np.abs(got - ref)
    dots = np.sum(got * ref, axis=1)
    # sqrt(|a|^2 |b|^2), not |a| |b|: for a == b it is exactly a.a, so the cosine is exactly 1.
    norms = np.sqrt(np.sum(got * got, axis=1) * np.sum(ref * ref, axis=1))
    both_zero = ~got.any(axis=1) & ~ref.any(axis=1)
    cosine = np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), both_zero * 1.0)
    return {
        "max_abs_error": float(diff.max()),
        "mean_abs_error": float(diff.mean()),
        "cosine_similarity": float(cosine.mean()),
        "min_cosine_similarity": float(cosine.min()),
    }


def label_accuracy(
    outputs: Mapping[int, np.ndarray],
    labels: Mapping[int, int],
    *,
    top_k: Sequence[int] = (1, 5),
    label_offset: int = 0,
) -> dict[str, Any]:
    """Top-k accuracy of per-sample class scores (or class indices) against labels.

    Args:
        outputs: Per-sample scores (qsl_idx -> [classes]) or class indices (integer scalars).
        labels: The true class of each sample (qsl_idx -> class).
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
    truth = np.array([labels[k] for k in keys], dtype=np.int64) + label_offset
    block: dict[str, Any] = {"count": len(keys), "label_offset": label_offset}
    indices = scores.dtype.kind in "iu" and scores.shape[1] == 1
    for k in top_k:
        if indices:
            block[f"top{k}"] = float(np.mean(scores[:, 0] == truth)) if k == 1 else None
        elif k > scores.shape[1]:
            block[f"top{k}"] = None
        else:
            best = np.argsort(-scores, axis=1, kind="stable")[:, :k]
            block[f"top{k}"] = float(np.mean(np.any(best == truth[:, None], axis=1)))
    return block


def closed_division_check(
    accuracy: float, reference: float, *, fraction: float = MLPERF_CLOSED_FRACTION
) -> dict[str, Any]:
    """MLPerf's closed-division rule: accuracy must reach ``fraction`` of the FP32 reference."""
    target = fraction * reference
    return {
        "accuracy": accuracy,
        "reference": reference,
        "fraction": fraction,
        "target": target,
        "passed": bool(accuracy >= target),
    }


def accuracy_block(
    outputs: Mapping[int, np.ndarray],
    reference: Mapping[int, np.ndarray],
    *,
    kind: str,
    labels: Mapping[int, int] | None = None,
    label_offset: int = 0,
    reference_top1: float | None = None,
) -> dict[str, Any]:
    """The ``accuracy`` block of result.json: agreement with FP32, and label accuracy if any.

    Args:
        outputs: Per-sample outputs decoded from the accuracy log.
        reference: The FP32 model's outputs on the same samples.
        kind: ``classifier`` or ``tensor`` (see :func:`agreement`).
        labels: True classes by sample index, when the dataset has labels.
        label_offset: See :func:`label_accuracy`.
        reference_top1: The FP32 top-1 the closed-division target is 99 % of; by default
            the FP32 model's top-1 on the same samples (MLPerf uses the published FP32
            accuracy on the full dataset).
    """
    block: dict[str, Any] = {
        "samples": len(outputs),
        "against_fp32": agreement(outputs, reference, kind=kind),
        "against_labels": None,
    }
    if labels is None:
        return block
    got = label_accuracy(outputs, labels, label_offset=label_offset)
    fp32 = label_accuracy({k: reference[k] for k in outputs}, labels, label_offset=label_offset)
    target = fp32["top1"] if reference_top1 is None else reference_top1
    block["against_labels"] = {
        **got,
        "fp32_top1": fp32["top1"],
        "fp32_top5": fp32["top5"],
        "closed_division": closed_division_check(got["top1"], target),
    }
    return block


def render_accuracy(block: Mapping[str, Any]) -> str:
    """accuracy.txt: the accuracy block as aligned, human-readable lines."""
    lines = [f"accuracy over {block['samples']} samples (LoadGen AccuracyOnly)", ""]
    lines.append("against the FP32 reference (same model, same inputs):")
    fp32 = block["against_fp32"]
    for key, label in _FP32_ROWS:
        if fp32.get(key) is not None:
            lines.append(f"  {label:<22}{_number(key, fp32[key])}")
    lines.append("")
    labelled = block.get("against_labels")
    lines += _label_lines(labelled) if labelled else ["against labels: no labelled dataset given"]
    return "\n".join(lines) + "\n"


def _label_lines(labelled: Mapping[str, Any]) -> list[str]:
    lines = [f"against labels (label_offset {labelled['label_offset']}):"]
    for k in ("top1", "top5"):
        if labelled.get(k) is not None:
            fp32 = _percent(labelled[f"fp32_{k}"])
            lines.append(f"  {k:<22}{_percent(labelled[k])}  (FP32 {fp32})")
    check = labelled["closed_division"]
    share = f"{check['fraction'] * 100:g} % of {_percent(check['reference'])}"
    verdict = "PASS" if check["passed"] else "FAIL"
    lines.append(
        f"  MLPerf closed division: top-1 {_percent(check['accuracy'])}, target "
        f"{_percent(check['target'])} ({share}): {verdict}"
    )
    return lines


def write_accuracy_txt(block: Mapping[str, Any], path: Path) -> None:
    """Write :func:`render_accuracy` atomically."""
    atomic_write_text(path, render_accuracy(block))


# What "passed" means without labels: agreement with the FP32 model on the same inputs.
MIN_TOP1_AGREEMENT = 0.99
MIN_COSINE = 0.99
ACCURACY_BLOCK = "accuracy.json"  # the scored block an accuracy test leaves in its directory


def verdict(block: Mapping[str, Any]) -> dict[str, Any]:
    """Whether the accuracy block passes, and by which criterion (labels beat FP32)."""
    labelled = block.get("against_labels")
    if labelled is not None:
        passed = bool(labelled["closed_division"]["passed"])
        return {"passed": passed, "criterion": "top-1 >= 99 % of FP32 (MLPerf closed division)"}
    fp32 = block["against_fp32"]
    if "top1_agreement" in fp32:
        return {
            "passed": fp32["top1_agreement"] >= MIN_TOP1_AGREEMENT,
            "criterion": f"top-1 agreement with FP32 >= {MIN_TOP1_AGREEMENT:.0%} (no labels)",
        }
    return {
        "passed": fp32["cosine_similarity"] >= MIN_COSINE,
        "criterion": f"mean cosine similarity with FP32 >= {MIN_COSINE} (no labels)",
    }


def write_accuracy_block(block: Mapping[str, Any], accuracy_dir: Path) -> None:
    """accuracy.txt for people and accuracy.json for the performance test's result."""
    write_accuracy_txt(block, accuracy_dir / "accuracy.txt")
    atomic_write_text(accuracy_dir / ACCURACY_BLOCK, json.dumps(block, indent=2) + "\n")


def read_accuracy_block(accuracy_dir: Path) -> dict[str, Any]:
    """The scored block an accuracy test left in its directory."""
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
