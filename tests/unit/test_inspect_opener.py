"""The one opener: what a path stands for and the results it holds, for show and the site."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.inspect.opener import Member, Opened, kind_of, load_side, open_path
from harness.published.importer import import_mlperf
from harness.records.group import Group
from harness.records.published import PublishedResult
from tests.conftest import REPO
from tests.unit.test_published_import import FIXTURES, fixed_now

REPORTS = REPO / "tests" / "fixtures" / "reports"
BUNDLE = (
    REPO
    / "results"
    / "published"
    / "2026-12-01-resnet50-open-2core-epyc-kvm-SingleStream.bundle.tar"
)
SIGNER = REPO / "results" / "published" / "beyond-tops-founders.pub"


@pytest.fixture
def stack() -> Iterator[contextlib.ExitStack]:
    with contextlib.ExitStack() as opened:
        yield opened


def _open(path: Path, stack: contextlib.ExitStack, *trust: Path) -> Opened:
    return open_path(path, trust, stack)


def _published(tmp_path: Path) -> Path:
    import_mlperf(FIXTURES, tmp_path / "imports", now=fixed_now)
    return next((tmp_path / "imports").rglob("published.json")).parent


def _fleet(tmp_path: Path) -> Path:
    """A fleet of four tasks: one ran twice, one left an unfinished run, one never ran."""
    fleet = tmp_path / "fleet-1"
    (fleet / "tasks").mkdir(parents=True)
    (fleet / "fleet.json").write_text("{}\n")
    for task, attempt, started, group in (
        ("000", "slurm-7_0", "2026-11-30T10:00:00+00:00", "trials-epyc"),
        ("000", "slurm-9_0", "2026-11-30T11:00:00+00:00", "trials-xeon"),
        ("001", "slurm-7_1", "2026-11-30T10:00:00+00:00", "sweep-h100"),
        ("002", "slurm-7_2", "2026-11-30T10:00:00+00:00", "trials-epyc"),
    ):
        where = fleet / "tasks" / task / attempt
        shutil.copytree(REPORTS / group, where / group)
        entries = [
            {"name": group, "run": group, "exit_code": 0, "error": None},
            {"name": "failed before its run", "run": None, "exit_code": 1, "error": "boom"},
        ]
        record = {"schema_version": 1, "started_utc": started, "entries": entries}
        (where / "task-result.json").write_text(json.dumps(record))
    (fleet / "tasks" / "002" / "slurm-7_2" / "trials-epyc" / "INCOMPLETE").write_text(
        "trial-2 failed: killed\nexit_code: 9\n"
    )
    (fleet / "tasks" / "003").mkdir()
    return fleet


def test_kind_of_names_each_result_and_nothing_else(tmp_path: Path) -> None:
    assert kind_of(REPORTS / "trials-epyc") == "trials"
    assert kind_of(REPORTS / "sweep-h100") == "sweep"
    assert kind_of(REPORTS / "trials-epyc" / "trial-1") == "run"
    assert kind_of(BUNDLE) == "bundle"
    assert kind_of(_fleet(tmp_path)) == "fleet"
    assert kind_of(_published(tmp_path)) == "published"
    assert kind_of(tmp_path / "nowhere") is None
    assert kind_of(REPORTS / "trials-epyc" / "trials.json") is None  # a file, not a bundle


@pytest.mark.parametrize(
    ("path", "kind", "member"),
    [
        (REPORTS / "trials-epyc", "trials", REPORTS / "trials-epyc"),
        (REPORTS / "trials-epyc" / "trials.json", "trials", REPORTS / "trials-epyc"),
        (REPORTS / "sweep-h100", "sweep", REPORTS / "sweep-h100"),
        (REPORTS / "trials-epyc" / "trial-1", "run", REPORTS / "trials-epyc" / "trial-1"),
        (
            REPORTS / "trials-epyc" / "trial-1" / "result.json",
            "run",
            REPORTS / "trials-epyc" / "trial-1" / "result.json",
        ),
    ],
)
def test_a_run_or_group_stands_for_itself(
    path: Path, kind: str, member: Path, stack: contextlib.ExitStack
) -> None:
    opened = _open(path, stack)
    assert (opened.kind, opened.members, opened.bundle, opened.notes) == (
        kind,
        (Member(kind=opened.kind, path=member),),  # type: ignore[arg-type]
        None,
        (),
    )
    assert isinstance(load_side(opened.members[0]), Group)


def test_anything_else_is_a_run_whose_loader_says_what_is_missing(
    tmp_path: Path, stack: contextlib.ExitStack
) -> None:
    opened = _open(tmp_path / "nowhere", stack)
    assert opened.members == (Member(kind="run", path=tmp_path / "nowhere"),)


def test_a_published_record_opens_into_its_record(
    tmp_path: Path, stack: contextlib.ExitStack
) -> None:
    record = _published(tmp_path)
    for path in (record, record / "published.json"):
        (member,) = _open(path, stack).members
        assert (member.kind, member.path) == ("published", path)
        assert isinstance(load_side(member), PublishedResult)


def test_a_bundle_is_verified_and_opened_until_the_stack_closes(tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        opened = _open(BUNDLE, stack, SIGNER)
        assert opened.kind == "bundle" and opened.bundle is not None and opened.bundle.trusted
        assert opened.members and all(m.path.is_dir() for m in opened.members)
        assert all(isinstance(load_side(m), Group) for m in opened.members)
    assert not any(m.path.exists() for m in opened.members)
    with contextlib.ExitStack() as stack:
        unchecked = _open(BUNDLE, stack)
        assert unchecked.bundle is not None and not unchecked.bundle.trusted


def test_a_fleet_opens_what_each_tasks_latest_attempt_recorded(
    tmp_path: Path, stack: contextlib.ExitStack
) -> None:
    fleet = _fleet(tmp_path)
    opened = _open(fleet, stack)
    assert opened.kind == "fleet" and opened.bundle is None
    assert [(m.kind, m.task, m.attempt, m.path.name) for m in opened.members] == [
        ("trials", "000", "slurm-9_0", "trials-xeon"),  # the later of two attempts
        ("sweep", "001", "slurm-7_1", "sweep-h100"),
    ]
    assert opened.notes == (
        "task 002: trials-epyc: incomplete: trial-2 failed: killed",
        "task 002: no result in slurm-7_2",
        "task 003: no attempt has recorded a result",
    )


def test_a_fleet_record_naming_a_run_outside_its_attempt_opens_nothing_of_that_task(
    tmp_path: Path, stack: contextlib.ExitStack
) -> None:
    fleet = _fleet(tmp_path)
    attempt = fleet / "tasks" / "001" / "slurm-7_1"
    shutil.rmtree(attempt / "sweep-h100")
    (attempt / "sweep-h100").symlink_to(REPORTS / "sweep-h100")  # a link out of the fleet
    opened = _open(fleet, stack)
    assert [m.task for m in opened.members] == ["000"]
    (note,) = [n for n in opened.notes if n.startswith("task 001: ")]
    assert note.startswith("task 001: no attempt has recorded a result (")
    assert "entries[0]: run: " in note and "leads out of" in note
