"""Real LoadGen runs of the tiny model through the CLI: valid results, schema, failures, Ctrl-C."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from harness.cli import main
from harness.loadgen.sut import SampleStore
from harness.models.registry import zoo_model_path
from tests.conftest import REPO, TINY_OFFLINE, TINY_SS, write_scenario

pytestmark = pytest.mark.slow
OFFICIAL_QSL_SEED = 2085463073848966840


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def load(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "result.json").read_text())


@pytest.mark.parametrize("text", [TINY_SS, TINY_OFFLINE], ids=["SingleStream", "Offline"])
def test_run_writes_a_valid_schema_checked_result(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], result_schema: dict[str, Any]
) -> None:
    scenario = write_scenario(tmp_path / "s.yaml", text)
    code, out, _ = run_cli(["run", str(scenario), "--out", str(tmp_path / "runs")], capsys)
    assert code == 0
    run_dir = Path(out.strip().splitlines()[-1])
    assert run_dir.parent == tmp_path / "runs"
    result = load(run_dir)
    jsonschema.validate(result, result_schema, format_checker=jsonschema.FormatChecker())
    assert result["valid"] is True and result["invalid_reasons"] == []
    assert result["profile"] == "quick" and result["submission_valid"] is False
    assert any("NOT valid for an MLPerf submission" in w for w in result["warnings"])
    assert "NOT submission-valid" in out
    settings = result["settings"]
    assert settings["min_duration_ms"] == 1000
    assert settings["qsl_rng_seed"] == OFFICIAL_QSL_SEED
    assert settings["performance_sample_count"] == 32
    assert result["providers"] == ["CPUExecutionProvider"]
    assert (
        result["model"]["sha256"]
        == hashlib.sha256(Path(result["model"]["path"]).read_bytes()).hexdigest()
    )
    assert result["window"]["duration_s"] >= 1.0
    for name in ("mlperf_log_summary.txt", "mlperf_log_detail.txt", "user.conf", "mlperf.conf"):
        assert (run_dir / name).is_file()
    assert not (run_dir / "INCOMPLETE").exists()
    assert "Result is : VALID" in (run_dir / "mlperf_log_summary.txt").read_text()


def test_singlestream_numbers_are_plausible(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write_scenario(tmp_path / "s.yaml", TINY_SS)
    code, out, _ = run_cli(["run", str(scenario), "--out", str(tmp_path)], capsys)
    result = load(Path(out.strip().splitlines()[-1]))
    lat = result["latency_ns"]
    assert code == 0
    assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    assert lat["early_stopping_p90"] >= lat["p90"]  # LoadGen's estimate is an upper bound
    # One sample per query: throughput is the inverse of the mean latency, give or take the
    # LoadGen overhead between queries.
    assert result["samples_per_second"] == pytest.approx(1e9 / lat["mean"], rel=0.3)
    assert result["batch_size"] == 1
    user_conf = (Path(out.strip().splitlines()[-1]) / "user.conf").read_text().splitlines()
    assert "tiny.SingleStream.min_duration = 1000" in user_conf
    assert any(line.startswith("tiny.SingleStream.target_latency = ") for line in user_conf)


def test_offline_runs_whole_batches_and_reports_throughput(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write_scenario(tmp_path / "s.yaml", TINY_OFFLINE)
    code, out, _ = run_cli(["run", str(scenario), "--out", str(tmp_path)], capsys)
    result = load(Path(out.strip().splitlines()[-1]))
    assert code == 0
    assert result["batch_size"] == 8 and result["model"]["dims"] == {"batch": 8}
    assert result["settings"]["scenario"] == "Offline"
    assert result["settings"]["min_sample_count"] >= 200  # Offline: one query of >= 200
    assert result["samples_per_second"] > 100
    assert result["qps_with_loadgen_overhead"] is None
    assert result["latency_ns"]["early_stopping_p90"] is None
    # Utilization against a measured GEMM through onnxruntime, beside the spec peak.
    util = result["utilization"]
    assert util["attainable_tflops"] > 0
    assert util["attainable_method"].startswith("onnxruntime GEMM probe: 2 x MatMul 1024x1024 fp32")
    assert util["fraction_of_attainable"] == pytest.approx(
        util["achieved_tflops"] / util["attainable_tflops"]
    )
    assert util["peak_basis"] in {"derived", "guess"}


def test_bench_prints_each_run_directory_last(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_scenario(tmp_path / "a.yaml", TINY_SS)
    write_scenario(tmp_path / "b.yaml", TINY_OFFLINE)
    suite = write_scenario(tmp_path / "suite.yaml", "name: t\nscenarios: [a.yaml, b.yaml]\n")
    code, out, _ = run_cli(["bench", str(suite), "--out", str(tmp_path / "runs")], capsys)
    assert code == 0
    last = [Path(line) for line in out.strip().splitlines()[-2:]]
    assert [p.name.split("-")[-2] for p in last] == ["SingleStream", "Offline"]
    assert all((p / "result.json").is_file() for p in last)
    code, shown, _ = run_cli(["show", str(last[0])], capsys)
    assert code == 0 and "tiny-ss-test: SingleStream, batch 1" in shown and "p90" in shown


def test_model_override_runs_a_user_file_and_records_its_checksum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user_model = tmp_path / "my model.onnx"
    user_model.write_bytes(zoo_model_path("tiny").read_bytes())
    scenario = write_scenario(tmp_path / "s.yaml", TINY_SS)
    args = ["run", str(scenario), "--model", str(user_model), "--out", str(tmp_path / "runs")]
    code, out, _ = run_cli(args, capsys)
    result = load(Path(out.strip().splitlines()[-1]))
    assert code == 0
    assert result["model"]["path"] == str(user_model)
    assert result["model"]["name"] == "my model"
    assert result["model"]["sha256"] == hashlib.sha256(user_model.read_bytes()).hexdigest()


def test_image_size_comes_from_the_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write_scenario(
        tmp_path / "s.yaml",
        TINY_OFFLINE.replace(
            "{zoo: tiny}", "{zoo: mobilenet_v2, dims: {height: 96, width: 160}}"
        ).replace("batch_size: 8", "batch_size: 2"),
    )
    code, out, _ = run_cli(["run", str(scenario), "--out", str(tmp_path)], capsys)
    result = load(Path(out.strip().splitlines()[-1]))
    assert code == 0
    assert result["model"]["dims"] == {"batch": 2, "height": 96, "width": 160}


def in_process_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run workers in this process, so a test can patch the runner they use."""
    from harness.execution import pipeline, worker

    monkeypatch.setattr(pipeline, "launch_worker", lambda path: worker.main([str(path)]))


@pytest.mark.parametrize("text", [TINY_SS, TINY_OFFLINE], ids=["SingleStream", "Offline"])
def test_inference_error_fails_the_run_instead_of_hanging(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.execution.runner as runner

    class FailingExecutor:
        def __init__(self, inner: Any) -> None:
            self.inner, self.calls, self.batch_size = inner, 0, inner.batch_size

        def attach(self, arrays: Any) -> None:
            self.inner.attach(arrays)

        def _count(self) -> None:
            self.calls += 1
            if self.calls == 5:
                raise RuntimeError("device lost\nsecond line")

        def run_single(self, row: int) -> Any:
            self._count()
            return self.inner.run_single(row)

        def run_batch(self, rows: Any) -> Any:
            self._count()
            return self.inner.run_batch(rows)

    real_make_sut = runner._make_sut

    def failing_sut(job: Any, executor: Any, store: SampleStore) -> Any:
        failing = FailingExecutor(executor)
        store._executors = (failing,)
        return real_make_sut(job, failing, store)

    monkeypatch.setattr(runner, "_make_sut", failing_sut)
    in_process_workers(monkeypatch)
    scenario = write_scenario(tmp_path / "s.yaml", text)
    code, out, err = run_cli(["run", str(scenario), "--out", str(tmp_path / "runs")], capsys)
    assert code == 5
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: ") and last.endswith("RuntimeError: device lost")
    assert "second line" not in err
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert not (run_dir / "result.json").exists()
    assert "device lost" in (run_dir / "INCOMPLETE").read_text()
    assert out == ""


@pytest.mark.parametrize(
    ("signum", "cause"),
    [
        (signal.SIGINT, "interrupted (Ctrl-C)"),
        (signal.SIGTERM, "interrupted (SIGTERM)"),
        (signal.SIGHUP, "interrupted (SIGHUP)"),
    ],
    ids=["SIGINT", "SIGTERM", "SIGHUP"],
)
@pytest.mark.parametrize("text", [TINY_SS, TINY_OFFLINE], ids=["SingleStream", "Offline"])
def test_ctrl_c_marks_the_run_incomplete(
    text: str, signum: int, cause: str, tmp_path: Path
) -> None:
    """SIGINT, SIGTERM and SIGHUP stop parent and worker alike; both exit 128 + N."""
    long_run = text.replace("min_duration_ms: 1000", "min_duration_ms: 120000")
    scenario = write_scenario(tmp_path / "s.yaml", long_run)
    out_root = tmp_path / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", str(scenario), "--out", str(out_root)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # The state waited for: the performance test's detail log, which LoadGen opens as its
    # timed test starts (the accuracy test's is in accuracy/), not a time that assumes speed.
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if any(log.stat().st_size > 0 for log in out_root.glob("*/mlperf_log_detail.txt")):
            break
        time.sleep(0.05)
    started = time.monotonic()
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    code = 128 + signum
    assert proc.returncode == code, err
    assert time.monotonic() - started < 60  # stopped, not run to its 120 s minimum
    (run_dir,) = out_root.iterdir()
    cause = f"{cause} in the performance test, during LoadGen's run"
    assert (run_dir / "INCOMPLETE").read_text() == f"{cause}\nexit_code: {code}\n"
    assert not (run_dir / "result.json").exists()
    assert not list(run_dir.glob(".*.tmp"))


@pytest.mark.parametrize("text", [TINY_SS, TINY_OFFLINE], ids=["SingleStream", "Offline"])
def test_io_binding_path_runs_valid_and_is_recorded(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write_scenario(tmp_path / "s.yaml", text + "runtime: {io_binding: true}\n")
    code, out, _ = run_cli(["run", str(scenario), "--out", str(tmp_path)], capsys)
    result = load(Path(out.strip().splitlines()[-1]))
    assert code == 0 and result["valid"] is True
    assert result["runtime"]["data_path"] == "device"
    assert result["runtime"]["requested_providers"] == ["CPUExecutionProvider"]


@pytest.mark.parametrize("text", [TINY_SS, TINY_OFFLINE], ids=["SingleStream", "Offline"])
def test_a_run_sized_too_small_by_warm_up_is_rerun_once(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.execution.runner as runner

    real = runner.warm_up

    def pessimistic(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        if "Offline" in text:  # the warm-up believed the model 50x slower than it is
            return dataclasses.replace(found, min_latency_ns=found.min_latency_ns * 50)
        # and for SingleStream, a 1 s query: far too few queries pre-generated
        return dataclasses.replace(found, min_latency_ns=10**9)

    monkeypatch.setattr(runner, "warm_up", pessimistic)
    in_process_workers(monkeypatch)
    scenario = write_scenario(tmp_path / "s.yaml", text)
    code, out, _ = run_cli(["run", str(scenario), "--out", str(tmp_path)], capsys)
    run_dir = Path(out.strip().splitlines()[-1])
    result = load(run_dir)
    assert code == 0 and result["valid"] is True
    assert any("first attempt ended before its minimum duration" in w for w in result["warnings"])
    first = (run_dir / "attempt-1" / "mlperf_log_summary.txt").read_text()
    assert "Result is : INVALID" in first
    assert "Result is : VALID" in (run_dir / "mlperf_log_summary.txt").read_text()


def test_fp32_reference_outputs_are_computed_once_and_cached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BEYOND_TOPS_CACHE", str(tmp_path / "cache"))
    scenario = write_scenario(tmp_path / "s.yaml", TINY_SS)
    blocks = []
    for _ in range(2):
        code, out, _ = run_cli(["run", str(scenario), "--out", str(tmp_path / "runs")], capsys)
        assert code == 0
        blocks.append(load(Path(out.strip().splitlines()[-1]))["accuracy"])
    (cached,) = (tmp_path / "cache" / "references").glob("*.npz")
    assert cached.stat().st_size > 0
    assert blocks[0] == blocks[1]
    assert blocks[0]["passed"] is True and blocks[0]["against_fp32"]["top1_agreement"] == 1.0
    assert blocks[0]["samples"] == 64  # quick.accuracy_sample_count (64 samples in the data)
