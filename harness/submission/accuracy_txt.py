"""accuracy.txt in MLPerf's format, the accuracy log's sha256 and its truncated export copy."""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.analysis.accuracy import render_accuracy
from harness.records.accuracy import Accuracy, LabelAccuracy

# The checker refuses an mlperf_log_accuracy.json above this size (MAX_ACCURACY_LOG_SIZE).
MAX_ACCURACY_LOG_BYTES = 10 * 1024
# A longer log keeps this much of each end, joined by ELISION, as MLPerf's
# truncate_accuracy_log.py does: 4 KiB + 7 bytes + 4 KiB stays under the limit.
VIEW_BYTES = 4096
ELISION = b"\n\n...\n\n"
_CHUNK_BYTES = 1 << 20


def file_sha256(path: Path) -> str:
    """The sha256 of a file, read in chunks (an accuracy log can be hundreds of MiB)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def truncated_log(path: Path) -> bytes:
    """The export copy of an accuracy log: whole when small enough, else both ends.

    Unlike MLPerf's tool, which cuts every log of 4 KiB or more (repeating the middle of one
    under 8 KiB), a log within the checker's limit is kept whole.
    """
    size = path.stat().st_size
    with path.open("rb") as handle:
        if size <= MAX_ACCURACY_LOG_BYTES:
            return handle.read()
        head = handle.read(VIEW_BYTES)
        handle.seek(size - VIEW_BYTES)
        return head + ELISION + handle.read(VIEW_BYTES)


def mlperf_accuracy_line(labels: LabelAccuracy) -> str | None:
    """``accuracy=XX.XXX%, good=N, total=M``, the line MLPerf's ImageNet script prints.

    None when the labels gave no top-1 (the model's output is no class score).
    """
    if labels.top1 is None or labels.count == 0:
        return None
    good = round(labels.top1 * labels.count)
    return f"accuracy={100 * good / labels.count:.3f}%, good={good}, total={labels.count}"


# accuracy.txt's first MLPerf line for a generative benchmark: what its checker reads there
# (ROUGE-1/2/L/Lsum and GEN_LEN for llama3.1-8b, from MLPerf's evaluation of the decoded text
# against its dataset's references) is not given, and why. Worded so that none of the
# checker's patterns ('rouge1': ..., 'gen_len': ...) can match it.
NO_ROUGE = (
    "no ROUGE scores: the generated token ids in mlperf_log_accuracy.json are not scored "
    "against MLPerf's reference text (the prompts are not MLPerf's dataset), so MLPerf's "
    "accuracy is not measurable (open division)"
)


def render_accuracy_txt(
    accuracy: Accuracy, log_sha256: str, statement: str | None = None, *, generative: bool = False
) -> str:
    """accuracy.txt of an exported accuracy run: MLPerf's lines, then beyond-tops' own scoring.

    ``statement`` (a synthetic-weights model's) comes first, where a reader and an importer
    of the tree read a result's accuracy. MLPerf's checker reads the ``accuracy=`` line
    (only against labels: agreement with FP32 is no accuracy) and ``hash=``, the sha256 of
    the whole accuracy log, wherever they stand; a ``generative`` benchmark's first MLPerf
    line says its ROUGE is not measured. The harness's own scoring follows, indented
    so that none of its lines can match the checker's patterns.
    """
    labels = accuracy.against_labels
    line = None if labels is None else mlperf_accuracy_line(labels)
    if generative:
        head = [NO_ROUGE]
    elif line is None:
        head = [
            "no accuracy= line: the data had no labels, so there is no MLPerf accuracy; "
            "agreement with FP32 follows"
        ]
    else:
        head = [line]
    if statement is not None:
        head.insert(0, statement)
    own = render_accuracy(accuracy).splitlines()
    body = ["", "beyond-tops scoring of the same log:", *(f"  {text}".rstrip() for text in own)]
    return "\n".join([*head, f"hash={log_sha256}", *body]).rstrip() + "\n"


def compliance_accuracy_txt(log_sha256: str) -> str:
    """accuracy.txt beside a TEST01 accuracy log: its hash, as MLPerf's truncation tool writes."""
    return f"hash={log_sha256}\n"
