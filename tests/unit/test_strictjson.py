"""harness.strictjson: JSON of finite numbers in range, bounded nesting, refusals by key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.errors import ResultError
from harness.strictjson import (
    INT_MAX,
    INT_MIN,
    MAX_DEPTH,
    Format,
    Versioned,
    bad_number,
    check_versioned,
    loads,
    read_json,
    read_versioned,
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": NaN}', "doc.json: a is NaN, not a finite number"),
        ('{"a": {"b": [1, Infinity]}}', "doc.json: a.b[1] is Infinity, not a finite number"),
        ('{"a": -Infinity}', "a is -Infinity, not a finite number"),
        ('{"size": 1e999}', "size is Infinity, not a finite number"),
        (f'{{"n": {INT_MAX + 1}}}', "n is 1.84e+19, out of the 64-bit range"),
        (f'{{"n": {INT_MIN - 1}}}', "n is -9.22e+18, out of the 64-bit range"),
        ("[" * 5000 + "]" * 5000, f"doc.json: nests more than {MAX_DEPTH} levels deep"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "[0]" * 25 + "[0..."),
        ("NaN", "the value is NaN"),
        ('{"a": 1', "doc.json: not readable JSON (Expecting"),
        ("9" * 5000, "not readable JSON (Exceeds the limit"),
    ],
)
def test_what_the_grammar_refuses_is_named_by_file_and_key(text: str, message: str) -> None:
    with pytest.raises(ResultError) as caught:
        loads(text, "doc.json", ResultError)
    assert str(caught.value).startswith(f"doc.json: {message.removeprefix('doc.json: ')}")


def test_what_it_accepts_is_returned_as_json_reads_it() -> None:
    text = f'{{"a": [1, 2.5, {INT_MAX}, {INT_MIN}, true, null, "x"], "b": {{"c": -0.0}}}}'
    assert loads(text, "doc.json", ResultError) == {
        "a": [1, 2.5, INT_MAX, INT_MIN, True, None, "x"],
        "b": {"c": -0.0},
    }
    assert bad_number([[[]]]) is None


def test_a_hostile_key_is_shortened_in_the_message() -> None:
    found = bad_number({"k" * 500: float("nan")})
    assert found is not None and found[0] == "k" * 64


def test_read_json_takes_a_bom_and_refuses_a_fifo(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert read_json(path, ResultError) == {"a": 1}
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    with pytest.raises(ResultError, match="is a FIFO, not a regular file"):
        read_json(fifo, ResultError)


# --- read_versioned: the one reader of our versioned formats ---

FMT = Format(what="a beyond-tops thing", newest=3, oldest=2, kind="thing", older_fix="redo it")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1]", "not a beyond-tops thing (expected a JSON object, got a list [1])"),
        ('{"kind": "other", "schema_version": 3}', "not a beyond-tops thing (kind is not 'thing')"),
        ('{"schema_version": 3}', "not a beyond-tops thing (kind is not 'thing')"),
        ('{"kind": "thing"}', "no schema_version; not a beyond-tops thing"),
        ('{"kind": "thing", "schema_version": true}', "no schema_version; not a beyond-tops thing"),
        (
            '{"kind": "thing", "schema_version": 4}',
            "schema_version 4 was written by a newer beyond-tops (this one reads 2 to 3); "
            "upgrade beyond-tops",
        ),
        (
            '{"kind": "thing", "schema_version": 1}',
            "schema_version 1 is older than this beyond-tops reads (2 to 3); redo it",
        ),
        ('{"kind": "thing", "schema_version": NaN}', "schema_version is NaN"),
    ],
)
def test_read_versioned_names_the_file_and_what_to_do(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "thing.json"
    path.write_text(text)
    with pytest.raises(ResultError) as info:
        read_versioned(path, FMT, ResultError)
    assert str(info.value).startswith(f"{path}: {message}")


def test_read_versioned_returns_the_object_and_its_version(tmp_path: Path) -> None:
    path = tmp_path / "thing.json"
    path.write_text('{"kind": "thing", "schema_version": 2, "n": 1}')
    assert read_versioned(path, FMT, ResultError) == Versioned(
        {"kind": "thing", "schema_version": 2, "n": 1}, 2
    )
    with pytest.raises(ResultError, match=r"gone\.json: no such thing; make one"):
        read_versioned(tmp_path / "gone.json", FMT, ResultError, missing="no such thing; make one")


def test_files_from_before_versions_read_as_the_unversioned_version(tmp_path: Path) -> None:
    old = Format(what="a retry file", newest=1, oldest=0, kind="retry", unversioned=0)
    path = tmp_path / "retry.json"
    path.write_text('{"latency_ns": 1}')
    assert read_versioned(path, old, ResultError).version == 0
    assert old.reads() == "0 to 1" and FMT.reads() == "2 to 3"
    single = Format(what="a one-version file", newest=1, oldest=1)
    assert single.reads() == "1"
    with pytest.raises(ResultError, match=r"\(this one reads 1\); upgrade"):
        check_versioned({"schema_version": 2}, "x.json", single, ResultError)
