"""harness.strictjson: JSON of finite numbers in range, bounded nesting, refusals by key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.errors import ResultError
from harness.strictjson import INT_MAX, INT_MIN, MAX_DEPTH, bad_number, loads, read_json


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
