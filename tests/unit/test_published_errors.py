"""Broken published trees: one bad result is a warning naming its file, the rest import."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import ResultError
from harness.published.importer import import_mlperf
from harness.published.record import load_published
from tests.unit.test_published_import import V40, V41, fixed_now

RESULTS = "closed/UntetherAI/results"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A tree of real files: UntetherAI's two v4.1 results, and Intel's v4.0 one beside them."""
    root = tmp_path / "tree"
    shutil.copytree(V41 / "UntetherAI", root / "closed" / "UntetherAI")  # its two results
    shutil.copytree(V40 / "Intel", root / "closed" / "Intel")
    return root


def ss_run(root: Path) -> Path:
    return root / RESULTS / "h13_u2_preview/resnet50/singlestream/performance/run_1"


def offline_run(root: Path) -> Path:
    return root / RESULTS / "r760_u6_slim/resnet50/offline/performance/run_1"


def test_a_missing_detail_log_skips_that_result_and_names_the_file(tree: Path) -> None:
    (ss_run(tree) / "mlperf_log_detail.txt").unlink()
    imported = import_mlperf(tree, tree.parent / "out", now=fixed_now)
    assert len(imported.written) == 2
    (line,) = imported.skipped
    assert str(ss_run(tree) / "mlperf_log_detail.txt") in line
    assert "no detail log" in line and line.endswith("skipped")


def test_a_malformed_line_names_the_file_and_line_number(tree: Path) -> None:
    detail = offline_run(tree) / "mlperf_log_detail.txt"
    lines = detail.read_text().splitlines(keepends=True)
    lines[40] = lines[40][:60] + "\n"  # a line cut short, as a truncated copy leaves it
    detail.write_text("".join(lines))
    imported = import_mlperf(tree, tree.parent / "out", now=fixed_now)
    assert len(imported.written) == 2
    (line,) = imported.skipped
    assert f"{detail}:41: not a valid :::MLLOG line" in line


def test_a_missing_system_json_imports_with_a_warning_naming_it(tree: Path) -> None:
    system = tree / "closed/Intel/systems/1-node-2S-EMR-PyTorch.json"
    system.unlink()
    imported = import_mlperf(tree / "closed/Intel", tree.parent / "out", now=fixed_now)
    (written,) = imported.written
    record = load_published(written)
    assert record.system.processor is None
    assert record.import_warnings == (f"{system}: no system description; its fields are unknown",)
    assert any(str(system) in note for note in imported.notes)
    assert "systems/1-node-2S-EMR-PyTorch.json" not in record.files


def test_an_unknown_scenario_directory_is_skipped_by_name(tree: Path) -> None:
    benchmark = tree / RESULTS / "h13_u2_preview/resnet50"
    (benchmark / "singlestream").rename(benchmark / "Interactive")
    imported = import_mlperf(tree, tree.parent / "out", now=fixed_now)
    assert len(imported.written) == 2
    (line,) = imported.skipped
    assert "unknown scenario directory 'Interactive'" in line
    assert "known: SingleStream, MultiStream, Server, Offline" in line


def test_a_log_of_another_scenario_than_its_directory_is_skipped(tree: Path) -> None:
    shutil.copy(ss_run(tree) / "mlperf_log_detail.txt", offline_run(tree))
    imported = import_mlperf(tree, tree.parent / "out", now=fixed_now)
    (line,) = imported.skipped
    assert "LoadGen ran 'SingleStream', but the directory says 'Offline'" in line


def test_a_log_that_is_not_utf8_is_skipped_by_name(tree: Path) -> None:
    detail = ss_run(tree) / "mlperf_log_detail.txt"
    detail.write_bytes(b"\xff\xfe:::MLLOG " + detail.read_bytes())
    imported = import_mlperf(tree, tree.parent / "out", now=fixed_now)
    (line,) = imported.skipped
    assert f"{detail}: not UTF-8 text" in line


def test_an_old_loadgen_without_result_keys_takes_the_summary_and_says_so(tree: Path) -> None:
    detail = tree / "closed/Intel/results/1-node-2S-EMR-PyTorch/resnet50/Offline"
    detail = detail / "performance/run_1/mlperf_log_detail.txt"
    kept = [
        line
        for line in detail.read_text().splitlines(keepends=True)
        if '"result_validity"' not in line and '"result_samples_per_second"' not in line
    ]
    detail.write_text("".join(kept))
    (written,) = import_mlperf(tree / "closed/Intel", tree.parent / "out", now=fixed_now).written
    record = load_published(written)
    assert record.metric.value == 25289.6  # the summary's "Samples per second"
    assert record.valid is None
    assert any("no result_validity" in w for w in record.import_warnings)
    assert any("taken from mlperf_log_summary.txt" in w for w in record.import_warnings)


def test_nothing_importable_is_one_error_that_says_what_to_pass(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("no results here\n")
    with pytest.raises(ResultError, match=r"no MLPerf result found .*pass a results tree"):
        import_mlperf(tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ResultError, match="no such file or directory"):
        import_mlperf(tmp_path / "absent", tmp_path / "out")


def test_every_result_broken_is_an_error_quoting_the_first(tree: Path) -> None:
    for detail in tree.rglob("mlperf_log_detail.txt"):
        detail.unlink()
    with pytest.raises(ResultError, match=r"none of the 3 result\(s\) .*no detail log"):
        import_mlperf(tree, tree.parent / "out")


def test_cli_prints_warnings_and_the_records_then_exits_0(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (ss_run(tree) / "mlperf_log_detail.txt").unlink()
    out = tree.parent / "records"
    assert main(["import", "mlperf", str(tree), "--out", str(out)]) == 0
    stdout, stderr = capsys.readouterr()
    assert sorted(stdout.split()) == sorted(str(p) for p in out.iterdir())
    assert len(stdout.split()) == 2
    assert f"warning: {ss_run(tree) / 'mlperf_log_detail.txt'}: no detail log" in stderr
    assert "imported 2 published result(s); 1 skipped" in stderr


def test_cli_nothing_importable_is_one_error_line_with_the_result_error_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["import", "mlperf", str(tmp_path), "--out", str(tmp_path / "out")])
    _, stderr = capsys.readouterr()
    assert code == ResultError.exit_code
    assert stderr.count("\n") == 1 and stderr.startswith("error: ")
    assert "Traceback" not in stderr


def test_cli_refuses_a_round_that_is_not_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["import", "mlperf", str(tmp_path), "--mlperf-version", "v4"])
    assert code == 2
    assert "--mlperf-version: 'v4' is not a round like 4.1" in capsys.readouterr().err
