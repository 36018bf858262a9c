"""A quick ResNet-50 bench, exported and judged by MLPerf's own submission checker (v6.1).

The checker is the copy in ../shared/mlperf-tools beside the repository; a clone without it
skips this test. A quick run cannot meet three of MLPerf's rules, whatever the export does:
the 600 s minimum duration, the 1024-sample performance set and the 50,000-image accuracy
run. Every other error (structure, system fields, measurements, accuracy format, LoadGen
errors) is the export's fault, so the test allows those three and nothing else.

The settings are the shortest that still let the checker judge everything else: SingleStream
runs 64 queries, the fewest for which LoadGen's early-stopping estimate exists (fewer is an
"Early stopping condition was not met" error); Offline runs one batch of 8. The test took
21 s on the 2-core development VM while other test suites kept its load average at 3: four
worker processes (a performance and an accuracy test per scenario), each loading ResNet-50.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from harness.cli import main
from harness.submission.checker import CHECKER_FROM_REPO, checker_errors
from harness.submission.documents import SYNTHETIC_WEIGHTS
from tests.conftest import REPO, write_scenario

pytestmark = pytest.mark.slow
CHECKER = (REPO / CHECKER_FROM_REPO).resolve()
EXAMPLE = REPO / "scenarios" / "system-description.example.yaml"
COMMON = """
model: {zoo: resnet50, loadgen_name: resnet50, dims: {height: 224, width: 224}}
trials: 1
data: {source: synthetic, seed: 0, total_sample_count: 8}
warmup: {min_queries: 1, min_duration_ms: 0}
"""
SINGLESTREAM = f"""
name: resnet50-ss-submission-check
scenario: SingleStream
batch_size: 1
quick: {{min_duration_ms: 1, min_query_count: 64, performance_sample_count: 8,
         accuracy_sample_count: 8}}
{COMMON}"""
OFFLINE = f"""
name: resnet50-offline-submission-check
scenario: Offline
batch_size: 8
quick: {{min_duration_ms: 1, min_query_count: 8, performance_sample_count: 8,
         accuracy_sample_count: 8}}
{COMMON}"""
SCENARIOS = ("SingleStream", "Offline")
# What a quick run cannot avoid, per scenario directory (the checker's own wording).
UNAVOIDABLE = {
    "600 s minimum": r"/performance/run_1/mlperf_log_detail\.txt Test duration less than 600s "
    r"in user config\. expected=600000, found=\d+$",
    "performance sample count": r"/performance/run_1/mlperf_log_detail\.txt "
    r"performance_sample_count, found \d+, needs to be >= 1024$",
    "50,000-image dataset": r"/accuracy/mlperf_log_detail\.txt accurcy run does not cover all "
    r"dataset, accuracy samples: \d+, dataset size: 50000$",
}
# The line the checker adds after any failed group of checks; it names no fault of its own.
FAILED_GROUP = r"^Some (performance|accuracy) checks Checks failed for: "
# No compliance error can appear: the closed division refuses quick runs, and in the open
# division each of the checker's compliance checks returns before looking. The TEST01/TEST04
# layout is checked against the checker in tests/unit/test_submission_tree.py.


def test_a_quick_resnet50_bench_fails_mlperfs_checker_only_where_quick_must(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not CHECKER.is_file():
        pytest.skip(f"no MLPerf checker at {CHECKER} (a user's clone): nothing to check against")
    write_scenario(tmp_path / "ss.yaml", SINGLESTREAM)
    write_scenario(tmp_path / "offline.yaml", OFFLINE)
    suite = write_scenario(tmp_path / "suite.yaml", "name: s\nscenarios: [ss.yaml, offline.yaml]\n")
    assert main(["bench", str(suite), "--out", str(tmp_path / "runs")]) == 0
    runs = [Path(line) for line in capsys.readouterr().out.strip().splitlines()[-2:]]

    tree = tmp_path / "tree"
    names = ["--org", "BeyondTops", "--system", "cpu-vm", "--division", "open", "--force-quick"]
    description = ["--system-description", str(EXAMPLE)]
    code = main(
        ["submission", *map(str, runs), *names, *description, "--out", str(tree), "--check"]
    )
    out, err = capsys.readouterr()
    assert code == 9, err  # the checker failed, and harness says so
    assert out.splitlines()[-1] == str(tree)

    output = (tree / "check-submission.txt").read_text()
    assert "== checker crashed" not in output
    errors = checker_errors(output)
    for scenario in SCENARIOS:
        prefix = f"^open/BeyondTops/results/cpu-vm/resnet/{scenario}"
        for rule, pattern in UNAVOIDABLE.items():
            hits = [e for e in errors if re.search(prefix + pattern, e)]
            assert len(hits) == 1, f"{scenario}: expected the {rule} error once; got {errors}"
    allowed = [FAILED_GROUP, *UNAVOIDABLE.values()]
    assert [e for e in errors if not any(re.search(p, e) for p in allowed)] == []
    assert "NoResults" in output  # a quick run is no result: the checker says so too
    _states_synthetic_weights(tree / "open/BeyondTops", runs)


def _states_synthetic_weights(org: Path, runs: list[Path]) -> None:
    """The zoo's ResNet-50 says it everywhere; its accuracy.txt still has the checker's hash."""
    system = json.loads((org / "systems/cpu-vm.json").read_text())
    assert system["sw_notes"].count(SYNTHETIC_WEIGHTS) == 1
    for scenario, run in zip(SCENARIOS, runs, strict=True):
        result = org / "results/cpu-vm/resnet" / scenario
        readme = (result / "README.md").read_text().split("\n")
        statement = f"**{SYNTHETIC_WEIGHTS}** (the beyond-tops zoo model 'resnet50'"
        assert readme[2].startswith(statement)  # bold, under the title
        accuracy = (result / "accuracy/accuracy.txt").read_text().splitlines()
        assert accuracy[0].startswith(f"{SYNTHETIC_WEIGHTS} (")
        digest = hashlib.sha256((run / "accuracy/mlperf_log_accuracy.json").read_bytes())
        assert f"hash={digest.hexdigest()}" in accuracy
        measured = json.loads((result / "measurements.json").read_text())
        assert SYNTHETIC_WEIGHTS in measured["starting_weights_filename"]
