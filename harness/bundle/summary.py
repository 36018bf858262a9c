"""What `harness verify` says of a bundle that passed: what it proves, each check, commits."""

from __future__ import annotations

from harness.bundle.crosscheck import PROVES
from harness.bundle.provenance import Commit, commits
from harness.bundle.verify import Verdict


def verdict_lines(verdict: Verdict) -> list[str]:
    """The lines after the signer's: proves, one per check passed, commits, dirty-tree warnings."""
    found = commits(verdict.manifest)
    lines = [f"  proves   {PROVES}"]
    lines += [f"  {passed.line}" for passed in verdict.checks]
    lines += [f"  commit   {_commit(c)}" for c in found]
    lines += [f"  warning  {_dirty(c)}" for c in found if c.git_dirty]
    return lines


def _commit(commit: Commit) -> str:
    version = commit.harness_version or "(version not recorded)"
    at = commit.git_commit or "an unknown commit"
    return f"{commit.what}: beyond-tops {version} at {at} ({commit.tree})"


def _dirty(commit: Commit) -> str:
    return (
        f"{commit.what}: the tree at {commit.git_commit or 'an unknown commit'} had uncommitted "
        "changes (dirty tree): the code that ran is not exactly that commit"
    )
