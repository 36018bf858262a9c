"""Which harness produced a result: its version and git commit, with a dirty flag."""

from __future__ import annotations

from pathlib import Path

import harness
from harness.fingerprint.probe import Probe
from harness.gitstate import read_git_state
from harness.records.fingerprint_sections import HarnessInfo


def default_repo_dir() -> Path:
    """The checkout the running harness package was imported from."""
    return Path(harness.__file__).resolve().parents[1]


def collect_harness(probe: Probe, repo_dir: Path | None, *, git: str = "git") -> HarnessInfo:
    """The harness version, and the git commit of `repo_dir` with the dirty flag.

    Dirty follows harness.gitstate's rule (untracked files not in .gitignore count).
    """
    state = read_git_state(default_repo_dir() if repo_dir is None else repo_dir, git=git)
    if state.commit_problem is not None:
        probe.note("harness.git_commit", state.commit_problem)
    if state.dirty_problem is not None:
        probe.note("harness.git_dirty", state.dirty_problem)
    return HarnessInfo(version=harness.__version__, git_commit=state.commit, git_dirty=state.dirty)
