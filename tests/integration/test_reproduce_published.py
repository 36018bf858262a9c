"""`harness reproduce` of a published MLPerf record (issue #26): real LoadGen runs, real records.

The record is the shipped ResNet-50 Offline result (results/published/) as `harness import
mlperf` writes it. Its benchmark runs here on the zoo model whose sha256 the record states
(generator 1), with the seeds of its detail log, shortened by --quick to a scenario file whose
quick profile is a second or two. Side by side, comparability graded; a verdict only with
--same-system. A --model with another sha256, a benchmark the zoo lacks, and hostile records
(a link out of the record, files past their bound) are refused before anything runs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import ModelError, ResultError
from harness.models.registry import zoo_model_path
from harness.published.importer import import_mlperf
from harness.records.layout import DETAIL_LOG, JOB_FILE, PUBLISHED_FILE
from harness.records.loadgen_log import effective_settings, parse_detail_log
from harness.reproduce.codes import VERDICT_CODES
from tests.conftest import REPO
from tests.unit.test_published_import import fixed_now

pytestmark = pytest.mark.slow
TREE = REPO / "results" / "published" / "2026-12-01-resnet50-open-2core-epyc-kvm"
SEEDS = {
    "qsl_rng_seed": 2085463073848966840,
    "sample_index_rng_seed": 2747215439041700203,
    "schedule_rng_seed": 16159082839903944936,
}
# The shipped resnet50-offline scenario with a quick profile of about a second: "made short".
SHORT_QUICK = """
warmup: {min_queries: 3, min_duration_ms: 500}
quick: {min_duration_ms: 1500, min_query_count: 1, performance_sample_count: 16,
        accuracy_sample_count: 16}
"""


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Ran:
    code = main(argv)
    captured = capsys.readouterr()
    return Ran(code, captured.out, captured.err)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The shipped tree imported: its records by scenario."""
    out = tmp_path_factory.mktemp("published") / "records"
    imported = import_mlperf(TREE, out, now=fixed_now)
    return {p.name.rsplit("-", 1)[1]: p for p in imported.written}


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """A working directory whose scenarios/resnet50-offline.yaml has a second-long quick run."""
    scenarios = tmp_path / "work" / "scenarios"
    scenarios.mkdir(parents=True)
    shipped = (REPO / "scenarios" / "resnet50-offline.yaml").read_text()
    kept = shipped.split("\nwarmup:")[0].replace(
        "total_sample_count: 1024", "total_sample_count: 64"
    )
    (scenarios / "resnet50-offline.yaml").write_text(kept + "\n" + SHORT_QUICK)
    before = Path.cwd()
    os.chdir(scenarios.parent)
    try:
        yield scenarios.parent
    finally:
        os.chdir(before)


def _row(out: str, name: str) -> str:
    found = [line for line in out.splitlines() if line.startswith(f"  {name} ")]
    assert found, f"no {name!r} row in:\n{out}"
    return found[-1][2 + len(name) :].strip()


def test_the_shipped_record_runs_here_side_by_side(
    records: dict[str, Path], workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = workdir / "runs"
    ran = _main(["reproduce", str(records["Offline"]), "--quick", "--out", str(out)], capsys)
    assert ran.code == 0, ran.err
    assert _row(ran.out, "model") == "zoo resnet50 (generator 1), sha256 385c5a0a2886: the record's"
    assert "qsl_rng_seed 2085463073848966840" in _row(ran.out, "settings")
    assert "min_duration 1500 (--quick; the record's 600000)" in ran.out
    published, local = re.split(r"\s{2,}", _row(ran.out, "throughput"))
    assert published == "18.2 samples/s"  # the record's, as its detail log states it
    assert float(local.split()[0]) > 0
    assert re.split(r"\s{2,}", _row(ran.out, "system")) == [
        "2core-epyc-kvm-onnxruntime-cpu",
        "this machine",
    ]
    assert _row(ran.out, "intended") == "hardware: another system"
    assert "LoadGen setting min_duration_ms: 600000 != 1500" in _row(ran.out, "caveats")
    assert "qsl_rng_seed" not in _row(ran.out, "caveats")  # the seeds match: no caveat
    assert _row(ran.out, "verdict") == "compared, not judged: a different system"
    assert _row(ran.out, "exit code") == "0"
    # what LoadGen really ran: the record's seeds, the quick duration, this machine's target
    (group,) = out.iterdir()
    trial = group / "trial-1"
    logged = effective_settings(parse_detail_log(trial / DETAIL_LOG))
    assert {key: logged[key] for key in SEEDS} == SEEDS
    assert logged["min_duration_ms"] == 1500 and logged["performance_sample_count"] == 16
    assert logged["target_qps"] != 26.087  # the record's system's speed, not asked here
    job = json.loads((trial / JOB_FILE).read_text())
    assert job["pins"]["seeds"] == SEEDS
    assert (group / "reproduction.txt").read_text().rstrip("\n") in ran.out


def test_same_system_judges_by_the_tolerance(
    records: dict[str, Path], workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["reproduce", str(records["Offline"]), "--quick", "--same-system"]
    ran = _main([*argv, "--tolerance", "offline=0%", "--out", str(workdir / "a")], capsys)
    assert ran.code == VERDICT_CODES["NOT REPRODUCED"].code == 30, ran.err
    verdict = _row(ran.out, "verdict")
    assert verdict.startswith("NOT REPRODUCED (--same-system: ")
    apart = float(re.search(r"([\d.]+)% apart", verdict).group(1))  # type: ignore[union-attr]
    assert _row(ran.out, "exit code") == "30 (NOT REPRODUCED)"
    if apart < 100:  # --tolerance takes at most 100 %: a machine 2x faster is never judged so
        wide = f"offline={int(apart) + 1}%"
        ran = _main([*argv, "--tolerance", wide, "--out", str(workdir / "b")], capsys)
        assert ran.code in (0, 30), ran.err  # a second run lands elsewhere: either verdict
        within = float(re.search(r"([\d.]+)% apart", ran.out).group(1)) <= int(apart) + 1  # type: ignore[union-attr]
        assert ran.code == (0 if within else 30)
        assert _row(ran.out, "verdict").startswith("REPRODUCED" if within else "NOT REPRODUCED")


def test_a_model_with_another_sha256_is_refused(
    records: dict[str, Path], workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tiny = zoo_model_path("tiny")
    out = workdir / "runs"
    ran = _main(
        ["reproduce", str(records["Offline"]), "--model", str(tiny), "--out", str(out)], capsys
    )
    assert ran.code == ModelError.exit_code
    (line,) = [x for x in ran.err.splitlines() if x.startswith("error: ")]
    assert f"--model {tiny}: sha256 " in line
    assert "is not the model the published result measured (sha256 385c5a0a28860890" in line
    assert not out.exists()  # refused before anything ran


def test_a_benchmark_the_zoo_lacks_needs_model(
    records: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = _copy(records["Offline"], tmp_path)
    data = json.loads((record / PUBLISHED_FILE).read_text())
    data.update(benchmark="llama2-70b", model="llama2-70b")
    (record / PUBLISHED_FILE).write_text(json.dumps(data))
    ran = _main(["reproduce", str(record), "--out", str(tmp_path / "runs")], capsys)
    assert ran.code == ModelError.exit_code
    assert ran.err.strip().splitlines()[-1] == (
        f"error: {record}: benchmark 'llama2-70b' (LoadGen model 'llama2-70b') has no zoo "
        "model here; pass its ONNX file with --model PATH"
    )


def test_a_stated_sha256_no_zoo_generator_builds_is_refused(
    records: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = _copy(records["Offline"], tmp_path)
    (measured,) = (record / "measurements").iterdir()
    data = json.loads(measured.read_text())
    data["model_sha256"] = "ab" * 32  # the record claims a model the zoo does not build
    measured.write_text(json.dumps(data))
    ran = _main(["reproduce", str(record), "--out", str(tmp_path / "runs")], capsys)
    assert ran.code == ModelError.exit_code
    line = ran.err.strip().splitlines()[-1]
    assert "the record's model has sha256 abababababab, which no zoo resnet50 generator" in line
    assert "generator 1: 385c5a0a2886" in line and line.endswith("with --model PATH")
    assert not (tmp_path / "runs").exists()


def _copy(record: Path, tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / record.name
    shutil.copytree(record, target, symlinks=True)
    return target


def _link_out(record: Path, tmp_path: Path) -> str:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text((record / DETAIL_LOG).read_text())
    (record / DETAIL_LOG).unlink()
    (record / DETAIL_LOG).symlink_to(outside)
    return "leads out of"


def _record_links_out(record: Path, tmp_path: Path) -> str:
    outside = tmp_path / "published-elsewhere.json"
    outside.write_text((record / PUBLISHED_FILE).read_text())
    (record / PUBLISHED_FILE).unlink()
    (record / PUBLISHED_FILE).symlink_to(outside)
    return "leads out of"


def _escaping_name(record: Path, tmp_path: Path) -> str:
    data = json.loads((record / PUBLISHED_FILE).read_text())
    (tmp_path / "elsewhere.json").write_text('{"model_sha256": "' + "0" * 64 + '"}')
    data["files"] = [*data["files"], "measurements/../../elsewhere.json"]  # out of the record
    (record / PUBLISHED_FILE).write_text(json.dumps(data))
    return "leads out of"


def _huge_record(record: Path, tmp_path: Path) -> str:
    with (record / PUBLISHED_FILE).open("r+b") as handle:
        handle.truncate(17 * 1024 * 1024)  # sparse: nothing is written, the size is there
    return "larger than 16 MiB"


def _huge_log(record: Path, tmp_path: Path) -> str:
    with (record / DETAIL_LOG).open("r+b") as handle:
        handle.truncate(65 * 1024 * 1024)
    return "larger than 64 MiB"


@pytest.mark.parametrize(
    "make", [_link_out, _record_links_out, _escaping_name, _huge_record, _huge_log]
)
def test_a_hostile_record_is_refused_before_anything_runs(
    make: object, records: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = _copy(records["Offline"], tmp_path)
    fragment = make(record, tmp_path)  # type: ignore[operator]
    out = tmp_path / "runs"
    ran = _main(["reproduce", str(record), "--quick", "--out", str(out)], capsys)
    assert ran.code == ResultError.exit_code
    (line,) = [x for x in ran.err.splitlines() if x.startswith("error: ")]
    assert fragment in line and "Traceback" not in ran.err
    assert not out.exists()


def test_published_only_flags_are_refused_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "run").mkdir()
    ran = _main(["reproduce", str(tmp_path / "run"), "--same-system"], capsys)
    assert ran.code != 0
    assert "--same-system: only for a published record" in ran.err
