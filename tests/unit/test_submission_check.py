"""Finding MLPerf's checker, and reading its errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import DependencyError
from harness.submission.checker import (
    CHECKER_FROM_REPO,
    checker_errors,
    find_checker,
    repo_root,
    run_checker,
)

OUTPUT = """== errors
      1 ERROR Some performance checks Checks failed for: open/O/results/s/resnet/Offline/x
      2 ERROR open/O/results/s/resnet/Offline/x Test duration less than 600s in user config.
== warnings
      1 WARNING something to look at
== results
ERROR NoResults open/O/results/s/resnet/Offline/performance/run_1/mlperf_log_detail.txt
== exit code 1
"""


def test_errors_are_the_lines_under_errors_without_counts() -> None:
    assert checker_errors(OUTPUT) == [
        "Some performance checks Checks failed for: open/O/results/s/resnet/Offline/x",
        "open/O/results/s/resnet/Offline/x Test duration less than 600s in user config.",
    ]
    assert checker_errors("== errors\n== warnings\n") == []


def test_the_checker_is_looked_for_beside_the_repository(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    with pytest.raises(DependencyError) as info:
        find_checker(root=tmp_path / "repo")
    expected = (tmp_path / "shared" / "mlperf-tools" / "check-submission.sh").resolve()
    assert str(info.value) == (
        f"no MLPerf submission checker at {expected} (a copy of mlcommons/inference's "
        "tools/submission with check-submission.sh); pass --checker PATH, or leave out --check"
    )
    assert info.value.exit_code == 8
    script = expected
    script.parent.mkdir(parents=True)
    script.write_text("exit 0\n")
    assert find_checker(root=tmp_path / "repo") == script


def test_the_default_root_is_this_checkout() -> None:
    assert (repo_root() / "harness" / "submission" / "checker.py").is_file()
    assert CHECKER_FROM_REPO.as_posix() == "../shared/mlperf-tools/check-submission.sh"


def test_a_given_checker_must_exist(tmp_path: Path) -> None:
    with pytest.raises(DependencyError, match=r"--checker .*nope.sh: no such file"):
        find_checker(tmp_path / "nope.sh")


def test_the_checkers_status_and_output_come_back(tmp_path: Path) -> None:
    script = tmp_path / "check.sh"
    script.write_text(f"cat <<'END'\n{OUTPUT}END\necho oops >&2\nexit 1\n")
    outcome = run_checker(script, tmp_path)
    assert not outcome.passed and outcome.returncode == 1
    assert len(outcome.errors) == 2 and outcome.output.endswith("oops\n")
