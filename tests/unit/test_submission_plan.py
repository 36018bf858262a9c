"""Which run goes where, and what each division refuses, before anything is written."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.analysis.trials import trial_stats
from harness.cli import main
from harness.errors import ConfigError, ResultError
from harness.records.accuracy import ClosedDivision, LabelAccuracy
from harness.records.layout import SWEEP_FILE, TRIALS_FILE
from harness.records.result import RunResult
from harness.results.groupfile import SweepFile, TrialsFile, write_sweep, write_trials
from harness.results.runfile import load_result, write_result
from harness.submission.plan import plan_export

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "tiny-singlestream-v3"


def _result(**changes: object) -> RunResult:
    """The fixture run as if LoadGen's model key had been resnet50, with changes."""
    base = load_result(FIXTURE)
    config = dataclasses.replace(base.loadgen_config, model_key="resnet50")
    return dataclasses.replace(base, loadgen_config=config, **changes)  # type: ignore[arg-type]


def _submission_profile(result: RunResult, *, labelled: bool) -> RunResult:
    outcome = dataclasses.replace(result.outcome, profile="submission")
    labels = LabelAccuracy(
        count=64,
        label_offset=1,
        top1=0.75,
        top5=0.9,
        fp32_top1=0.75,
        fp32_top5=0.9,
        closed_division=ClosedDivision(
            accuracy=0.75, reference=0.75, fraction=0.99, target=0.7425, passed=True
        ),
    )
    accuracy = dataclasses.replace(result.accuracy, against_labels=labels if labelled else None)
    return dataclasses.replace(result, outcome=outcome, accuracy=accuracy)


def _run_dir(path: Path, result: RunResult) -> Path:
    path.mkdir(parents=True)
    write_result(result, path)
    return path


def _with_p90(result: RunResult, p90: int) -> RunResult:
    return dataclasses.replace(result, latency_ns=dataclasses.replace(result.latency_ns, p90=p90))


def _trials(group: Path, p90s: list[int]) -> Path:
    names = [f"trial-{i + 1}" for i in range(len(p90s))]
    for name, p90 in zip(names, p90s, strict=True):
        _run_dir(group / name, _with_p90(_result(), p90))
    stats = trial_stats([float(v) for v in p90s], requested=len(p90s), higher_is_better=False)
    trials = TrialsFile(
        scenario_name="resnet50-ss",
        scenario="SingleStream",
        batch_size=1,
        profile="quick",
        requested=len(p90s),
        runs=tuple(names),
        metric="latency_ns.p90",
        stats=stats,
    )
    write_trials(group / TRIALS_FILE, trials)
    return group


def _plan(sources: list[Path], division: str = "open", force_quick: bool = True) -> object:
    return plan_export(
        sources,
        division=division,
        org="B",
        system="s",
        force_quick=force_quick,  # type: ignore[arg-type]
    )


def test_a_run_maps_to_mlperfs_benchmark_and_scenario(tmp_path: Path) -> None:
    run = _run_dir(tmp_path / "run", _result())
    plan = plan_export([run], division="open", org="B", system="s", force_quick=True)
    (entry,) = plan.entries
    assert (entry.benchmark, entry.scenario, entry.run_dir, entry.quick) == (
        "resnet",
        "SingleStream",
        run,
        True,
    )
    assert entry.chosen == "a single run"


def test_a_trials_group_exports_its_median_trial(tmp_path: Path) -> None:
    group = _trials(tmp_path / "group", [900_000, 500_000, 700_000])
    plan = plan_export([group], division="open", org="B", system="s", force_quick=True)
    (entry,) = plan.entries
    assert entry.run_dir == group / "trial-3"
    assert entry.result.latency_ns.p90 == 700_000
    assert entry.chosen == "trial-3, the median of 3 trials by latency_ns.p90"


def test_an_even_group_exports_the_trial_nearer_the_median(tmp_path: Path) -> None:
    group = _trials(tmp_path / "group", [400, 100, 1000, 350])  # median 375: 350 and 400 tie
    (entry,) = plan_export([group], division="open", org="B", system="s", force_quick=True).entries
    assert entry.run_dir.name == "trial-1"  # the earlier of the two


def test_closed_refuses_a_quick_run_in_one_line(tmp_path: Path) -> None:
    run = _run_dir(tmp_path / "run", _result())
    with pytest.raises(ConfigError) as info:
        _plan([run], "closed", force_quick=True)
    assert str(info.value) == (
        f"{run}: a quick-profile run (shortened LoadGen settings); the closed division takes "
        "only `--profile submission` runs"
    )
    assert info.value.exit_code == 2


def test_open_needs_force_for_a_quick_run(tmp_path: Path) -> None:
    run = _run_dir(tmp_path / "run", _result())
    with pytest.raises(ConfigError, match="pass --force-quick to export it labelled as quick"):
        _plan([run], "open", force_quick=False)


def test_closed_needs_accuracy_against_labels(tmp_path: Path) -> None:
    unlabelled = _run_dir(tmp_path / "a", _submission_profile(_result(), labelled=False))
    with pytest.raises(ConfigError, match="no accuracy against labels"):
        _plan([unlabelled], "closed")
    labelled = _run_dir(tmp_path / "b", _submission_profile(_result(), labelled=True))
    (entry,) = plan_export([labelled], division="closed", org="B", system="s").entries
    assert not entry.quick


def test_llama3_1_8b_exports_open_only(tmp_path: Path) -> None:
    base = load_result(FIXTURE)
    config = dataclasses.replace(base.loadgen_config, model_key="llama3_1-8b")
    llm = dataclasses.replace(base, loadgen_config=config)
    run = _run_dir(tmp_path / "open", llm)
    (entry,) = plan_export([run], division="open", org="B", system="s", force_quick=True).entries
    assert entry.benchmark == "llama3.1-8b"
    labelled = _run_dir(tmp_path / "closed", _submission_profile(llm, labelled=True))
    with pytest.raises(ConfigError, match=r"llama3\.1-8b has no ROUGE score .* --division open"):
        _plan([labelled], "closed")


def test_a_model_without_an_mlperf_benchmark_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "tiny"
    run.mkdir()
    write_result(load_result(FIXTURE), run)
    with pytest.raises(ConfigError, match=r"LoadGen model 'tiny' has no MLPerf benchmark .*resnet"):
        _plan([run])


def test_two_runs_of_one_scenario_are_refused(tmp_path: Path) -> None:
    a = _run_dir(tmp_path / "a", _result())
    b = _run_dir(tmp_path / "b", _result())
    with pytest.raises(ConfigError, match="both are resnet SingleStream; a submission holds one"):
        _plan([a, b])


def test_runs_of_two_machines_are_refused(tmp_path: Path) -> None:
    a = _run_dir(tmp_path / "a", _result())
    other = dataclasses.replace(_result().hardware, fingerprint_id="0123456789abcdef")
    b = _run_dir(tmp_path / "b", _result(hardware=other, scenario="Offline"))
    with pytest.raises(ConfigError, match="measured on another machine"):
        _plan([a, b])


def test_a_sweep_is_refused(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    empty = SweepFile(
        scenario_name="x",
        profile="quick",
        points=(),
        saturation_batch=None,
        best_batch=None,
        stopped="plateau",
        limit=None,
    )
    write_sweep(sweep / SWEEP_FILE, empty)
    with pytest.raises(ConfigError, match="a batch sweep; export one of its runs"):
        _plan([sweep])


def test_an_incomplete_run_is_refused(tmp_path: Path) -> None:
    run = _run_dir(tmp_path / "run", _result())
    (run / "INCOMPLETE").write_text("interrupted (Ctrl-C)\n")
    with pytest.raises(ResultError, match="run is incomplete"):
        _plan([run])


def test_the_cli_refuses_quick_for_closed_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path / "run", _result())
    out = tmp_path / "tree"
    args = ["submission", str(run), "--org", "B", "--system", "s", "--division", "closed"]
    code = main([*args, "--out", str(out), "--force-quick"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "the closed division takes only `--profile submission` runs" in err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["run"]
