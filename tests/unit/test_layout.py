"""harness.records.layout: every file name of what the harness writes, each named once."""

from __future__ import annotations

import re
from pathlib import Path

from harness.records import layout

HARNESS = Path(layout.__file__).resolve().parents[1]
SUFFIXES = "json|txt|npz|csv|conf|config|md|html|sig|yaml"
NAME = re.compile(rf"""(["'])([A-Za-z0-9_-]+\.(?:{SUFFIXES}))\1""")
# Names that are no file of a run, group, bundle, fleet, site or submission tree: the JSON
# Schemas bundled with the code, datasets' label files, and MLPerf's published trees' systems.
ELSEWHERE = {
    "result.schema.json",
    "published.schema.json",
    "reproduction.schema.json",
    "val_map.txt",
    "labels.txt",
}


def _names() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(layout).items()
        if name.isupper() and isinstance(value, str)
    }


def test_each_name_is_spelled_once() -> None:
    values = list(_names().values())
    assert len(values) == len(set(values)), "two constants name the same file"


def test_mlperf_names_are_mlperfs() -> None:
    assert layout.SUMMARY_LOG == "mlperf_log_summary.txt"
    assert layout.DETAIL_LOG == "mlperf_log_detail.txt"
    assert layout.ACCURACY_LOG == "mlperf_log_accuracy.json"
    assert layout.TRACE_LOG == "mlperf_log_trace.json"
    assert (layout.MLPERF_CONF, layout.USER_CONF) == ("mlperf.conf", "user.conf")
    assert layout.ACCURACY_TXT == "accuracy.txt"
    assert (layout.VERIFY_ACCURACY, layout.VERIFY_PERFORMANCE) == (
        "verify_accuracy.txt",
        "verify_performance.txt",
    )
    assert layout.PERFORMANCE_RUN == "performance/run_1"


def test_paths_of_a_run_directory(tmp_path: Path) -> None:
    assert layout.result_file(tmp_path) == tmp_path / "result.json"
    assert layout.detail_log(tmp_path) == tmp_path / "mlperf_log_detail.txt"
    assert layout.accuracy_log(tmp_path) == tmp_path / "accuracy" / "mlperf_log_accuracy.json"
    assert layout.compliance_dir(tmp_path, "TEST01") == tmp_path / "compliance" / "TEST01"
    assert set(layout.ATTEMPT_FILES) <= set(_names().values())


def test_no_module_spells_a_file_name_the_layout_holds() -> None:
    held = set(_names().values())
    spelled = []
    for path in sorted(HARNESS.rglob("*.py")):
        if path == Path(layout.__file__).resolve() or path.name == "versions.py":
            continue
        for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("#"):
                continue
            for _, name in NAME.findall(line):
                if name in held:
                    spelled.append(f"{path.relative_to(HARNESS.parent)}:{line_no}: {name}")
    assert not spelled, "use harness.records.layout's name:\n" + "\n".join(spelled)


def test_every_file_name_literal_is_the_layouts_or_no_file_of_ours() -> None:
    held = set(_names().values())
    unknown = set()
    for path in sorted(HARNESS.rglob("*.py")):
        if path == Path(layout.__file__).resolve() or path.name == "versions.py":
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.lstrip().startswith("#"):
                unknown |= {name for _, name in NAME.findall(line)} - held - ELSEWHERE
    assert not unknown, f"file names no module of harness.records.layout holds: {unknown}"
