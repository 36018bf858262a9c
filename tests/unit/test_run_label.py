"""--label: its grammar, where it is refused, how it travels, and how older results read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import load_scenario
from harness.errors import ConfigError, ResultError
from harness.records.job import Job, read_job, write_job
from harness.records.request import RunRequest
from harness.records.runlabel import (
    LABEL_GRAMMAR,
    MAX_LABEL_CHARS,
    check_label,
    shared_label,
    shown_name,
)
from harness.report.cells import drawn
from harness.report.plots import UtilizationBar, utilization_png
from harness.results.migrate import migrate_7_to_8
from harness.results.runfile import SCHEMA_VERSION, from_dict, to_dict
from tests.conftest import TINY_SS, write_scenario

ACCEPTED = [
    "baseline",
    "a" * MAX_LABEL_CHARS,
    "<script>alert(1)</script>",  # printable: allowed, and escaped wherever it is written
    "javascript:alert(1)",
    "$(rm -rf ~); `id` | tee & 'x' \"y\"",
    "H100 \u2014 2 \u00d7 GPU, \u00fcn\u00efcode",
]
REFUSED = [
    ("", "0 characters"),
    ("a" * (MAX_LABEL_CHARS + 1), f"{MAX_LABEL_CHARS + 1} characters"),
    ("two\nlines", "character U+000A is not printable"),
    ("tab\there", "character U+0009 is not printable"),
    ("esc \x1b[2J", "character U+001B is not printable"),
    ("rtl \u202e override", "character U+202E is not printable"),
    ("zero\u200bwidth", "character U+200B is not printable"),
    (" padded", "a space at an end"),
    ("padded ", "a space at an end"),
]


@pytest.mark.parametrize("label", ACCEPTED)
def test_printable_labels_are_accepted_as_they_are(label: str) -> None:
    assert check_label(label) == label


@pytest.mark.parametrize(("label", "why"), REFUSED)
def test_a_label_outside_the_grammar_is_one_line_naming_the_option_and_the_grammar(
    label: str, why: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        check_label(label)
    message = str(caught.value)
    assert message == f"--label: {why}; a label is {LABEL_GRAMMAR}"
    assert "\n" not in message and "\x1b" not in message and "\u202e" not in message


def test_no_label_is_no_label() -> None:
    assert check_label(None) is None
    assert shared_label([None, None]) is None
    assert shared_label([None, "b", "c"]) == "b"
    assert shown_name(None, "20261203T084244Z-tiny-Offline-9731a2") == (
        "20261203T084244Z-tiny-Offline-9731a2"
    )
    assert shown_name("baseline", "20261203T084244Z-tiny-Offline-9731a2") == "baseline"


def test_a_request_refuses_a_bad_label(tmp_path: Path) -> None:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    with pytest.raises(ConfigError, match="--label: character U\\+000A is not printable"):
        RunRequest(scenario=scenario, scenario_path=None, profile="quick", hw="cpu", label="a\nb")


def test_a_job_file_with_a_bad_label_is_refused_naming_the_file(tmp_path: Path) -> None:
    """A worker reads job.json as foreign input: an edited label is refused, not run."""
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    request = RunRequest(
        scenario=scenario, scenario_path=None, profile="quick", hw="cpu", label="ok"
    )
    path = write_job(Job(request=request, test="performance", run_dir=tmp_path), tmp_path / "j")
    assert read_job(path).request.label == "ok"
    data = json.loads(path.read_text())
    data["label"] = "bad\u202elabel"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=rf"{path}: label: character U\+202E is not printable"):
        read_job(path)
    del data["label"]  # a job file written before labels: none
    path.write_text(json.dumps(data))
    assert read_job(path).request.label is None


def test_a_schema_7_result_reads_with_no_label_and_no_memory() -> None:
    tiny = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "tiny-singlestream"
    current = to_dict(from_dict(json.loads((tiny / "result.json").read_text())))
    assert current["schema_version"] == SCHEMA_VERSION
    v7 = {k: v for k, v in current.items() if k not in ("label", "memory", "generation")}
    v7["schema_version"] = 7
    result = from_dict(v7)
    assert (result.label, result.memory) == (None, None)
    assert migrate_7_to_8(v7)["schema_version"] == 8
    assert "label" not in v7  # the step copies; its input is untouched


def test_a_label_with_dollars_is_drawn_as_written_not_as_math() -> None:
    """matplotlib reads text between two `$` as math: an unknown command fails the figure."""
    label = r"run $\notacommand$ 2"
    assert drawn(label) == r"run \$\notacommand\$ 2"
    bar = UtilizationBar(label=label, achieved_tflops=1.0, peak_tflops=2.0)
    assert utilization_png([bar])[:8] == b"\x89PNG\r\n\x1a\n"
    from matplotlib.figure import Figure

    raw = Figure()
    raw.text(0.5, 0.5, label)  # the same text without drawn(): the figure cannot be drawn
    with pytest.raises(ValueError, match="notacommand"):
        raw.savefig(Path("/dev/null"), format="png")


@pytest.mark.parametrize("label", ["two\nlines", "esc\x1b[2J", "rtl\u202e", " pad", "x" * 65])
def test_a_result_file_with_a_label_outside_the_grammar_is_refused_by_key(label: str) -> None:
    """result.json is foreign input: a label --label would refuse never reaches a terminal."""
    tiny = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "tiny-singlestream"
    data = to_dict(from_dict(json.loads((tiny / "result.json").read_text())))
    assert from_dict({**data, "label": "fine <b>"}).label == "fine <b>"
    with pytest.raises(ResultError) as caught:
        from_dict({**data, "label": label}, "r/result.json")
    message = str(caught.value)
    assert message.startswith(f"r/result.json: not a schema_version {SCHEMA_VERSION} result (")
    assert "\n" not in message and "\x1b" not in message and "\u202e" not in message
    assert "label" in message
