"""Which harness produced a result: its version and git commit, with a dirty flag."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import harness
from harness.fingerprint.probe import Probe

GIT_TIMEOUT_S = 5.0


def default_repo_dir() -> Path:
    """The checkout the running harness package was imported from."""
    return Path(harness.__file__).resolve().parents[1]


def collect_harness(probe: Probe, repo_dir: Path | None, *, git: str = "git") -> dict[str, Any]:
    """The harness version, and the git commit of `repo_dir` with uncommitted-changes flag."""
    directory = default_repo_dir() if repo_dir is None else repo_dir
    commit = _git(probe, "harness.git_commit", git, directory, ("rev-parse", "HEAD"))
    dirty = None
    if commit is not None:
        # Untracked files do not count: results/runs/ and caches live in the checkout.
        args = ("status", "--porcelain", "--untracked-files=no")
        status = _git(probe, "harness.git_dirty", git, directory, args)
        dirty = None if status is None else bool(status)
    else:
        probe.note("harness.git_dirty", "no git commit to compare against")
    return {"version": harness.__version__, "git_commit": commit, "git_dirty": dirty}


def _git(probe: Probe, field: str, git: str, directory: Path, args: tuple[str, ...]) -> str | None:
    """Stripped stdout of a git command, or None after recording why it failed."""
    # --no-optional-locks: never take index.lock in a checkout others are working in.
    command = [git, "--no-optional-locks", "-C", str(directory), *args]
    env = {**os.environ, "LC_ALL": "C"}
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False, env=env
        )
    except FileNotFoundError:
        probe.note(field, f"{git} not found: install git to record the harness's commit")
        return None
    except OSError as exc:
        probe.note(field, f"{git} cannot run: {exc.strerror or exc}")
        return None
    except subprocess.TimeoutExpired:
        probe.note(field, f"git {args[0]} took over {GIT_TIMEOUT_S:g} s in {directory}")
        return None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        probe.note(field, f"git {args[0]} failed in {directory}: {lines[0]}")
        return None
    return done.stdout.strip()
