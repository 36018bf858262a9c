"""query_latencies.npz against the latency percentiles LoadGen logged for the same run.

The SUT stamps each query when LoadGen issues it and just before it reports it complete
(harness.telemetry.latencies); LoadGen times the same queries from a little earlier to a
little later. So each stamped latency is at most LoadGen's, and so is each order statistic:
a percentile recomputed from the file as LoadGen's summary takes it (the sorted latencies'
element at floor(n x p)) may not exceed the logged one. Below it, it may fall only by
LoadGen's own bookkeeping (measured: 3-20 us a SingleStream query, 0.1 ms a MultiStream
query, 0.25 ms an Offline query of 4,500 samples, on 2 loaded cores) -- except in Server,
where LoadGen times a query from its scheduled arrival, and a query LoadGen issues late
(measured: 0.6 ms at p90 of a run within its rate, seconds in an overloaded one) is late
before the SUT sees it: there only the upper bound holds. The query count must be LoadGen's.

bundle may not import harness.telemetry (it measures): the file is read here, as a foreign
file: a zip of exactly its five arrays, each bounded before it is inflated, no pickles.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import numpy.typing as npt

from harness.bundle.crosscheck import Contents, Passed, beside
from harness.errors import ResultError
from harness.records.layout import DETAIL_LOG, QUERY_LATENCIES_FILE
from harness.records.loadgen_log import (
    PERCENTILES,
    DetailLog,
    latency_percentiles_ns,
    logged_int,
    parse_detail_log,
)

CHECK = "query-latencies"
FORMAT = 1  # harness.telemetry.latencies.FORMAT, the one version written so far
COLUMNS = ("query", "issue_ns", "complete_ns", "samples")
CHECKED = ("p50", "p90", "p99")
# How far below LoadGen's a recomputed percentile may fall, by scenario (about 5x the
# bookkeeping measured above; a SingleStream query of a tiny model takes 0.3 ms, so a 0.2 ms
# allowance would let its latencies be halved) ...
SHORT_BY_NS = {"SingleStream": 50_000, "MultiStream": 200_000, "Offline": 200_000}
# ... or this share of it, whichever is larger: at p99 a loaded machine delays the SUT's own
# stamp behind LoadGen's by more (measured: 2 ms of a 25 ms tiny-model p99 on 2 busy cores);
# a cheat that halves the latencies is past every share at p50 already.
SHORT_BY_SHARE = {"p50": 0.05, "p90": 0.05, "p99": 0.15}
MAX_ARRAY_BYTES = 1 << 30  # 2^27 int64 rows: 3.7 hours of 100 us queries
Ints = npt.NDArray[np.int64]


def check_query_latencies(contents: Contents) -> Passed:
    """Each bundled query_latencies.npz gives its run's logged count and p50, p90, p99."""
    checked = 0
    for member in contents.named(QUERY_LATENCIES_FILE):
        log_member = beside(member, DETAIL_LOG)
        if not contents.has(log_member):
            continue  # not a run's (the detail-log check names a result without its log)
        try:
            columns = read_columns(contents.path(member))
            problem = latency_problem(columns, parse_detail_log(contents.path(log_member)))
        except ResultError as exc:
            raise contents.failed(CHECK, contents.shown(str(exc))) from None
        if problem is not None:
            raise contents.failed(CHECK, f"{member}: {problem} {log_member}")
        checked += 1
    if not checked:
        return Passed(
            check=CHECK, detail=f"no {QUERY_LATENCIES_FILE} bundled (older runs wrote none)"
        )
    return Passed(
        check=CHECK,
        detail=f"{checked} {QUERY_LATENCIES_FILE} give their LoadGen log's query count and "
        f"{', '.join(CHECKED)} (at most LoadGen's, within its bookkeeping)",
    )


def latency_problem(columns: Mapping[str, Ints], log: DetailLog) -> str | None:
    """What in the stamped latencies contradicts LoadGen's log, ending before the log's name."""
    per_query = bool(log.get("result_50.00_percentile_per_query_latency_ns"))
    latencies, queries = latencies_ns(columns, per_query=per_query)
    logged_queries = logged_int(log, "result_query_count")
    if logged_queries is not None and queries != logged_queries:
        return f"holds {queries} queries, but result_query_count is {logged_queries} in"
    if len(latencies) == 0:
        return None if not logged_queries else "holds no latency, unlike"
    ordered = np.sort(latencies)
    logged = latency_percentiles_ns(log)
    scenario = str(log.get("effective_scenario"))
    bounded_below = scenario != "Server"
    short_by_ns = SHORT_BY_NS.get(scenario, max(SHORT_BY_NS.values()))
    for name in CHECKED:
        expected = logged.get(name)
        if expected is None:
            continue
        index = int(len(ordered) * float(PERCENTILES[name]) / 100)
        found = int(ordered[min(index, len(ordered) - 1)])
        allowed = max(short_by_ns, SHORT_BY_SHARE[name] * expected) if bounded_below else math.inf
        if not 0 <= expected - found <= allowed:
            less = f", and at most {allowed:.0f} ns less" if bounded_below else ""
            return (
                f"its {name} is {found} ns, but LoadGen's {name} is {expected} ns (it may be "
                f"at most that{less}) in"
            )
    return None


def latencies_ns(columns: Mapping[str, Ints], *, per_query: bool) -> tuple[Ints, int]:
    """LoadGen's latencies from the stamps, and how many queries there were.

    Per query (MultiStream: its last completion minus its issue), else per sample (each
    sample of a completion row, minus its query's issue).
    """
    query, issue, done = columns["query"], columns["issue_ns"], columns["complete_ns"]
    if len(query) == 0:
        return np.zeros(0, dtype=np.int64), 0
    order = np.argsort(query, kind="stable")
    query, issue, done, samples = query[order], issue[order], done[order], columns["samples"][order]
    starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])
    first_issue = np.minimum.reduceat(issue, starts)
    if per_query:
        return (np.maximum.reduceat(done, starts) - first_issue).astype(np.int64), len(starts)
    row_issue = np.repeat(first_issue, np.diff(np.r_[starts, len(query)]))
    if np.any(samples < 0) or int(samples.sum()) > MAX_ARRAY_BYTES // 8:
        raise ResultError(f"{QUERY_LATENCIES_FILE}: its sample counts are not a run's")
    return np.repeat(done - row_issue, samples).astype(np.int64), len(starts)


def read_columns(path: Path) -> dict[str, Ints]:
    """The file's four int64 columns, of one length; ResultError naming what is wrong."""
    try:
        with zipfile.ZipFile(path) as archive:
            sizes = {info.filename: info.file_size for info in archive.infolist()}
            wanted = {f"{name}.npy" for name in ("header", *COLUMNS)}
            if set(sizes) != wanted:
                raise ResultError(f"{path}: holds {sorted(sizes)}, not {sorted(wanted)}")
            big = [name for name, size in sizes.items() if size > MAX_ARRAY_BYTES]
            if big:
                raise ResultError(f"{path}: {big[0]} inflates past {MAX_ARRAY_BYTES:,} bytes")
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(str(data["header"]))
            columns = {name: np.asarray(data[name]) for name in COLUMNS}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise ResultError(f"{path}: not a query_latencies.npz ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ResultError(f"{path}: its header is not format {FORMAT}")
    for name, column in columns.items():
        if column.dtype != np.int64 or column.ndim != 1:
            raise ResultError(f"{path}: {name} is {column.dtype}[{column.ndim}d], not int64[1d]")
    if len({len(c) for c in columns.values()}) != 1:
        raise ResultError(f"{path}: its columns differ in length")
    return columns
