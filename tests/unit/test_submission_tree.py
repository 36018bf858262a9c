"""The submission tree written from a real run: layout, copies, truncation, compliance, refusals.

One real LoadGen run of the tiny model under LoadGen's resnet50 key (so MLPerf's resnet rules
apply) serves most tests, and a copy of it with real `harness compliance` TEST01 and TEST04
runs the compliance ones; each test exports into its own directory. A closed-division export
needs a submission-profile run scored against labels: a copy's result.json is rewritten to
say so (_as_closed), since a real one takes ten minutes per LoadGen test. One more real run,
over generated JPEGs with labels, checks MLPerf's accuracy line end to end.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from harness.cli import main
from harness.errors import ConfigError, DependencyError, ResultError
from harness.records.accuracy import ClosedDivision, LabelAccuracy
from harness.results.runfile import load_result, write_result
from harness.submission.accuracy_txt import MAX_ACCURACY_LOG_BYTES
from harness.submission.checker import find_checker, run_checker
from harness.submission.export import Exported, ExportRequest, export_submission
from harness.submission.system import load_description
from tests.conftest import REPO

pytestmark = pytest.mark.slow
TOOLS = REPO.parent / "shared" / "mlperf-tools"
EXAMPLE = REPO / "scenarios" / "system-description.example.yaml"
# 256 accuracy samples of 10 logits each: a log of about 25 KiB, above the 10 KiB limit.
SCENARIO = """
name: tiny-as-resnet50
scenario: SingleStream
model: {zoo: tiny, loadgen_name: resnet50}
batch_size: 1
trials: 1
data: {total_sample_count: 256}
warmup: {min_queries: 20, min_duration_ms: 300}
quick: {min_duration_ms: 1000, min_query_count: 100, performance_sample_count: 32,
        accuracy_sample_count: 256}
"""
RESULT = "open/Org/results/vm1/resnet/SingleStream"
RESULT_CLOSED = "closed/Org/results/vm1/resnet/SingleStream"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[Path]:
    """A finished quick run (performance and accuracy tests), shared by the module's tests."""
    base = tmp_path_factory.mktemp("submission-run")
    scenario = base / "tiny-as-resnet50.yaml"
    scenario.write_text(SCENARIO)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        assert main(["run", str(scenario), "--out", str(base / "runs")]) == 0
    (run,) = (base / "runs").iterdir()
    yield run


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    return copy


def _export(sources: list[Path], out: Path, division: str = "open") -> Exported:
    request = ExportRequest(
        sources=tuple(sources),
        division=division,  # type: ignore[arg-type]
        org="Org",
        system="vm1",
        out=out,
        description=load_description(EXAMPLE),
        force_quick=division == "open",
    )
    return export_submission(request)


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _checker_constants() -> Any:
    path = TOOLS / "submission_checker" / "constants.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("mlperf_checker_constants", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _checker_paths(division: str, tests: bool) -> list[str]:
    """The files MLPerf v6.1's checker loads for resnet SingleStream, from its own templates."""
    constants = _checker_constants()
    if constants is None:
        pytest.skip(f"{TOOLS} is absent (a user's clone): the checker's path templates are there")
    names = [
        "PERFORMANCE_LOG_PATH",
        "PERFORMANCE_SUMMARY_PATH",
        "ACCURACY_LOG_PATH",
        "ACCURACY_RESULT_PATH",
        "ACCURACY_JSON_PATH",
        "MEASUREMENTS_PATH",
        "SYSTEM_PATH",
    ]
    names += ["TEST01_PERF_PATH", "TEST01_ACC_PATH", "TEST04_PERF_PATH"] if tests else []
    where = {
        "division": division,
        "submitter": "Org",
        "system": "vm1",
        "benchmark": "resnet",
        "scenario": "SingleStream",
    }
    return [getattr(constants, name)["v6.1"].format(**where) for name in names]


def test_the_open_tree_holds_what_mlperf_requires_and_nothing_else(
    run_dir: Path, tmp_path: Path
) -> None:
    exported = _export([run_dir], tmp_path / "tree")
    assert exported.root == tmp_path / "tree"
    assert _files(exported.root) == sorted(
        [
            "open/Org/src/README.md",
            "open/Org/systems/vm1.json",
            *(
                f"{RESULT}/{name}"
                for name in (
                    "README.md",
                    "measurements.json",
                    "mlperf.conf",
                    "user.conf",
                    "accuracy/accuracy.txt",
                    "accuracy/mlperf_log_accuracy.json",
                    "accuracy/mlperf_log_detail.txt",
                    "accuracy/mlperf_log_summary.txt",
                    "performance/run_1/mlperf_log_detail.txt",
                    "performance/run_1/mlperf_log_summary.txt",
                )
            ),
        ]
    )
    for path in _checker_paths("open", tests=False):
        assert (exported.root / path).is_file(), path
    assert exported.notes == ("resnet SingleStream: a quick-profile run, labelled as such",)
    assert exported.unknown == []  # the example description fills every field


def test_logs_are_copied_unchanged_and_the_run_dir_is_untouched(
    run_dir: Path, tmp_path: Path
) -> None:
    before = {name: _sha(run_dir / name) for name in _files(run_dir)}
    root = _export([run_dir], tmp_path / "tree").root / RESULT
    pairs = {
        "performance/run_1/mlperf_log_summary.txt": "mlperf_log_summary.txt",
        "performance/run_1/mlperf_log_detail.txt": "mlperf_log_detail.txt",
        "accuracy/mlperf_log_summary.txt": "accuracy/mlperf_log_summary.txt",
        "accuracy/mlperf_log_detail.txt": "accuracy/mlperf_log_detail.txt",
        "user.conf": "user.conf",
        "mlperf.conf": "mlperf.conf",
    }
    for exported, original in pairs.items():
        assert (root / exported).read_bytes() == (run_dir / original).read_bytes(), exported
    assert {name: _sha(run_dir / name) for name in _files(run_dir)} == before


def test_the_accuracy_log_is_truncated_and_hashed_whole(run_dir: Path, tmp_path: Path) -> None:
    full = run_dir / "accuracy" / "mlperf_log_accuracy.json"
    assert full.stat().st_size > MAX_ACCURACY_LOG_BYTES  # the run's log stays whole
    accuracy = _export([run_dir], tmp_path / "tree").root / RESULT / "accuracy"
    copy = accuracy / "mlperf_log_accuracy.json"
    assert copy.stat().st_size <= MAX_ACCURACY_LOG_BYTES
    assert copy.read_bytes()[:100] == full.read_bytes()[:100]
    lines = (accuracy / "accuracy.txt").read_text().splitlines()
    assert f"hash={_sha(full)}" in lines
    assert lines[0].startswith("Synthetic weights: accuracy not measurable")  # a zoo model
    assert lines[1].startswith("no accuracy= line: the data had no labels")  # synthetic data


def test_the_documents_say_what_ran(run_dir: Path, tmp_path: Path) -> None:
    root = _export([run_dir], tmp_path / "tree").root
    result = load_result(run_dir)
    system = json.loads((root / "open/Org/systems/vm1.json").read_text())
    assert (system["division"], system["submitter"], system["system_name"]) == (
        "open",
        "Org",
        "vm1",
    )
    assert "Quick-profile results" in system["sw_notes"]
    measurements = json.loads((root / RESULT / "measurements.json").read_text())
    assert measurements["weight_data_types"] == "fp32" and measurements["retraining"] == "no"
    assert measurements["model_sha256"] == result.model.sha256
    assert all(measurements.values())
    readme = (root / RESULT / "README.md").read_text()
    commit = result.fingerprint.section("harness")["git_commit"]
    assert "QUICK PROFILE" in readme and f"git commit {commit}" in readme
    assert f"beyond-tops {result.versions.harness}" in readme
    assert "no container image" in readme
    assert "loadgen_name: resnet50" in readme  # the scenario as it ran, to run again
    assert f"git commit {commit}" in (root / "open/Org/src/README.md").read_text()


def test_an_existing_tree_is_never_overwritten(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "tree"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(ResultError, match="exists and is not empty; a submission tree is never"):
        _export([run_dir], out)
    assert _files(out) == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]  # no temporary left


def test_an_empty_out_directory_is_used(run_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    assert (_export([run_dir], tmp_path / "tree").root / RESULT / "README.md").is_file()


def test_a_failure_leaves_no_tree_at_all(run_dir: Path, tmp_path: Path) -> None:
    broken = _copy(run_dir, tmp_path)
    (broken / "accuracy" / "mlperf_log_detail.txt").unlink()
    with pytest.raises(
        ResultError, match=r"accuracy/mlperf_log_detail.txt: missing; .*\(run it again\)"
    ):
        _export([broken], tmp_path / "tree")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def _as_closed(run: Path) -> Path:
    """Make a copy of the run stand for a submission-profile run scored against labels."""
    result = load_result(run)
    labels = LabelAccuracy(
        count=256,
        label_offset=0,
        top1=0.5,
        top5=0.75,
        fp32_top1=0.5,
        fp32_top5=0.75,
        closed_division=ClosedDivision(
            accuracy=0.5, reference=0.5, fraction=0.99, target=0.495, passed=True
        ),
    )
    outcome = dataclasses.replace(result.outcome, profile="submission")
    accuracy = dataclasses.replace(result.accuracy, against_labels=labels)
    write_result(dataclasses.replace(result, outcome=outcome, accuracy=accuracy), run)
    return run


@pytest.fixture(scope="module")
def compliant_run(
    run_dir: Path, tmp_path_factory: pytest.TempPathFactory, model_cache: Path
) -> Path:
    """A copy of the run with real `harness compliance TEST01` and `TEST04` runs in it.

    Their verdicts do not matter here (a busy machine may fail the performance comparison):
    the export copies what the tests left, and the checker judges it.
    """
    run = tmp_path_factory.mktemp("compliant") / "run"
    shutil.copytree(run_dir, run)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        for test in ("TEST01", "TEST04"):
            assert main(["compliance", test, str(run)]) in (0, 1)  # 1: TEST FAIL
    return run


def test_closed_without_compliance_says_what_the_checker_will_miss(
    run_dir: Path, tmp_path: Path
) -> None:
    run = _as_closed(_copy(run_dir, tmp_path))
    exported = _export([run], tmp_path / "tree", division="closed")
    assert [note.split(":")[0] for note in exported.notes] == ["resnet SingleStream"] * 2
    assert "no compliance/TEST01" in exported.notes[0] and "TEST04" in exported.notes[1]
    assert not any(p.name.startswith("TEST") for p in (exported.root / RESULT_CLOSED).iterdir())
    accuracy = exported.root / RESULT_CLOSED / "accuracy" / "accuracy.txt"
    lines = accuracy.read_text().splitlines()
    assert lines[0].startswith("Synthetic weights: accuracy not measurable (")  # the tiny zoo's
    assert lines[1] == "accuracy=50.000%, good=128, total=256"


def _set_verdict(run: Path, test: str, *, passed: bool) -> None:
    """Make a compliance test's verdict say `passed`: the layout tests need passing verdicts
    (a closed export refuses a failed test), and the machine's noise decides the real one."""
    path = run / "compliance" / test / "verdict.json"
    verdict = json.loads(path.read_text())
    path.write_text(json.dumps({**verdict, "passed": passed}))


def _passing(run: Path) -> Path:
    for test in ("TEST01", "TEST04"):
        _set_verdict(run, test, passed=True)
    return run


def test_compliance_runs_go_where_the_checker_looks(compliant_run: Path, tmp_path: Path) -> None:
    run = _passing(_as_closed(_copy(compliant_run, tmp_path)))
    exported = _export([run], tmp_path / "tree", division="closed")
    assert exported.notes == ()
    for path in _checker_paths("closed", tests=True):
        assert (exported.root / path).is_file(), path
    scenario = exported.root / RESULT_CLOSED
    assert _files(scenario / "TEST04") == [
        "performance/run_1/mlperf_log_detail.txt",
        "performance/run_1/mlperf_log_summary.txt",
        "verify_performance.txt",
    ]
    assert _files(scenario / "TEST01") == [
        "accuracy/accuracy.txt",
        "accuracy/mlperf_log_accuracy.json",
        "performance/run_1/mlperf_log_detail.txt",
        "performance/run_1/mlperf_log_summary.txt",
        "verify_accuracy.txt",
        "verify_performance.txt",
    ]
    log = run / "compliance" / "TEST01" / "mlperf_log_accuracy.json"
    assert (scenario / "TEST01/accuracy/accuracy.txt").read_text() == f"hash={_sha(log)}\n"
    assert (scenario / "TEST01/accuracy/mlperf_log_accuracy.json").stat().st_size <= 10 * 1024


def test_the_checker_finds_no_fault_in_the_compliance_layout(
    compliant_run: Path, tmp_path: Path
) -> None:
    try:
        checker = find_checker()
    except DependencyError as exc:
        pytest.skip(f"no MLPerf checker here: {exc}")
    run = _passing(_as_closed(_copy(compliant_run, tmp_path)))
    root = _export([run], tmp_path / "tree", division="closed").root
    outcome = run_checker(checker, root)
    assert "checker crashed" not in outcome.output
    # It read accuracy.txt: the value of our accuracy= line and its hash.
    assert "accuracy not met: expected=75.695400, found=50.000" in outcome.output
    assert not [e for e in outcome.errors if "not hash value" in e]
    layout = ("compliance dir", "file list mismatch", "has no performance/run_1", "is missing in")
    assert [e for e in outcome.errors if any(word in e for word in layout)] == []
    for test in ("TEST01", "TEST04"):  # it read our compliance logs: their quick settings show
        assert any(f"SingleStream/{test} Test duration less than 600s" in e for e in outcome.errors)
        # and our verify_performance.txt: it reports a failure exactly when the test failed
        passed = "TEST PASS" in (run / "compliance" / test / "verify_performance.txt").read_text()
        failure = f"Compliance test performance check in {RESULT_CLOSED}/{test} failed"
        assert (failure in outcome.errors) is not passed


def test_a_failed_compliance_test_is_refused_in_the_closed_division(
    compliant_run: Path, tmp_path: Path
) -> None:
    run = _passing(_as_closed(_copy(compliant_run, tmp_path)))
    _set_verdict(run, "TEST04", passed=False)
    with pytest.raises(ResultError, match=r"TEST04: compliance TEST04 failed .* open division"):
        _export([run], tmp_path / "tree", division="closed")
    assert not (tmp_path / "tree").exists()


def test_a_failed_compliance_test_is_exported_and_said_in_the_open_division(
    compliant_run: Path, tmp_path: Path
) -> None:
    run = _passing(_copy(compliant_run, tmp_path))
    _set_verdict(run, "TEST01", passed=False)
    exported = _export([run], tmp_path / "tree", division="open")
    assert [n for n in exported.notes if "compliance" in n] == [
        "resnet SingleStream: compliance TEST01 FAILED (see TEST01/verify_performance.txt); "
        "exported because the open division does not require compliance, and said so in its "
        "README.md"
    ]
    readme = next(exported.root.rglob("SingleStream/README.md")).read_text()
    assert "- compliance TEST01: **TEST FAIL**" in readme
    assert "- compliance TEST04: TEST PASS" in readme


def test_an_incomplete_compliance_test_is_refused(compliant_run: Path, tmp_path: Path) -> None:
    run = _passing(_as_closed(_copy(compliant_run, tmp_path)))
    (run / "compliance" / "TEST04" / "INCOMPLETE").write_text("interrupted (SIGTERM)\n")
    with pytest.raises(
        ResultError, match=r"TEST04: the compliance test is incomplete \(interrupted"
    ):
        _export([run], tmp_path / "tree", division="closed")
    assert not (tmp_path / "tree").exists()


def test_closed_resnet_needs_an_edge_system(run_dir: Path, tmp_path: Path) -> None:
    run = _as_closed(_copy(run_dir, tmp_path))
    description = {**load_description(EXAMPLE), "system_type": "datacenter"}
    request = ExportRequest(
        sources=(run,),
        division="closed",
        org="Org",
        system="vm1",
        out=tmp_path / "tree",
        description=description,
    )
    with pytest.raises(ConfigError, match="system_type: 'datacenter' has no resnet in MLPerf"):
        export_submission(request)
    assert not (tmp_path / "tree").exists()


def _stub_checker(tmp_path: Path, status: int) -> Path:
    """A stand-in for check-submission.sh: records its arguments, prints one error."""
    stub = tmp_path / "check.sh"
    stub.write_text(
        f'echo "$@" > "{tmp_path}/args"; echo "$PYTHON" > "{tmp_path}/python"\n'
        'printf "== errors\\n      2 ERROR something is off\\n== warnings\\n"\n'
        f"exit {status}\n"
    )
    return stub


def _cli(run: Path, out: Path, *extra: str) -> list[str]:
    common = ["--org", "Org", "--system", "vm1", "--division", "open", "--force-quick"]
    return ["submission", str(run), *common, "--out", str(out), *extra]


def test_check_runs_the_checker_and_keeps_its_output(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = _stub_checker(tmp_path, 1)
    out = tmp_path / "tree"
    code = main(_cli(run_dir, out, "--checker", str(stub), "--skip-dataset-size-check"))
    captured = capsys.readouterr()
    assert code == 9  # the tree is written, but what the user asked to check failed
    assert captured.out.splitlines()[-1] == str(out)
    assert "2 ERROR something is off" in captured.out
    assert captured.err == (
        f"error: {out}: MLPerf's checker reports 1 error line(s), listed above and in "
        "check-submission.txt; the tree is written as it stands\n"
    )
    assert (tmp_path / "args").read_text().split() == [str(out), "--skip-dataset-size-check"]
    assert (tmp_path / "python").read_text().strip() == sys.executable
    assert "something is off" in (out / "check-submission.txt").read_text()


def test_a_passing_check_exits_0(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tree"
    assert main(_cli(run_dir, out, "--check", "--checker", str(_stub_checker(tmp_path, 0)))) == 0
    assert capsys.readouterr().out.splitlines()[-1] == str(out)


def test_a_missing_checker_stops_before_anything_is_written(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tree"
    code = main(_cli(run_dir, out, "--checker", str(tmp_path / "nope.sh")))
    assert code == 8
    assert capsys.readouterr().err == (
        f"error: --checker {tmp_path / 'nope.sh'}: no such file; pass check-submission.sh\n"
    )
    assert not out.exists()


def test_skipping_the_dataset_check_needs_a_check(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_cli(run_dir, tmp_path / "tree", "--skip-dataset-size-check")) == 2
    assert capsys.readouterr().err == "error: --skip-dataset-size-check: only with --check\n"


def test_compliance_runs_are_read_where_harness_compliance_leaves_them() -> None:
    from harness.records.layout import COMPLIANCE_DIR, VERIFY_ACCURACY, VERIFY_PERFORMANCE
    from harness.submission import tree

    assert tree.COMPLIANCE_DIR == COMPLIANCE_DIR
    assert {VERIFY_ACCURACY, VERIFY_PERFORMANCE} <= set(tree.COMPLIANCE_FILES)


def _colour_model(path: Path) -> Path:
    """[N, 3, 224, 224] -> [N, 1001] scores: the mean red channel scores class 4 (label 3)."""
    weights = np.zeros((3, 1001), dtype=np.float32)
    weights[0, 4] = 1.0
    graph = helper.make_graph(
        [
            helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
            helper.make_node("Flatten", ["pooled"], ["means"], axis=1),
            helper.make_node("MatMul", ["means", "weights"], ["scores"]),
        ],
        "colour",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", 1001])],
        initializer=[numpy_helper.from_array(weights, "weights")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _images(folder: Path) -> Path:
    """Eight JPEGs all labelled 3: four red (scored right), four blue (scored wrong)."""
    folder.mkdir()
    lines = []
    for i in range(8):
        image = np.full((256, 320, 3), 30, dtype=np.uint8)
        image[..., 2 if i % 2 == 0 else 0] = 230  # OpenCV is BGR: channel 2 is red
        ok, data = cv2.imencode(".jpg", image)
        assert ok
        name = f"ILSVRC2012_val_{i + 1:08d}.JPEG"
        (folder / name).write_bytes(data.tobytes())
        lines.append(f"{name} 3\n")
    (folder / "val_map.txt").write_text("".join(lines))
    return folder


def test_a_labelled_run_gets_mlperfs_accuracy_line(tmp_path: Path) -> None:
    model = _colour_model(tmp_path / "colour.onnx")
    folder = _images(tmp_path / "imagenet")
    scenario = tmp_path / "labelled.yaml"
    scenario.write_text(
        f"""
name: labelled
scenario: SingleStream
model: {{path: {model}, loadgen_name: resnet50}}
trials: 1
data: {{source: imagenet, dir: {folder}}}
warmup: {{min_queries: 20, min_duration_ms: 100}}
quick: {{min_duration_ms: 500, min_query_count: 64, performance_sample_count: 8,
        accuracy_sample_count: 8}}
"""
    )
    assert main(["run", str(scenario), "--out", str(tmp_path / "runs")]) == 0
    (run,) = (tmp_path / "runs").iterdir()
    accuracy = _export([run], tmp_path / "tree").root / RESULT / "accuracy" / "accuracy.txt"
    first = accuracy.read_text().splitlines()[0]
    assert first == "accuracy=50.000%, good=4, total=8"
    constants = _checker_constants()
    if constants is not None:
        match = re.match(constants.ACC_PATTERN["acc"], first + "\n")
        assert match is not None and match.group(1) == "50.000"
