"""What a sweep prints and records, with a scripted launcher standing in for the workers."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.config import load_scenario
from harness.execution.campaign import Campaign, run_batch_sweep
from harness.files import mark_complete
from harness.records.job import read_job
from harness.records.request import RunRequest
from harness.results.groupfile import read_sweep
from tests.conftest import TINY_OFFLINE, write_scenario

REPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "reports"
OFFLINE = REPORTS / "sweep-h100" / "bs-16" / "trial-1" / "result.json"
# Problem 4's shape: batch 2 reaches the plateau, batch 4 spreads widely around it, batch 8
# confirms the plateau, so 64 is never run.
TABLE: Mapping[int, Sequence[float]] = {
    1: (100.0, 102.0),
    2: (196.0, 204.0),
    4: (160.0, 240.0),
    8: (198.0, 202.0),
}
WARNINGS = ("quick profile: shortened LoadGen run, NOT valid for an MLPerf submission",)


class TableLauncher:
    """Plays a worker: the accuracy test passes; the performance test measures TABLE's rate."""

    def __init__(self) -> None:
        self.trial: dict[int, int] = {}

    def __call__(self, job_path: Path) -> int:
        job = read_job(job_path)
        (job.run_dir / "user.conf").write_text("")
        if job.test == "accuracy":
            (job.run_dir / "accuracy.json").write_text("{}")
            return 0
        batch = job.request.scenario.batch_size
        index = self.trial.get(batch, 0)
        self.trial[batch] = index + 1
        data = json.loads(OFFLINE.read_text())
        data.update(samples_per_second=TABLE[batch][index], batch_size=batch, warnings=WARNINGS)
        (job.run_dir / "result.json").write_text(json.dumps(data))
        mark_complete(job.run_dir)
        return 0


def _sweep(tmp_path: Path, batches: list[int]) -> tuple[Path, str]:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_OFFLINE))
    request = RunRequest(
        scenario=scenario, scenario_path=tmp_path / "s.yaml", profile="quick", hw="cpu"
    )
    campaign = Campaign(request=request, out_root=tmp_path / "runs", launch=TableLauncher())
    stream = io.StringIO()
    sweep = run_batch_sweep(campaign, 2, batches=batches, stream=stream)
    return sweep, stream.getvalue()


def test_issue_16_the_sweep_records_what_it_skipped_and_how_sure_it_is(tmp_path: Path) -> None:
    sweep, _ = _sweep(tmp_path, [1, 2, 4, 8, 64])
    data = json.loads((sweep / "sweep.json").read_text())
    assert data["schema_version"] == 3 and data["stopped"] == "plateau"
    assert (data["requested_batches"], data["skipped"]) == ([1, 2, 4, 8, 64], [64])
    assert data["skip_reason"].startswith("throughput had plateaued: batch 4 and 8")
    verdict = data["saturation"]
    assert (verdict["batch"], verdict["certain"], verdict["latest"]) == (2, False, None)
    assert "batch 4's trials (160.00-240.00 samples/s, CoV 28.3 %) overlap" in verdict["caveat"]
    assert read_sweep(sweep / "sweep.json").skipped == (64,)


def test_issue_16_the_printout_names_the_skipped_batches_once_per_warning_with_a_table(
    tmp_path: Path,
) -> None:
    _, text = _sweep(tmp_path, [1, 2, 4, 8, 64])
    lines = text.splitlines()
    assert "  skipped: batch 64 (throughput had plateaued: batch 4 and 8 did not beat" in text
    assert "  saturation at batch 2 is uncertain: " in text
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["batch", "median"])
    assert lines[header].split()[2:] == ["samples/s", "CoV", "range", "runs", "verdict"]
    rows = [line.split() for line in lines[header + 1 : header + 6]]
    assert [row[0] for row in rows] == ["1", "2", "4", "8", "64"]
    assert rows[1][-2:] == ["saturation?", "best"] and rows[4][-1] == "skipped"
    assert rows[2][1:5] == ["200.00", "28.3", "%", "160.00-240.00"]
    for warning in (WARNINGS[0], "spread too large to trust: CoV 28.3 %"):
        assert len(re.findall(re.escape(warning), text)) == 1, warning
    assert "(8 of 8 runs)" in text
    # 8 runs: one line each as they ran and again under the sweep's runs, one line per batch,
    # the table and its notes
    assert len(lines) <= 40
    assert lines[-9:-8] == ["  runs:"] and all("VALID" in line for line in lines[-8:])


def test_a_version_2_sweep_file_reads_with_its_verdict_computed(tmp_path: Path) -> None:
    sweep = read_sweep(REPORTS / "sweep-h100" / "sweep.json")
    assert sweep.requested_batches == (1, 2, 4, 8, 16) and sweep.skipped == ()
    assert sweep.saturation is not None and sweep.saturation.batch == sweep.saturation_batch
    assert dataclasses.replace(sweep, saturation=None).saturation is None
