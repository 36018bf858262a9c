"""A local run beside published MLPerf results: compare, report and show, through the CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.analysis.compare import compare
from harness.cli import main
from harness.published.importer import import_mlperf
from harness.published.record import load_published
from harness.results.groups import load_group
from tests.conftest import REPO, TINY_SS, write_scenario
from tests.unit.test_published_import import FIXTURES, V41, fixed_now

LOCAL_FIXTURE = REPO / "tests" / "fixtures" / "results" / "tiny-singlestream-v3"
SS_LABEL = "published: UntetherAI h13_u2_preview (v4.1, closed)"
INTEL_LABEL = "published: Intel 1-node-2S-EMR-PyTorch (v4.0, closed)"


@pytest.fixture
def records(tmp_path: Path) -> dict[str, Path]:
    """The fixture results imported: SingleStream (UntetherAI), two Offline, four LLM ones."""
    written = import_mlperf(FIXTURES, tmp_path / "imports", now=fixed_now).written
    by_name = {p.name.split("-")[2] + "-" + p.name.rsplit("-", 1)[1]: p for p in written}
    assert set(by_name) == {
        "Intel-Offline",
        "UntetherAI-SingleStream",
        "UntetherAI-Offline",
        "NVIDIA-Offline",
        "NVIDIA-Server",
        "AMD-Offline",
        "AMD-Server",
    }
    return by_name


@pytest.mark.slow
def test_a_real_local_run_beside_a_published_singlestream_result(
    tmp_path: Path, records: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write_scenario(tmp_path / "tiny.yaml", TINY_SS)
    assert main(["run", str(scenario), "--out", str(tmp_path / "runs")]) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    capsys.readouterr()
    published = records["UntetherAI-SingleStream"]
    cmp = ["compare", str(run_dir), str(published), "--out", str(tmp_path / "cmp")]
    assert main(cmp) == 33  # another model: not comparable
    out = capsys.readouterr().out
    assert SS_LABEL in out  # the published column is labelled: org, system, round, division
    assert "source" in out and "published" in out
    # the local rules, applied across: another model, profile and LoadGen release
    assert "benchmark (LoadGen model key): 'tiny' != 'resnet50'" in out
    assert "profile: 'quick' != 'submission' (the quick run is shortened" in out
    assert "mlcommons-loadgen release: '6.0' != '4.0'" in out
    assert "precision: 'fp32' != None (the published result does not state its own)" in out
    assert "LoadGen setting qsl_rng_seed" in out  # another round's official seeds
    # never the same machine
    assert "(published; not this machine)" in out
    assert "none: the same hardware" not in out
    assert SS_LABEL in (tmp_path / "cmp" / "compare.md").read_text()


def test_a_published_result_of_another_scenario_is_flagged(
    records: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(LOCAL_FIXTURE), str(records["Intel-Offline"])]) == 33
    out = capsys.readouterr().out
    assert INTEL_LABEL in out
    assert "scenario: 'SingleStream' != 'Offline'" in out
    assert "not this machine" in out


def test_two_published_results_keep_the_rules_and_stay_two_machines(
    records: dict[str, Path],
) -> None:
    intel = load_published(records["Intel-Offline"])
    untether = load_published(records["UntetherAI-Offline"])
    comparison = compare([intel, untether])
    assert comparison.labels == (INTEL_LABEL, "published: UntetherAI r760_u6_slim (v4.1, closed)")
    assert comparison.problems == ()  # one benchmark, one scenario
    (pair,) = comparison.pairs
    assert any(line.startswith("precision: None != 'float8'") for line in pair.intended)
    assert not any("division" in line for line in pair.caveats)  # both closed
    (hardware,) = comparison.hardware
    assert "2 x INTEL(R) XEON(R) PLATINUM 8592+" in hardware
    assert "6 x UntetherAI speedAI240 Slim" in hardware
    throughput = next(r for r in comparison.rows if r.metric.key == "samples_per_second")
    assert [c.value for c in throughput.cells] == [25289.6, 334462.0]


def test_a_published_result_of_another_division_is_flagged(
    tmp_path: Path, records: dict[str, Path]
) -> None:
    # The same real files, placed under open/: the division is the tree's, so it reads "open"
    tree = tmp_path / "inference_results_v4.1"
    shutil.copytree(V41 / "UntetherAI", tree / "open" / "UntetherAI")
    imported = import_mlperf(tree / "open", tmp_path / "open-imports", now=fixed_now)
    opened = next(p for p in imported.written if p.name.endswith("r760_u6_slim-resnet50-Offline"))
    record = load_published(opened)
    assert record.division == "open"
    assert any("says division 'closed'" in w for w in record.import_warnings)
    closed = load_published(records["UntetherAI-Offline"])
    (pair,) = compare([closed, record]).pairs
    assert "division: 'closed' != 'open'" in pair.caveats


def test_report_puts_published_results_in_their_own_labelled_section(
    tmp_path: Path, records: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    args = ["report", str(LOCAL_FIXTURE), str(records["Intel-Offline"]), "--out", str(out)]
    assert main(args) == 0
    markdown = (out / "report.md").read_text()
    assert "## Published MLPerf results" in markdown
    assert f"### {INTEL_LABEL}" in markdown
    assert "never measured here" in markdown
    assert INTEL_LABEL in (out / "report.html").read_text()
    assert load_group(LOCAL_FIXTURE).label in markdown


def test_show_prints_a_published_record_labelled(
    records: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(records["UntetherAI-Offline"] / "published.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("published: UntetherAI r760_u6_slim (v4.1, closed)\n")
    assert "never measured here" in out
    assert "weights float8, inputs float8" in out
    assert "334,462.00 samples/s" in out
