"""MLPerf's own submission checker (a copy of its check-submission.sh): found, run, read."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import harness
from harness.errors import DependencyError, HarnessError

# Where the project keeps MLPerf's tools, relative to the repository root (a sibling of the
# checkout); a clone without them passes --checker or goes without --check.
CHECKER_FROM_REPO = Path("..") / "shared" / "mlperf-tools" / "check-submission.sh"
CHECK_TIMEOUT_S = 600.0
_COUNTED = re.compile(r"^\s*\d+\s+(?:ERROR\s+)?(.*)$")  # `uniq -c` output: "   2 ERROR text"


@dataclass(frozen=True, kw_only=True)
class CheckOutcome:
    """What the checker printed and its exit status (0: every result passed)."""

    returncode: int
    output: str

    @property
    def passed(self) -> bool:
        """Whether the checker accepted every result."""
        return self.returncode == 0

    @property
    def errors(self) -> list[str]:
        """The checker's error lines, without their repeat counts."""
        return checker_errors(self.output)


def repo_root() -> Path:
    """The checkout this harness runs from (the directory holding the harness package)."""
    return Path(harness.__file__).resolve().parent.parent


def find_checker(given: Path | None = None, *, root: Path | None = None) -> Path:
    """The checker script: ``given``, else the shared copy next to the repository.

    Raises:
        DependencyError: naming the path looked at and what to pass instead.
    """
    if given is not None:
        if not given.is_file():
            raise DependencyError(f"--checker {given}: no such file; pass check-submission.sh")
        return given
    path = ((root or repo_root()) / CHECKER_FROM_REPO).resolve()
    if not path.is_file():
        raise DependencyError(
            f"no MLPerf submission checker at {path} (a copy of mlcommons/inference's "
            "tools/submission with check-submission.sh); pass --checker PATH, or leave out --check"
        )
    return path


def run_checker(
    checker: Path, tree: Path, *, extra_args: Sequence[str] = (), timeout_s: float = CHECK_TIMEOUT_S
) -> CheckOutcome:
    """Run the checker on a submission tree with this interpreter (which has PyYAML).

    Raises:
        DependencyError: bash is not installed.
        HarnessError: the checker ran longer than ``timeout_s``.
    """
    command = ["bash", str(checker), str(tree), *extra_args]
    env = {**os.environ, "PYTHON": sys.executable}
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, env=env, check=False
        )
    except FileNotFoundError:
        raise DependencyError("bash: not found; MLPerf's check-submission.sh needs it") from None
    except subprocess.TimeoutExpired:
        raise HarnessError(
            f"{checker}: still running after {timeout_s:.0f} s on {tree}; run it by hand"
        ) from None
    return CheckOutcome(returncode=done.returncode, output=done.stdout + done.stderr)


def checker_errors(output: str) -> list[str]:
    """The lines check-submission.sh prints under ``== errors``, each once, count removed."""
    errors: list[str] = []
    inside = False
    for line in output.splitlines():
        if line.startswith("== "):
            inside = line.strip() == "== errors"
            continue
        match = _COUNTED.match(line) if inside else None
        if match:
            errors.append(match.group(1).strip())
    return errors
