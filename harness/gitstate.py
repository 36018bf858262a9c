"""The git state of a checkout, read one way: the commit, and whether the tree is dirty.

The rule, used by result provenance (harness.fingerprint.provenance) and image tags
(harness.execution.images): a tree is dirty when a tracked file differs from HEAD (staged or not) or
when an untracked file is not ignored by .gitignore. Untracked files count because they can
change what runs without the commit saying so: a new module under harness/ goes into the
image's wheel (harness.execution.images.source_digest takes every harness/*.py), a new scenario or
patch sits beside the code. What benchmarks leave behind (results/runs/, build/, .cache/,
.venv/) is in .gitignore, so a tree that only ran benchmarks stays clean.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_S = 5.0
# --untracked-files=normal: untracked, not ignored files are listed (so make the tree dirty).
STATUS_ARGS = ("status", "--porcelain", "--untracked-files=normal")
NO_COMMIT = "no git commit to compare against"


class GitError(Exception):
    """A git command that could not run or failed; the message says why, on one line."""


@dataclass(frozen=True, kw_only=True)
class GitState:
    """HEAD's commit and the dirty flag, each None with its reason where git could not tell."""

    commit: str | None
    dirty: bool | None
    commit_problem: str | None = None
    dirty_problem: str | None = None


def read_git_state(directory: Path, *, git: str = "git") -> GitState:
    """The commit checked out in `directory` and whether its tree is dirty (the module's rule)."""
    try:
        commit = run_git(directory, "rev-parse", "HEAD", git=git)
    except GitError as exc:
        return GitState(commit=None, dirty=None, commit_problem=str(exc), dirty_problem=NO_COMMIT)
    try:
        status = run_git(directory, *STATUS_ARGS, git=git)
    except GitError as exc:
        return GitState(commit=commit, dirty=None, dirty_problem=str(exc))
    return GitState(commit=commit, dirty=bool(status))


def git_output(directory: Path, *args: str, git: str = "git") -> str | None:
    """Stripped stdout of a git command, or None where it could not run or failed."""
    try:
        return run_git(directory, *args, git=git)
    except GitError:
        return None


def run_git(directory: Path, *args: str, git: str = "git") -> str:
    """Stripped stdout of `git -C directory ARGS`; GitError says why it did not run."""
    # --no-optional-locks: never take index.lock in a checkout others are working in.
    command = [git, "--no-optional-locks", "-C", str(directory), *args]
    env = {**os.environ, "LC_ALL": "C"}
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False, env=env
        )
    except FileNotFoundError:
        raise GitError(f"{git} not found: install git to record the harness's commit") from None
    except OSError as exc:
        raise GitError(f"{git} cannot run: {exc.strerror or exc}") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} took over {GIT_TIMEOUT_S:g} s in {directory}") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        raise GitError(f"git {args[0]} failed in {directory}: {lines[0]}")
    return done.stdout.strip()
