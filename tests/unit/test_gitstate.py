"""harness.gitstate: one rule for a dirty tree, on real temporary git repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.execution import images
from harness.gitstate import NO_COMMIT, git_output, read_git_state
from tests.conftest import git


@pytest.fixture
def repo(git_repo: Path) -> Path:
    return git_repo


def test_a_committed_tree_is_clean(repo: Path) -> None:
    state = read_git_state(repo)
    assert (state.commit, state.dirty) == (git(repo, "rev-parse", "HEAD"), False)
    assert (state.commit_problem, state.dirty_problem) == (None, None)


def test_a_modified_tracked_file_is_dirty_staged_or_not(repo: Path) -> None:
    (repo / "a.txt").write_text("2\n")
    assert read_git_state(repo).dirty is True
    git(repo, "add", "a.txt")
    assert read_git_state(repo).dirty is True


def test_an_untracked_file_not_ignored_is_dirty(repo: Path) -> None:
    """A new module or scenario changes what runs without the commit saying so."""
    (repo / "harness").mkdir()
    (repo / "harness" / "new.py").write_text("X = 1\n")
    assert read_git_state(repo).dirty is True


def test_ignored_files_leave_it_clean(repo: Path) -> None:
    """What benchmarks write (results, caches) is in .gitignore and does not count."""
    (repo / "results" / "runs" / "r1").mkdir(parents=True)
    (repo / "results" / "runs" / "r1" / "result.json").write_text("{}\n")
    (repo / ".cache").mkdir()
    (repo / ".cache" / "m.onnx").write_bytes(b"x")
    assert read_git_state(repo).dirty is False


def test_outside_a_repository(tmp_path: Path) -> None:
    state = read_git_state(tmp_path)
    assert (state.commit, state.dirty) == (None, None)
    assert state.commit_problem is not None
    assert state.commit_problem.startswith(f"git rev-parse failed in {tmp_path}: fatal: not a git")
    assert state.dirty_problem == NO_COMMIT


def test_withoutgit(repo: Path) -> None:
    state = read_git_state(repo, git=str(repo / "no-git"))
    assert state.commit is None
    assert state.commit_problem == (
        f"{repo / 'no-git'} not found: install git to record the harness's commit"
    )
    assert git_output(repo, "rev-parse", "HEAD", git=str(repo / "no-git")) is None


def test_image_tags_and_provenance_agree(repo: Path) -> None:
    """harness.execution.images marks the same trees dirty as the fingerprint's provenance does."""
    from harness.fingerprint.probe import Probe
    from harness.fingerprint.provenance import collect_harness

    commit = git(repo, "rev-parse", "HEAD")
    assert images.git_commit(repo) == commit
    (repo / "new.txt").write_text("untracked\n")
    assert images.git_commit(repo) == commit + "-dirty"
    assert collect_harness(Probe(repo), repo).git_dirty is True
    assert images.git_commit(repo.parent) == "unknown"
