"""Issue #23: `harness import mlperf` over hostile trees, and records edited after import.

Every case meets the contract of tests/integration/hostile.py (one `error: ` line with its
fragment, its code, no traceback, nothing written, no hang: FIFOs and devices run as a
child process with a deadline). The tree is a copy of MLPerf's v4.1 fixture, and the path
given is one system's, so the one result there is all there is to import. Bad optional
files of a result are in test_hostile_tree_files.py.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.foreign import MAX_LINE_CHARS, MAX_LOG_BYTES
from harness.published.importer import import_mlperf
from tests.integration.hostile import (
    DEADLINE_S,
    RESULT,
    SECRET,
    Case,
    Setup,
    check_error_case,
)
from tests.integration.test_bad_input_corpus import OUT
from tests.unit.test_published_import import V41

TREE = "tree"  # a copy of MLPerf's v4.1 fixture: closed/UntetherAI/...
SYSTEM_DIR = "closed/UntetherAI/results/h13_u2_preview"  # one SingleStream result
SCENARIO = f"{SYSTEM_DIR}/resnet50/singlestream"
RUN = f"{SCENARIO}/performance/run_1"
DETAIL = f"{RUN}/mlperf_log_detail.txt"
SUMMARY = f"{RUN}/mlperf_log_summary.txt"
SYSTEM_JSON = "closed/UntetherAI/systems/h13_u2_preview.json"
ACCURACY = f"{SCENARIO}/accuracy/accuracy.txt"
MEASUREMENTS = "closed/UntetherAI/measurements/h13_u2_preview/resnet50/singlestream/m.json"

Edit = Callable[[Path], None]  # changes a copied tree (its root given)


# --- a published tree ------------------------------------------------------------------------


def _outside(tmp: Path) -> Path:
    """Files beside the tree that a link may point at: none of them may reach a record."""
    outside = tmp / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (outside / "secret.json").write_text(json.dumps({"system_name": SECRET}))
    shutil.copytree(V41 / RUN.removeprefix("closed/"), outside / "run_1", dirs_exist_ok=True)
    return outside


def _tree(tmp: Path, edit: Edit) -> Path:
    root = tmp / TREE
    shutil.copytree(V41, root / "closed")
    _outside(tmp)
    edit(root)
    return root


def _import(edit: Edit) -> Setup:
    """`harness import mlperf` over one result of a copied tree that `edit` made hostile."""

    def setup(tmp: Path) -> list[str]:
        root = _tree(tmp, edit)
        return ["import", "mlperf", str(root / SYSTEM_DIR), "--out", str(tmp / OUT)]

    return setup


def _replace(rel: str, make: Callable[[Path, Path], None]) -> Edit:
    """Remove the tree's file at `rel` (if any), then `make(path, tmp)` puts another there."""

    def edit(root: Path) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        make(path, root.parent)

    return edit


def _link_out(target: str) -> Callable[[Path, Path], None]:
    return lambda path, tmp: path.symlink_to(tmp / "outside" / target)


def _link_to(target: str) -> Callable[[Path, Path], None]:
    return lambda path, tmp: path.symlink_to(target)


def _fifo(path: Path, tmp: Path) -> None:
    os.mkfifo(path)


def _loop(path: Path, tmp: Path) -> None:
    path.symlink_to(path.name)


def _bytes(data: bytes) -> Callable[[Path, Path], None]:
    def make(path: Path, tmp: Path) -> None:
        path.write_bytes(data)

    return make


def _big(size_bytes: int) -> Callable[[Path, Path], None]:
    def make(path: Path, tmp: Path) -> None:
        with path.open("wb") as handle:
            handle.truncate(size_bytes)  # sparse: no disk, and read back as zeros

    return make


def _log_value(key: str, raw: str) -> Edit:
    """The detail log with `key`'s logged value spelt `raw` (JSON text LoadGen never writes)."""

    def edit(root: Path) -> None:
        path = root / DETAIL
        lines = path.read_text().splitlines(keepends=True)
        for number, line in enumerate(lines):
            if f'"key": "{key}"' in line:
                entry = json.loads(line.removeprefix(":::MLLOG "))
                old = json.dumps(entry["value"])
                assert f'"value": {old}' in line
                lines[number] = line.replace(f'"value": {old}', f'"value": {raw}', 1)
        path.write_text("".join(lines))

    return edit


def _giant_line(root: Path) -> None:
    with (root / DETAIL).open("a") as handle:
        handle.write("x" * (MAX_LINE_CHARS + 10) + "\n")


def _system(data: object, raw: str | None = None) -> Edit:
    return _replace(SYSTEM_JSON, _bytes((raw or json.dumps(data)).encode()))


def _nested(depth: int) -> str:
    return '{"system_name": ' + "[" * depth + "]" * depth + "}"


IMPORT_CASES = [
    Case(
        "import-detail-log-links-out-of-the-tree",
        _import(_replace(DETAIL, _link_out("run_1/mlperf_log_detail.txt"))),
        RESULT,
        "mlperf_log_detail.txt: leads out of",
    ),
    Case(
        "import-run-dir-links-out-of-the-tree",
        _import(_replace(RUN, _link_out("run_1"))),
        RESULT,
        "leads out of",
    ),
    Case(
        "import-performance-dir-links-out-of-the-tree",
        _import(_replace(f"{SCENARIO}/performance", lambda p, tmp: p.symlink_to(tmp / "outside"))),
        RESULT,
        "a link to a directory",
    ),
    Case(
        "import-scenario-dir-links-out-of-the-tree",
        _import(_replace(SCENARIO, lambda p, tmp: p.symlink_to(tmp / "outside"))),
        RESULT,
        "not followed",
    ),
    Case(
        "import-detail-log-is-a-fifo",
        _import(_replace(DETAIL, _fifo)),
        RESULT,
        "mlperf_log_detail.txt: is a FIFO, not a regular file",
        isolated=True,
    ),
    Case(
        "import-detail-log-links-to-dev-zero",
        _import(_replace(DETAIL, _link_to("/dev/zero"))),
        RESULT,
        "(to /dev/zero)",
        isolated=True,
    ),
    Case(
        "import-detail-log-is-a-link-loop",
        _import(_replace(DETAIL, _loop)),
        RESULT,
        "a symbolic link loop",
    ),
    Case(
        "import-detail-log-is-a-broken-link",
        _import(_replace(DETAIL, _link_to("nowhere.txt"))),
        RESULT,
        "cannot be resolved",
    ),
    Case(
        "import-detail-log-oversized",
        _import(_replace(DETAIL, _big(MAX_LOG_BYTES + 1))),
        RESULT,
        "larger than 64 MiB",
    ),
    Case(
        "import-detail-log-with-a-giant-line",
        _import(_giant_line),
        RESULT,
        f"a line of {MAX_LINE_CHARS + 10:,} characters",
    ),
    Case(
        "import-detail-log-not-utf8",
        _import(_replace(DETAIL, _bytes(b':::MLLOG {"key": "x\xff"}\n'))),
        RESULT,
        "not UTF-8 text (byte 19",
    ),
    Case(
        "import-latency-infinity",
        _import(_log_value("result_90.00_percentile_latency_ns", "Infinity")),
        RESULT,
        "result_90.00_percentile_latency_ns is Infinity, not a finite number; LoadGen writes no",
    ),
    Case(
        "import-latency-nan",
        _import(_log_value("result_min_latency_ns", "NaN")),
        RESULT,
        "result_min_latency_ns is NaN",
    ),
    Case(
        "import-latency-1e999",
        _import(_log_value("result_max_latency_ns", "1e999")),
        RESULT,
        "result_max_latency_ns is Infinity",
    ),
    Case(
        "import-latency-beyond-64-bits",
        _import(_log_value("result_mean_latency_ns", str(10**30))),
        RESULT,
        "result_mean_latency_ns is 1e+30, out of the 64-bit range",
    ),
    Case(
        "import-latency-huge-float",
        _import(_log_value("result_50.00_percentile_latency_ns", "1e300")),
        RESULT,
        "result_50.00_percentile_latency_ns is 1e+300, not a whole number in the 64-bit range",
    ),
    Case(
        "import-latency-as-text",
        _import(_log_value("result_99.00_percentile_latency_ns", '"fast"')),
        RESULT,
        "result_99.00_percentile_latency_ns is 'fast', not a whole number",
    ),
    Case(
        "import-log-value-nested-deep",
        _import(_log_value("result_min_latency_ns", "[" * 40 + "]" * 40)),
        RESULT,
        "nests more than 32 levels deep",
    ),
]


def _set(*keys: str | int, value: object) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        inner: Any = data
        for key in keys[:-1]:
            inner = inner[key]
        inner[keys[-1]] = value

    return change


def _published(change: Callable[[dict[str, Any]], None]) -> Setup:
    """`harness show` of a record imported from the v4.1 fixture, then edited by hand."""

    def setup(tmp: Path) -> list[str]:
        import_mlperf(V41.parent / SYSTEM_DIR, tmp / "records")
        (record,) = (tmp / "records").iterdir()
        data = json.loads((record / "published.json").read_text())
        change(data)
        (record / "published.json").write_text(json.dumps(data))
        return ["show", str(record)]

    return setup


PUBLISHED_CASES = [
    Case(
        "show-published-record-with-infinity",
        _published(_set("metric", "value", value=float("inf"))),
        RESULT,
        "published.json: metric.value is Infinity, not a finite number",
    ),
    Case(
        "show-published-record-with-a-huge-integer",
        _published(_set("latency_ns", "p90", value=10**40)),
        RESULT,
        "published.json: latency_ns.p90 is 1e+40, out of the 64-bit range",
    ),
]

CASES = [*IMPORT_CASES, *PUBLISHED_CASES]


def test_the_hostile_tree_cases_are_many_and_their_names_unique() -> None:
    names = [c.name for c in CASES]
    assert len(names) >= 20
    assert len(set(names)) == len(names)


@pytest.mark.timeout(DEADLINE_S + 60)
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_hostile_tree_is_one_error_line(
    case: Case, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    check_error_case(case, tmp_path, capfd, monkeypatch)
