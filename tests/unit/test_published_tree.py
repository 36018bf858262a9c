"""Finding results in MLPerf trees: every path a user may give, and the layouts seen in them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.published.tree import find_locations, locate
from tests.unit.test_published_import import INTEL_RUN, SS_RUN, V40

INTEL = "closed/Intel/results/1-node-2S-EMR-PyTorch/resnet50/Offline"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(V40, root / "closed")
    return root


@pytest.mark.parametrize(
    "given",
    [
        "",
        "closed",
        "closed/Intel",
        "closed/Intel/results/1-node-2S-EMR-PyTorch",
        INTEL,
        f"{INTEL}/performance",
        f"{INTEL}/performance/run_1",
        f"{INTEL}/performance/run_1/mlperf_log_detail.txt",
    ],
)
def test_every_level_of_the_tree_finds_the_one_result(tree: Path, given: str) -> None:
    (found,), problems = find_locations(tree / given)
    assert problems == []
    assert (found.division, found.org, found.system) == ("closed", "Intel", "1-node-2S-EMR-PyTorch")
    assert (found.benchmark, found.scenario) == ("resnet50", "Offline")
    assert found.run_dir == tree / INTEL / "performance" / "run_1"
    assert found.org_dir == tree / "closed" / "Intel"


def test_logs_directly_in_performance_are_read_there(tree: Path) -> None:
    # Intel's v4.0 gptj-99 Server result has no run_1: its logs sit in performance/ itself
    perf = tree / INTEL / "performance"
    for log in (perf / "run_1").iterdir():
        log.rename(perf / log.name)
    (perf / "run_1").rmdir()
    (found,), _ = find_locations(tree)
    assert found.run_dir == perf


def test_compliance_accuracy_and_ranging_runs_are_not_results(tree: Path) -> None:
    org = tree / "closed" / "Intel"
    audit = org / "compliance/1-node-2S-EMR-PyTorch/resnet50/Offline/TEST01/performance/run_1"
    shutil.copytree(INTEL_RUN, audit)
    shutil.copytree(INTEL_RUN, tree / INTEL / "performance" / "ranging")
    found, problems = find_locations(tree)
    assert [loc.run_dir for loc in found] == [tree / INTEL / "performance" / "run_1"]
    assert problems == []


def test_lower_case_scenario_directories_are_mlperf_scenarios() -> None:
    found = locate(SS_RUN)
    assert not isinstance(found, str)
    assert found.scenario == "SingleStream"
    assert found.scenario_dir.name == "singlestream"


def test_a_run_outside_the_layout_is_named_and_skipped(tmp_path: Path) -> None:
    loose = tmp_path / "copied" / "performance" / "run_1"
    shutil.copytree(INTEL_RUN, loose)
    found, (problem,) = find_locations(tmp_path / "copied")
    assert found == []
    assert problem.startswith(f"{loose.parent}: not in MLPerf's <division>/<org>/results/")
