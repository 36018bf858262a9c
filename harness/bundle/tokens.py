"""A generative run's token figures against its LoadGen log and the SUT's own token counts.

result.json's `generation` block takes tokens/s and the TTFT/TPOT percentiles from
mlperf_log_detail.txt, and the output lengths from token_times.npz, the SUT's own count of
the tokens it made per query (harness.execution.genrunner). Reading both again gives back
every figure of the block, and the token checks (harness.analysis.tokens) run again on them
give back its findings: a key holder who triples tokens/s or halves TTFT in result.json, or
in the log alone, or edits the SUT's counts, makes them disagree, even when signing again.

bundle may not import the runner: token_times.npz is read here as a foreign file, a zip of
its arrays, each bounded before it is inflated, no pickles.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import numpy.typing as npt

from harness.analysis.tokens import output_tokens, token_problems, told_tokens_per_query
from harness.bundle.crosscheck import Contents, Passed, beside
from harness.errors import ResultError
from harness.records.generation import TOKEN_TIMES_FORMAT
from harness.records.layout import DETAIL_LOG, TOKEN_TIMES_FILE
from harness.records.loadgen_log import TOKEN_PERCENTILES, TokenFigures, parse_detail_log
from harness.records.loadgen_log import token_figures as logged_figures
from harness.strictjson import JsonObject

CHECK = "tokens"
COLUMNS = ("issue_ns", "first_ns", "end_ns", "tokens")
OPTIONAL = ("start_ns",)  # older files lack it
MAX_ARRAY_BYTES = 1 << 28  # 2^25 int64 rows: 33 million queries
Ints = npt.NDArray[np.int64]


def check_tokens(contents: Contents) -> Passed:
    """Each generative result's token figures equal its log's, its counts the SUT's file's."""
    checked = 0
    for member in contents.results():
        log = beside(member, DETAIL_LOG)
        if not contents.has(log):
            continue  # the detail-log check names a result without its log
        result = contents.result_data(member, CHECK)
        generation = result.get("generation")
        if generation is None:
            continue  # not a generative run
        times = beside(member, TOKEN_TIMES_FILE)
        if not isinstance(generation, dict):
            raise contents.failed(CHECK, f"{member}: generation is not an object")
        if not contents.has(times):
            raise contents.failed(
                CHECK,
                f"{member} is a generative run's but {times} is not bundled; its token counts "
                "have no source",
            )
        try:
            figures = logged_figures(parse_detail_log(contents.path(log)))
            counts = read_token_times(contents.path(times))
        except ResultError as exc:
            raise contents.failed(CHECK, contents.shown(str(exc))) from None
        problem = generation_problem(result, generation, figures, counts)
        if problem is not None:
            raise contents.failed(CHECK, f"{member}: {problem} ({log}, {times})")
        checked += 1
    if not checked:
        return Passed(check=CHECK, detail="no generative result bundled")
    return Passed(
        check=CHECK,
        detail=f"{checked} generative result.json give their {DETAIL_LOG}'s tokens/s, TTFT "
        f"and TPOT, their {TOKEN_TIMES_FILE}'s token counts and the token checks' findings",
    )


def expected_generation(
    scenario: str, figures: TokenFigures | None, columns: Mapping[str, Ints]
) -> dict[str, object]:
    """What the generation block must hold, by dotted key, from the log and the SUT's counts."""
    counted = output_tokens([int(t) for t in columns["tokens"]])
    span_s = _span_s(columns)
    values: dict[str, object] = {
        "output_tokens": None if counted is None else _fields(counted),
    }
    if figures is None:
        values.update(
            {
                "tokens_per_second": None,
                "ttft_ns": None,
                "tpot_ns": None,
                "output_tokens_per_query": None,
                "token_problems": ["LoadGen ran without token latencies"],
            }
        )
        return values
    values["tokens_per_second"] = figures.tokens_per_second
    values["ttft_ns"] = _percentiles(figures.ttft_ns)
    values["tpot_ns"] = _percentiles(figures.tpot_ns)
    values["output_tokens_per_query"] = told_tokens_per_query(figures, counted, span_s)
    values["token_problems"] = list(
        token_problems(scenario=scenario, figures=figures, counted=counted, span_s=span_s)
    )
    return values


def generation_problem(
    result: JsonObject,
    generation: JsonObject,
    figures: TokenFigures | None,
    columns: Mapping[str, Ints],
) -> str | None:
    """The first key of the generation block the log and counts contradict, in words."""
    expected = expected_generation(str(result.get("scenario")), figures, columns)
    for key, wanted in expected.items():
        recorded = generation.get(key)
        if not _same(recorded, wanted):
            return f"generation.{key} is {_short(recorded)}, but its files give {_short(wanted)}"
    problems = expected["token_problems"]
    if problems and result.get("valid") is not False:
        return "valid is true, but the token checks find the run INVALID"
    return None


def read_token_times(path: Path) -> dict[str, Ints]:
    """token_times.npz's int64 columns, of one length; ResultError naming what is wrong."""
    try:
        with zipfile.ZipFile(path) as archive:
            sizes = {info.filename: info.file_size for info in archive.infolist()}
        wanted = {f"{name}.npy" for name in ("format", *COLUMNS)}
        allowed = wanted | {f"{name}.npy" for name in OPTIONAL}
        if not wanted <= set(sizes) <= allowed:
            raise ResultError(f"{path}: holds {sorted(sizes)}, not {sorted(wanted)}")
        big = [name for name, size in sizes.items() if size > MAX_ARRAY_BYTES]
        if big:
            raise ResultError(f"{path}: {big[0]} inflates past {MAX_ARRAY_BYTES:,} bytes")
        with np.load(path, allow_pickle=False) as data:
            version = data["format"]
            columns = {name: np.asarray(data[name]) for name in COLUMNS}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise ResultError(f"{path}: not a {TOKEN_TIMES_FILE} ({exc})") from None
    if version.shape != () or version.dtype.kind not in "iu" or int(version) != TOKEN_TIMES_FORMAT:
        raise ResultError(f"{path}: its format is not {TOKEN_TIMES_FORMAT}")
    for name, column in columns.items():
        if column.dtype != np.int64 or column.ndim != 1:
            raise ResultError(f"{path}: {name} is {column.dtype}[{column.ndim}d], not int64[1d]")
    if len({len(c) for c in columns.values()}) != 1:
        raise ResultError(f"{path}: its columns differ in length")
    if np.any(columns["tokens"] < 0):
        raise ResultError(f"{path}: a query has a negative token count")
    return columns


def _span_s(columns: Mapping[str, Ints]) -> float | None:
    """From the first query's issue to the last answer (s), as the runner computes it."""
    if len(columns["end_ns"]) == 0:
        return None
    return (int(columns["end_ns"].max()) - int(columns["issue_ns"].min())) / 1e9


def _fields(counted: object) -> dict[str, object]:
    names = ("queries", "total", "mean", "min", "p50", "max")
    return {name: getattr(counted, name) for name in names}


def _percentiles(values: Mapping[str, int | None] | None) -> dict[str, object] | None:
    if values is None:
        return None
    return {p: values.get(p) for p in TOKEN_PERCENTILES}


def _same(recorded: object, wanted: object) -> bool:
    """Equal, key by key, with floats compared to 1e-9 (JSON round trips) and bools apart."""
    if isinstance(wanted, dict):
        return (
            isinstance(recorded, dict)
            and set(recorded) == set(wanted)
            and all(_same(recorded[k], v) for k, v in wanted.items())
        )
    if isinstance(wanted, list):
        return (
            isinstance(recorded, list)
            and len(recorded) == len(wanted)
            and all(_same(r, w) for r, w in zip(recorded, wanted, strict=True))
        )
    if isinstance(recorded, bool) or isinstance(wanted, bool):
        return type(recorded) is type(wanted) and recorded == wanted
    if isinstance(recorded, int | float) and isinstance(wanted, int | float):
        return math.isclose(recorded, wanted, rel_tol=1e-9, abs_tol=1e-9)
    return recorded == wanted


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 160 else f"{text[:157]}..."
