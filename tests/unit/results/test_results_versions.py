"""harness.results.versions: one table of every format's schema version, shown by --version."""

from __future__ import annotations

from typing import Any

import pytest

from harness import cli
from harness.results import runfile
from harness.results.versions import FORMATS, format_lines


def test_each_format_once_with_a_readable_range() -> None:
    assert len({f.files for f in FORMATS}) == len(FORMATS)
    for fmt in FORMATS:
        assert 1 <= fmt.oldest_readable <= fmt.version, fmt.files


def test_the_json_schema_is_the_version_written(result_schema: dict[str, Any]) -> None:
    (result,) = [f for f in FORMATS if f.files == "result.json"]
    assert result.version == runfile.SCHEMA_VERSION
    assert result_schema["properties"]["schema_version"] == {"const": result.version}


def test_version_shows_the_harness_and_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"beyond-tops {cli.__version__}"
    assert lines[1:] == format_lines()
    assert "result.json: schema 5 (reads 2-5; harness.results.runfile)" in lines
