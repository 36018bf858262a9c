"""The file-reading helpers every collector builds on."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.fingerprint.probe import Missing, Probe, format_cpulist, parse_cpulist, size_kib


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11]),
        ("5", [5]),
        ("", []),
        ("0-1\n", [0, 1]),
    ],
)
def test_parse_cpulist(text: str, cpus: list[int]) -> None:
    assert parse_cpulist(text) == cpus


@pytest.mark.parametrize(
    ("cpus", "text"),
    [([0, 1, 2, 3, 8, 10, 11], "0-3,8,10-11"), ([3, 2, 2, 0], "0,2-3"), ([], "")],
)
def test_format_cpulist(cpus: list[int], text: str) -> None:
    assert format_cpulist(cpus) == text


@pytest.mark.parametrize(
    ("text", "kib"), [("32K", 32), ("46080K", 46080), ("2M", 2048), ("1G", 1048576), ("4096", 4)]
)
def test_size_kib(text: str, kib: int) -> None:
    assert size_kib(text) == kib


def test_text_records_a_missing_file_with_its_root_relative_path(tmp_path: Path) -> None:
    probe = Probe(tmp_path)
    assert probe.text("sys/x/y", "cpu.y", "no driver (VM?)") is None
    assert probe.missing == [Missing(field="cpu.y", reason="/sys/x/y not present: no driver (VM?)")]


def test_text_reads_stripped_text(tmp_path: Path) -> None:
    (tmp_path / "f").write_text(" hello \n")
    probe = Probe(tmp_path)
    assert probe.text("/f", "x") == "hello"
    assert probe.missing == []


def test_a_directory_in_place_of_a_file_is_recorded(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    probe = Probe(tmp_path)
    assert probe.text("d", "x") is None
    assert probe.missing == [Missing(field="x", reason="/d: Is a directory")]


def test_integer_and_cpulist_record_unparseable_text(tmp_path: Path) -> None:
    (tmp_path / "n").write_text("fast\n")
    (tmp_path / "l").write_text("0-a\n")
    probe = Probe(tmp_path)
    assert probe.integer("n", "cpu.max_mhz") is None
    assert probe.cpulist("l", "cpu.online_cpus") is None
    assert [m.to_dict() for m in probe.missing] == [
        {"field": "cpu.max_mhz", "reason": "/n: not an integer: 'fast'"},
        {"field": "cpu.online_cpus", "reason": "/l: not a cpulist: '0-a'"},
    ]


def test_optional_records_nothing(tmp_path: Path) -> None:
    probe = Probe(tmp_path)
    assert probe.optional("absent") is None
    assert probe.missing == []


def test_is_live_only_for_the_real_root(tmp_path: Path) -> None:
    assert Probe(Path("/")).is_live
    assert not Probe(tmp_path).is_live
