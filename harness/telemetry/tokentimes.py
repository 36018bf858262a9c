"""token_times.npz read back: each generative query's stamps, and what reports draw from them.

The generative SUT (harness.loadgen.gensut) stamps each completed query with
``time.monotonic_ns`` when LoadGen issued it, when generation started, at its first token and
at its end, and counts its tokens; harness.execution.genrunner writes them after the window
(format harness.records.generation.TOKEN_TIMES_FORMAT). A query's time to first token is its
first token minus its issue; its time per output token is (end - first) / (tokens - 1), as
LoadGen computes it, defined only for queries of 2 tokens or more.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from harness.errors import ResultError
from harness.records.generation import TOKEN_TIMES_FORMAT

MAX_TOKEN_TIMES_BYTES = 256 << 20  # 40 bytes a query: millions of queries
COLUMNS = ("issue_ns", "first_ns", "end_ns", "tokens")

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True, eq=False)
class TokenTimes:
    """One row per completed query (monotonic ns); ``start_ns`` None in files from before it."""

    issue_ns: Ints
    first_ns: Ints
    end_ns: Ints
    tokens: Ints
    start_ns: Ints | None = None

    def __post_init__(self) -> None:
        columns = [self.issue_ns, self.first_ns, self.end_ns, self.tokens]
        lengths = {
            len(c) for c in (*columns, *([self.start_ns] if self.start_ns is not None else []))
        }
        if len(lengths) > 1:
            raise ValueError(f"token time columns differ in length: {sorted(lengths)}")

    @property
    def queries(self) -> int:
        """How many completed queries were stamped."""
        return len(self.issue_ns)

    def ttft_ns(self) -> Ints:
        """Each query's time to first token: first token minus issue."""
        return (self.first_ns - self.issue_ns).astype(np.int64)

    def tpot_ns(self) -> Floats:
        """Each query's time per output token after the first; queries of one token left out."""
        many = self.tokens > 1
        spans = (self.end_ns[many] - self.first_ns[many]).astype(np.float64)
        return spans / (self.tokens[many] - 1).astype(np.float64)


def tokens_over_time(times: TokenTimes, bin_s: float) -> tuple[Floats, Floats]:
    """(bin middle s, output tokens/s) of the queries completed in each bin from the first issue.

    Each query's tokens count when it completes (LoadGen's "completed tokens"). The last bin
    ends at the last completion; a remainder under half a bin joins the bin before it.
    """
    if not bin_s > 0:
        raise ValueError(f"bin_s must be > 0, got {bin_s}")
    if times.queries == 0:
        return np.zeros(0), np.zeros(0)
    done_s = (times.end_ns - int(times.issue_ns.min())) / 1e9
    end_s = max(float(done_s.max()), 1e-9)
    edges = np.arange(0.0, end_s, bin_s)
    if len(edges) > 1 and end_s - edges[-1] < bin_s / 2:
        edges = edges[:-1]
    edges = np.append(edges, end_s)
    counts, _ = np.histogram(done_s, bins=edges, weights=times.tokens.astype(np.float64))
    widths = np.diff(edges)
    return edges[:-1] + widths / 2, counts / widths


def span_s(times: TokenTimes) -> float:
    """From the first issue to the last completion, in seconds (0 for no query)."""
    if times.queries == 0:
        return 0.0
    return float(times.end_ns.max() - times.issue_ns.min()) / 1e9


def _integers(values: np.ndarray, name: str) -> Ints:
    """A column as int64; ValueError for any other kind (floats, NaN, strings, objects)."""
    array = np.asarray(values)
    if array.dtype.kind not in "iu":
        raise ValueError(f"{name} holds {array.dtype}, not integers")
    return array.astype(np.int64)


def read_token_times(path: Path) -> TokenTimes:
    """Read a token_times.npz (bounded, no pickles); ResultError names the file and the fault."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ResultError(f"{path}: cannot read ({exc})") from None
    if size > MAX_TOKEN_TIMES_BYTES:
        raise ResultError(f"{path}: larger than {MAX_TOKEN_TIMES_BYTES} bytes; not read")
    try:
        with path.open("rb") as handle, np.load(handle, allow_pickle=False) as data:
            version = int(_integers(data["format"], "format"))
            columns = {name: _integers(data[name], name) for name in COLUMNS}
            start = _integers(data["start_ns"], "start_ns") if "start_ns" in data else None
    except OSError as exc:
        raise ResultError(f"{path}: cannot read ({exc})") from None
    except (KeyError, ValueError, TypeError, zipfile.BadZipFile) as exc:
        raise ResultError(f"{path}: not a beyond-tops token_times.npz ({exc})") from None
    if not 1 <= version <= TOKEN_TIMES_FORMAT:  # every format keeps these columns
        raise ResultError(
            f"{path}: token times format {version}, this beyond-tops reads "
            f"formats 1 to {TOKEN_TIMES_FORMAT}; upgrade beyond-tops"
        )
    try:
        return TokenTimes(**columns, start_ns=start)
    except ValueError as exc:
        raise ResultError(f"{path}: {exc}") from None
