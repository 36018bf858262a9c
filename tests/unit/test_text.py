"""harness.text.printable: what a record holds is shown in a terminal, never obeyed by it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.text import printable
from tests.conftest import REPO

SHOWN = [
    ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),  # window title
    ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),  # screen clear, cursor home
    ("ok\rFAKE", "ok\\x0dFAKE"),  # a carriage return overwrites what was printed
    ("\x9b31m", "\\x9b31m"),  # C1 CSI, an escape on its own on some terminals
    ("a\x00b\x7fc", "a\\x00b\\x7fc"),
    ("tab\there", "tab\\x09here"),
    ("\u202eevil\u202c", "\\u202eevil\\u202c"),  # right-to-left override, pop
    ("\u2066x\u2069\u200f\u061c", "\\u2066x\\u2069\\u200f\\u061c"),  # isolates, marks
    ("caf\udce9", "caf\\udce9"),  # a non-UTF-8 byte of a file name, decoded with surrogates
    ("plain text, é, 中文, ⚠", "plain text, é, 中文, ⚠"),
    ("two\nlines", "two\nlines"),
]


@pytest.mark.parametrize(("raw", "shown"), SHOWN)
def test_control_and_bidi_characters_are_shown_as_escapes(raw: str, shown: str) -> None:
    assert printable(raw) == shown
    printable(raw).encode("utf-8")  # nothing left that cannot be written out


def test_a_one_line_value_shows_its_newlines_too() -> None:
    assert printable("VALID\n  result  INVALID", newlines=False) == "VALID\\x0a  result  INVALID"


def test_every_c0_and_c1_control_but_newline_is_shown() -> None:
    controls = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if c != 0x0A]
    shown = printable("".join(controls))
    assert all(ch not in shown for ch in controls)
    assert shown.count("\\x") == len(controls)


def test_show_prints_a_records_escape_sequences_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(REPO / "tests" / "fixtures" / "results" / "tiny-singlestream-v3", run)
    data = json.loads((run / "result.json").read_text())
    data["scenario_name"] = "t\x1b]0;pwned\x07\x1b[2J\u202eevil"
    (run / "result.json").write_text(json.dumps(data))
    assert main(["show", str(run)]) == 0
    out, err = capsys.readouterr()
    assert "t\\x1b]0;pwned\\x07\\x1b[2J\\u202eevil: SingleStream" in out
    assert "\x1b" not in out + err and "\x07" not in out + err and "\u202e" not in out + err
