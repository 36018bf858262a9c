"""Issue #23: bad optional files of a published result: a warning by name, never copied.

A tolerated case, a bad summary, system JSON, measurements JSON or accuracy.txt of the one
result in a copied v4.1 tree (a link out of the tree, a FIFO, a link to /dev/zero, binary,
oversized, non-finite or too deeply nested JSON), imports the result with one warning
naming that file and its fault, and neither uses nor copies the file, nor the secret beside
the tree. A system JSON field of the wrong type is left unknown (null) by name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.hostile import DEADLINE_S, SECRET, error_lines, run_harness, snapshot
from tests.integration.test_bad_input_corpus import OUT
from tests.integration.test_hostile_trees import (
    ACCURACY,
    MEASUREMENTS,
    SUMMARY,
    SYSTEM_DIR,
    SYSTEM_JSON,
    Edit,
    _big,
    _bytes,
    _fifo,
    _link_out,
    _link_to,
    _nested,
    _replace,
    _system,
    _tree,
)


@dataclass(frozen=True)
class Tolerated:
    name: str
    edit: Edit
    bad: str  # the refused file, relative to the tree
    fragment: str
    isolated: bool = False


TOLERATED = [
    Tolerated(
        "accuracy-links-out-of-the-tree",
        _replace(ACCURACY, _link_out("secret.txt")),
        ACCURACY,
        "leads out of",
    ),
    Tolerated(
        "system-json-links-out-of-the-tree",
        _replace(SYSTEM_JSON, _link_out("secret.json")),
        SYSTEM_JSON,
        "leads out of",
    ),
    Tolerated(
        "measurements-json-links-out-of-the-tree",
        _replace(MEASUREMENTS, _link_out("secret.json")),
        MEASUREMENTS,
        "leads out of",
    ),
    Tolerated(
        "summary-links-out-of-the-tree",
        _replace(SUMMARY, _link_out("secret.txt")),
        SUMMARY,
        "leads out of",
    ),
    Tolerated("summary-is-a-fifo", _replace(SUMMARY, _fifo), SUMMARY, "is a FIFO", True),
    Tolerated("accuracy-is-a-fifo", _replace(ACCURACY, _fifo), ACCURACY, "is a FIFO", True),
    Tolerated(
        "system-json-links-to-dev-zero",
        _replace(SYSTEM_JSON, _link_to("/dev/zero")),
        SYSTEM_JSON,
        "(to /dev/zero)",
        True,
    ),
    Tolerated(
        "summary-binary-16-KiB",
        _replace(SUMMARY, _bytes(bytes(range(128, 256)) * 128)),
        SUMMARY,
        "not UTF-8 text",
    ),
    Tolerated(
        "summary-16-KiB-of-NULs",  # valid UTF-8, but not what LoadGen writes
        _replace(SUMMARY, _bytes(b"\0" * 16384)),
        SUMMARY,
        "not a LoadGen summary (no 'MLPerf Results Summary' header",
    ),
    Tolerated("summary-oversized", _replace(SUMMARY, _big(2 * 1024**2)), SUMMARY, "larger than"),
    Tolerated("system-json-nan", _system(None, '{"number_of_nodes": NaN}'), SYSTEM_JSON, "is NaN"),
    Tolerated(
        "system-json-1e999",
        _system(None, '{"number_of_nodes": 1e999}'),
        SYSTEM_JSON,
        "number_of_nodes is Infinity",
    ),
    Tolerated(
        "system-json-nested-10000-deep",
        _system(None, _nested(10000)),
        SYSTEM_JSON,
        "nests more than 32 levels deep",
    ),
    Tolerated("system-json-a-list", _system([1, 2]), SYSTEM_JSON, "not a JSON object"),
    Tolerated(
        "system-json-not-utf8",
        _replace(SYSTEM_JSON, _bytes(b'{"system_name": "caf\xe9"}')),
        SYSTEM_JSON,
        "not UTF-8 text",
    ),
]

# A system JSON field of the wrong type: that field is unknown (null in published.json), the
# file itself (inside the tree, regular, finite JSON) is kept, with a warning naming the key.
FIELD_CASES: dict[str, tuple[str, str, object, str]] = {
    "system-json-nested-object-field": (
        "system_name",
        "name",
        {"a": {"b": 1}},
        "key 'system_name' holds a value that is a nested dict, not text or a number",
    ),
    "system-json-boolean-field": (
        "accelerators_per_node",
        "accelerators_per_node",
        True,
        "key 'accelerators_per_node' is true/false, not text or a number",
    ),
    "system-json-giant-field": (
        "framework",
        "framework",
        "x" * 5000,
        "key 'framework' is 5,000 characters long (at most 4,096)",
    ),
}


def test_the_tolerated_cases_are_many_and_their_names_unique() -> None:
    names = [t.name for t in TOLERATED] + list(FIELD_CASES)
    assert len(names) >= 15
    assert len(set(names)) == len(names)


@pytest.mark.timeout(DEADLINE_S + 60)
@pytest.mark.parametrize("case", TOLERATED, ids=[case.name for case in TOLERATED])
def test_a_hostile_optional_file_is_a_warning_and_never_copied(
    case: Tolerated, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    root = _tree(tmp_path, case.edit)
    argv = ["import", "mlperf", str(root / SYSTEM_DIR), "--out", str(tmp_path / OUT)]
    before = snapshot(tmp_path)
    code, err = run_harness(argv, case.isolated, tmp_path, capfd)

    assert "Traceback" not in err, err
    assert code == 0, err
    assert error_lines(err) == [], err
    (note,) = [line for line in err.splitlines() if str(root / case.bad) in line]
    assert note.startswith("  note: ") and case.fragment in note, note
    (record,) = (tmp_path / OUT).iterdir()
    copied = {str(p.relative_to(record)) for p in record.rglob("*") if p.is_file()}
    assert Path(case.bad).name not in {Path(p).name for p in copied}
    assert "mlperf_log_detail.txt" in copied  # the result itself was imported
    for path in record.rglob("*"):
        assert not path.is_symlink()
        assert path.is_dir() or SECRET.encode() not in path.read_bytes()
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k.split("/")[0] != OUT} == before


@pytest.mark.parametrize("case", FIELD_CASES)
def test_a_system_json_field_of_the_wrong_type_is_left_unknown_by_name(
    case: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    key, field, value, fragment = FIELD_CASES[case]
    root = _tree(tmp_path, _system({key: value, "operating_system": "Linux"}))
    argv = ["import", "mlperf", str(root / SYSTEM_DIR), "--out", str(tmp_path / OUT)]
    code, err = run_harness(argv, False, tmp_path, capfd)

    assert "Traceback" not in err and error_lines(err) == [] and code == 0, err
    (note,) = [line for line in err.splitlines() if str(root / SYSTEM_JSON) in line]
    assert fragment in note and note.endswith("left unknown"), note
    (record,) = (tmp_path / OUT).iterdir()
    system = json.loads((record / "published.json").read_text())["system"]
    assert system[field] is None and system["operating_system"] == "Linux"
