"""query_latencies.npz: each query's issue and completion times, and what reports draw from them.

The SUT stamps each query (Offline and MultiStream: each batch of a query) with
``time.monotonic_ns`` when LoadGen issues it and just before it tells LoadGen it is complete,
into preallocated lists; the runner writes them here after the window. A query's latency is
its last completion minus its issue: LoadGen's own latency adds its issue and completion
calls (microseconds) to it.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from harness.errors import ResultError
from harness.files import atomic_write_bytes

FORMAT = 1
COLUMNS = ("query", "issue_ns", "complete_ns", "samples")
CLOCK = "time.monotonic_ns"

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True, eq=False)
class QueryLatencies:
    """One row per completion: LoadGen's query number, when it was issued and completed (ns).

    Rows that share a query number are batches of one query (Offline, MultiStream);
    ``samples`` is how many samples each row completed.
    """

    scenario: str
    query: Ints
    issue_ns: Ints
    complete_ns: Ints
    samples: Ints

    def __post_init__(self) -> None:
        lengths = {len(self.query), len(self.issue_ns), len(self.complete_ns), len(self.samples)}
        if len(lengths) != 1:
            raise ValueError(f"query latency columns differ in length: {sorted(lengths)}")

    @property
    def rows(self) -> int:
        """How many completions were recorded."""
        return len(self.query)

    def latencies_ns(self) -> Ints:
        """Each query's latency (its last completion minus its issue), in query order."""
        if self.rows == 0:
            return np.zeros(0, dtype=np.int64)
        order = np.argsort(self.query, kind="stable")
        query, issue, done = self.query[order], self.issue_ns[order], self.complete_ns[order]
        starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])
        last = np.maximum.reduceat(done, starts)
        return (last - issue[starts]).astype(np.int64)


def percentile_curve(latencies_ns: Ints) -> tuple[Floats, Floats]:
    """(q, latency ms) of every query, fastest first: q is the share of queries faster.

    The points run from q = 0 (the fastest) to q = (n - 1) / n (the slowest), so that
    1 / (1 - q), the tail axis of an HdrHistogram percentile plot, stays finite.
    """
    ordered = np.sort(np.asarray(latencies_ns, dtype=np.int64))
    count = len(ordered)
    shares = np.arange(count, dtype=np.float64) / max(count, 1)
    return shares, ordered.astype(np.float64) / 1e6


def throughput_over_time(record: QueryLatencies, bin_s: float) -> tuple[Floats, Floats]:
    """(bin middle s, samples/s) of completions in bins of ``bin_s`` from the first issue.

    The last bin ends at the last completion; a remainder under half a bin joins the bin
    before it, so a sliver of time holding one batch does not read as a burst.
    """
    if not bin_s > 0:
        raise ValueError(f"bin_s must be > 0, got {bin_s}")
    if record.rows == 0:
        return np.zeros(0), np.zeros(0)
    done_s = (record.complete_ns - int(record.issue_ns.min())) / 1e9
    end_s = max(float(done_s.max()), 1e-9)
    edges = np.arange(0.0, end_s, bin_s)
    if len(edges) > 1 and end_s - edges[-1] < bin_s / 2:
        edges = edges[:-1]
    edges = np.append(edges, end_s)
    counts, _ = np.histogram(done_s, bins=edges, weights=record.samples.astype(np.float64))
    widths = np.diff(edges)
    return edges[:-1] + widths / 2, counts / widths


# A bin holds at least this many completions (batches) on average: a bin that holds 2 or 3
# batches counts 2 or 3 alternately and draws a square wave that looks like jitter; with 16,
# one batch more or less moves a bin by about 6 %.
MIN_COMPLETIONS_PER_BIN = 16


def default_bin_s(record: QueryLatencies, *, bins: int = 50) -> float:
    """A bin width: about ``bins`` bins, each holding >= MIN_COMPLETIONS_PER_BIN completions.

    Both on average over the run; the width is rounded up to 1, 2 or 5 times 10^k seconds.
    """
    if record.rows == 0:
        return 1.0
    span_s = max(float(record.complete_ns.max() - record.issue_ns.min()) / 1e9, 1e-3)
    raw = max(span_s / bins, span_s * MIN_COMPLETIONS_PER_BIN / record.rows)
    power = 10 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


def write_query_latencies(record: QueryLatencies, path: Path) -> None:
    """Write the record as a compressed .npz (int64 columns and a JSON header), atomically."""
    header = {"format": FORMAT, "scenario": record.scenario, "clock": CLOCK, "columns": COLUMNS}
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        header=np.array(json.dumps(header)),
        query=np.asarray(record.query, dtype=np.int64),
        issue_ns=np.asarray(record.issue_ns, dtype=np.int64),
        complete_ns=np.asarray(record.complete_ns, dtype=np.int64),
        samples=np.asarray(record.samples, dtype=np.int64),
    )
    atomic_write_bytes(path, buffer.getvalue())


def read_query_latencies(path: Path) -> QueryLatencies:
    """Read a query_latencies.npz back; ResultError names the file and what is wrong."""
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(str(data["header"]))
            columns = {name: np.asarray(data[name], dtype=np.int64) for name in COLUMNS}
    except OSError as exc:
        raise ResultError(f"{path}: cannot read ({exc})") from None
    except (KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise ResultError(f"{path}: not a beyond-tops query_latencies.npz ({exc})") from None
    if header.get("format") != FORMAT:
        raise ResultError(
            f"{path}: query latency format {header.get('format')!r}, this beyond-tops reads "
            f"{FORMAT}; upgrade beyond-tops"
        )
    try:
        return QueryLatencies(scenario=str(header.get("scenario", "")), **columns)
    except ValueError as exc:
        raise ResultError(f"{path}: {exc}") from None
