"""harness.cli.versions: one table of every format's schema version, shown by --version."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from harness import cli
from harness.cli.versions import FORMATS, format_lines
from harness.records import layout
from harness.results import runfile

HARNESS = Path(cli.__file__).resolve().parents[1]
# Version numbers that are no file format: cache keys and the ONNX IR the zoo writes.
NOT_FORMATS = {
    ("harness.datasets.imagenet", "PREPROCESSING_VERSION"),  # part of the cache key
    ("harness.models.precision", "CONVERTER_VERSION"),  # part of the cache key
    ("harness.models.zoo_graph", "IR_VERSION"),  # ONNX's, in the models it generates
    ("harness.runtime.probe", "PROBE_VERSION"),  # part of the attainable-rate cache key
    # query_latencies.npz's version as bundle's reader checks it: telemetry.latencies.FORMAT,
    # which the bundle may not import (its contract); a test holds the two equal
    ("harness.bundle.latencies", "FORMAT"),
    # the real-weights graph's producer_version: part of the model's bytes and sha256
    ("harness.models.zoo_efficientnet", "GENERATOR_VERSION"),
}
# Files of ours in the layout that carry no version: LoadGen's and MLPerf's, and the scored
# accuracy block (read back only by the run that wrote it, into result.json's accuracy).
UNVERSIONED = {
    layout.ACCURACY_LOG,
    layout.TRACE_LOG,
    layout.ACCURACY_BLOCK,
    # onnxruntime-genai's and Hugging Face's formats, written as they define them
    layout.GENAI_CONFIG,
    layout.TOKENIZER_JSON,
    layout.TOKENIZER_CONFIG,
}
_VERSION_NAME = re.compile(r"(^|_)(VERSION|FORMAT|OLDEST_READABLE)$|_VERSION_|^OLDEST")


def test_each_format_once_with_a_readable_range() -> None:
    assert len({f.files for f in FORMATS}) == len(FORMATS)
    for fmt in FORMATS:
        found = fmt.versions()
        if found is None:
            continue
        version, oldest = found
        assert 0 <= oldest <= version, fmt.files


def test_the_json_schema_is_the_version_written(result_schema: dict[str, Any]) -> None:
    (result,) = [f for f in FORMATS if f.files == "result.json"]
    assert result.versions() == (runfile.SCHEMA_VERSION, runfile.RESULT.oldest)
    assert result_schema["properties"]["schema_version"] == {"const": runfile.SCHEMA_VERSION}


def test_version_shows_the_harness_and_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"beyond-tops {cli.__version__}"
    assert lines[1:] == format_lines()
    assert "result.json: schema 12 (reads 2-12; harness.results.runfile)" in lines
    assert "retry.json, peak.json: schema 1 (reads 0-1; harness.handoff)" in lines


def _module(path: Path) -> str:
    return ".".join(path.relative_to(HARNESS.parent).with_suffix("").parts)


def _versions_defined() -> dict[tuple[str, str], set[str]]:
    """(module, name) of every module-level version constant or Format, and the names it uses."""
    found: dict[tuple[str, str], set[str]] = {}
    for path in sorted(HARNESS.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = node.targets[0] if isinstance(node, ast.Assign) else None
            if isinstance(node, ast.AnnAssign):
                target = node.target
            if not isinstance(target, ast.Name) or node.value is None:  # type: ignore[union-attr]
                continue
            value = node.value  # type: ignore[union-attr]
            is_format = (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id == "Format"
            )
            is_number = isinstance(value, ast.Constant) and type(value.value) is int
            if is_format or (is_number and _VERSION_NAME.search(target.id)):
                used = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
                found[(_module(path), target.id)] = used
    return found


def test_every_versioned_writer_is_listed() -> None:
    defined = _versions_defined()
    listed: set[tuple[str, str]] = set()
    for fmt in FORMATS:
        if fmt.version is not None:
            listed.add((fmt.home, fmt.version))
        if isinstance(fmt.oldest, str):
            listed.add((fmt.oldest_home or fmt.home, fmt.oldest))
    # a listed Format covers the constants it is built from
    covered = set(listed)
    for (module, name), used in defined.items():
        if (module, name) in listed:
            covered |= {(module, u) for u in used}
    missing = sorted(set(defined) - covered - NOT_FORMATS)
    assert not missing, f"versions defined but not in harness.cli.versions: {missing}"
    assert listed <= set(defined), "a row names a constant its home does not define"


def test_no_writer_spells_its_version_as_a_bare_number() -> None:
    bare = re.compile(r"""["']schema_version["']\s*:\s*\d""")
    offenders = [
        str(path.relative_to(HARNESS.parent))
        for path in sorted(HARNESS.rglob("*.py"))
        if bare.search(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, f"name the version as a constant listed in versions.py: {offenders}"


def test_every_file_of_ours_in_the_layout_has_a_listed_format() -> None:
    rows = " ".join(f.files for f in FORMATS)
    ours = {
        value
        for name, value in vars(layout).items()
        if name.isupper()
        and isinstance(value, str)
        and value.endswith((".json", ".csv", ".npz"))
        and not value.startswith("mlperf_log_")
    }
    missing = sorted(name for name in ours - UNVERSIONED if name not in rows)
    assert not missing, f"files in the layout whose format versions.py does not list: {missing}"


def test_bundles_query_latencies_reader_checks_the_version_telemetry_writes() -> None:
    from harness.bundle import latencies as bundle_side
    from harness.telemetry import latencies as telemetry_side

    assert bundle_side.FORMAT == telemetry_side.FORMAT
