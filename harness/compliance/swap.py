"""SWAP, the harness's own caching audit: the data behind each sample index changes between loads.

MLPerf's TEST04 compares a run that issues one sample over and over with the performance run:
a SUT that caches answers only while audited fails it, one that caches in every mode does not
(both runs are fast). SWAP runs the performance test twice in one process. The first load puts
each sample's own data under its index; the second puts the next loaded sample's data under it
(a rotation, so every index's data changes) and logs every response. An answer computed from
the data now behind the index matches the FP32 model's output for that data; a cached one
matches the output for the data it had before. Where the model's answer hardly depends on its
input (the two outputs agree), the audit cannot tell them apart and says so.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.compliance.check import FAIL_LINE, PASS_LINE
from harness.compliance.verify import VERDICT, VERDICT_SCHEMA_VERSION
from harness.datasets.samples import SampleSource
from harness.errors import ResultError
from harness.files import atomic_write_text
from harness.records.job import AuditTest
from harness.records.layout import VERDICT_FILE, VERIFY_SWAP
from harness.strictjson import read_versioned, want

SWAP_TEST: AuditTest = "SWAP"
# Performance mode, every response logged: LoadGen logs each with probability
# target / expected queries, capped at 1.
SWAP_AUDIT: Mapping[str, int] = types.MappingProxyType(
    {
        "mode": 2,
        "accuracy_log_rng_seed": 5272869170426441003,
        "accuracy_log_sampling_target": 1 << 30,
    }
)
# Of the responses whose data's answer differs from the index's earlier data's, this share
# must answer the data now behind the index (MLPerf's accuracy targets are 99 % of FP32; an
# INT8 model answers some samples otherwise, never the swapped-away sample's answer).
CURRENT_SHARE = 0.9
# Fewer informative responses than this: the model's answer does not depend on its input.
MIN_INFORMATIVE = 8


class SwappedSource:
    """A sample source whose every load puts the next loaded sample's data under each index.

    ``shown`` maps each index loaded so far to the index whose data it was given.
    """

    def __init__(self, inner: SampleSource) -> None:
        self._inner = inner
        self.total_count = inner.total_count
        self.shown: dict[int, int] = {}

    def fill(self, indices: Sequence[int], out: Mapping[str, np.ndarray]) -> None:
        """Fill row i with the data of ``indices[i + 1]`` (the last row: the first's)."""
        order = [int(i) for i in indices]
        rotated = order[1:] + order[:1] if len(order) > 1 else order
        self._inner.fill(rotated, out)
        self.shown.update(zip(order, rotated, strict=True))


@dataclass(frozen=True, kw_only=True)
class SwapCheck:
    """The audit's verdict: ``passed`` is None where the model's answers cannot tell."""

    passed: bool | None
    logged: int
    informative: int
    current: int
    stale: int
    summary: str

    @property
    def lines(self) -> list[str]:
        """verify_swap.txt: the counts, then MLPerf's verdict words."""
        word = PASS_LINE if self.passed else FAIL_LINE
        return [
            "beyond-tops SWAP audit: the data behind each sample index changed between loads",
            f"responses logged = {self.logged}",
            f"responses whose swapped data changes the answer = {self.informative}",
            f"answered the data now behind the index = {self.current}",
            f"answered the index's earlier data (stale: a cache) = {self.stale}",
            f"required share answering the current data = {CURRENT_SHARE:.0%}",
            self.summary,
            word,
        ]


def check_swap(
    responses: Mapping[int, np.ndarray],
    reference: Mapping[int, np.ndarray],
    shown: Mapping[int, int],
    *,
    kind: str,
) -> SwapCheck:
    """Judge each logged response against the FP32 outputs of its current and earlier data.

    ``responses`` are the second load's (qsl_idx -> output), ``reference`` the FP32 model's
    output per sample's own data, ``shown`` which sample's data each index held then.
    """
    informative = current = stale = 0
    for index, response in responses.items():
        now = shown.get(index, index)
        if now == index or now not in reference or index not in reference:
            continue
        fresh, old = reference[now], reference[index]
        answer = _answer(np.asarray(response), np.asarray(fresh), np.asarray(old), kind)
        if answer is None:
            continue
        informative += 1
        current += answer == "current"
        stale += answer == "stale"
    passed: bool | None
    if informative < MIN_INFORMATIVE:
        passed = None
        summary = (
            f"NOT MEASURABLE: only {informative} of {len(responses)} swapped samples change the "
            "model's answer; the model's output hardly depends on its input (use an "
            "input-dependent model or real weights)"
        )
    else:
        passed = current >= CURRENT_SHARE * informative
        share = current / informative
        summary = (
            f"{share:.1%} of {informative} responses answered the data now behind their index; "
            f"{stale} answered the data the index held before"
            + ("" if passed else _why(stale, informative))
        )
    return SwapCheck(
        passed=passed,
        logged=len(responses),
        informative=informative,
        current=current,
        stale=stale,
        summary=summary,
    )


def _why(stale: int, informative: int) -> str:
    """What a failed audit points to: stale answers are a cache's; others, no inference."""
    if stale * 2 >= informative:
        return ": the SUT answers from a cache keyed by sample index, not from its input"
    return ": the SUT's answers do not follow its input (an answer given once, or none computed)"


def _answer(response: np.ndarray, fresh: np.ndarray, old: np.ndarray, kind: str) -> str | None:
    """'current', 'stale' or 'other'; None where fresh and old data give the same answer."""
    if kind == "classifier":
        got, want, was = _class(response), _class(fresh), _class(old)
        if want == was:
            return None
        return "current" if got == want else "stale" if got == was else "other"
    r, f, o = (x.reshape(-1).astype(np.float64) for x in (response, fresh, old))
    apart = float(np.linalg.norm(f - o))
    if apart <= 1e-3 * (float(np.linalg.norm(f)) + float(np.linalg.norm(o))):
        return None
    return "current" if np.linalg.norm(r - f) < np.linalg.norm(r - o) else "stale"


def _class(output: np.ndarray) -> int:
    """The class of a classifier's output: the index itself, or the top-1 of its scores."""
    flat = output.reshape(-1)
    return int(flat[0]) if flat.dtype.kind in "iu" and flat.size == 1 else int(flat.argmax())


def write_swap_verdict(check: SwapCheck, directory: Path) -> None:
    """verify_swap.txt and verdict.json (the compliance tests' shape), atomically."""
    atomic_write_text(directory / VERIFY_SWAP, "\n".join(check.lines) + "\n")
    verdict = {
        "schema_version": VERDICT_SCHEMA_VERSION,
        "test": SWAP_TEST,
        "passed": check.passed is True,
        "swap": {"passed": check.passed, "summary": check.summary, "file": VERIFY_SWAP},
    }
    atomic_write_text(directory / VERDICT_FILE, json.dumps(verdict, indent=2) + "\n")


@dataclass(frozen=True, kw_only=True)
class SwapVerdict:
    """The audit's verdict as its parent reads it back from verdict.json."""

    passed: bool | None
    summary: str
    directory: Path


def read_swap_verdict(directory: Path) -> SwapVerdict:
    """verdict.json of a SWAP audit; a missing or malformed one is a ResultError."""
    path = directory / VERDICT_FILE
    missing = "missing; the SWAP audit did not finish"
    data = read_versioned(path, VERDICT, ResultError, missing=missing).data
    block = data.get("swap")
    if data.get("test") != SWAP_TEST or not isinstance(block, dict):
        raise ResultError(f"{path}: not a SWAP audit's verdict")
    passed = block.get("passed")
    return SwapVerdict(
        passed=passed if isinstance(passed, bool) else None,
        summary=want(block, "summary", str, str(path), ResultError),
        directory=directory,
    )


def render_swap(verdict: SwapVerdict) -> str:
    """Lines for people: the verdict, its summary and where its files are."""
    word = {True: "TEST PASS", False: "TEST FAIL", None: "NOT MEASURABLE"}[verdict.passed]
    return f"compliance {SWAP_TEST}: {word}\n  {verdict.summary}\n  files: {verdict.directory}"
