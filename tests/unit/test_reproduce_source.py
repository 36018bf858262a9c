"""What reproduce accepts, checked first: a finished run, a trials group or a bundle."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.errors import ConfigError, ResultError
from harness.reproduce.source import MAX_CAUSE_CHARS, check_source, incomplete_cause
from tests.conftest import REPO

RUN_FIXTURE = REPO / "tests" / "fixtures" / "results" / "tiny-singlestream-v3"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    shutil.copytree(RUN_FIXTURE, tmp_path / "run")
    return tmp_path / "run"


def test_a_finished_run_and_its_result_json_are_accepted(run: Path) -> None:
    check_source(run)
    check_source(run / "result.json")


def test_a_sweep_is_refused_with_what_to_reproduce_instead(run: Path) -> None:
    (run / "sweep.json").write_text("{}")
    with pytest.raises(ConfigError, match="a batch sweep; reproduce one of its points"):
        check_source(run)


@pytest.mark.parametrize(
    ("marker", "cause"),
    [
        ("stopped by SIGINT in warm-up\nexit_code: 130\n", "stopped by SIGINT in warm-up"),
        ("", "no cause recorded"),
        ("x" * 5000, "x" * MAX_CAUSE_CHARS + "..."),
        (b"\xff\xfe broken".decode("latin-1"), "\xff\xfe broken"),
    ],
    ids=["cause", "empty", "long", "non-ascii"],
)
def test_an_incomplete_run_is_refused_with_its_recorded_cause(
    run: Path, marker: str, cause: str
) -> None:
    (run / "INCOMPLETE").write_text(marker)
    assert incomplete_cause(run) == cause
    with pytest.raises(ResultError) as caught:
        check_source(run)
    assert str(caught.value) == (
        f"{run}: INCOMPLETE ({cause}); a run must be finished to be reproduced: reproduce a "
        "finished run, or run this one again"
    )


def test_an_unreadable_marker_is_said_so(run: Path) -> None:
    (run / "INCOMPLETE").write_bytes(b"\xff\xfe")
    cause = incomplete_cause(run)
    assert cause is not None and cause.startswith("its cause is unreadable: ")
    assert "not UTF-8 text" in cause
