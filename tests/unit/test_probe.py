"""The GEMM probe: real onnxruntime sessions on this CPU, its arithmetic and its cache."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from harness.config import RuntimeConfig
from harness.models.registry import zoo_model_path
from harness.runtime import probe
from harness.runtime.probe import (
    ProbeShape,
    ProbeUnavailableError,
    attainable_rate,
    probe_model,
)
from harness.runtime.session import Session, SessionRequest, create_session
from harness.runtime.targets import get_target

SMALL = ProbeShape(n=96, depth=2)


@pytest.fixture
def session(tmp_path: Path) -> Session:
    return create_session(
        SessionRequest(
            model_path=zoo_model_path("tiny"),
            runtime=RuntimeConfig(intra_op_threads=1),
            target=get_target("cpu"),
            dims={"batch": 1},
            cache_dir=tmp_path / "engines",
        )
    )


@pytest.fixture(autouse=True)
def _small_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe, "CPU_SHAPE", SMALL)


def _run(model: bytes, feed: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(["out"], {"x": feed})[0])


def test_the_fp32_probe_computes_the_chain_of_matmuls_it_counts() -> None:
    model = probe_model("fp32", SMALL)
    graph = onnx.load_from_string(model).graph
    assert [n.op_type for n in graph.node] == ["MatMul", "MatMul", "ReduceMean"]
    weight = onnx.numpy_helper.to_array(graph.initializer[0])
    x = np.random.default_rng(3).standard_normal((96, 96)).astype(np.float32)
    expected = (x @ weight @ weight).mean()
    assert _run(model, x) == pytest.approx(expected, rel=1e-4, abs=1e-6)
    assert SMALL.flops == 2 * 96**3 * 2


def test_the_fp16_chain_neither_overflows_nor_vanishes() -> None:
    shape = ProbeShape(n=1024, depth=2)
    x = np.random.default_rng(4).standard_normal((1024, 1024)).astype(np.float16)
    out = _run(probe_model("fp16", shape), x)
    assert out.dtype == np.float16 and math.isfinite(float(out))
    weight = onnx.numpy_helper.to_array(
        onnx.load_from_string(probe_model("fp16", shape)).graph.initializer[0]
    )
    assert 0.5 < float(np.std(x.astype(np.float32) @ weight.astype(np.float32))) < 2.0


def test_the_int8_probe_is_one_matmulinteger_of_uint8_by_int8() -> None:
    one = ProbeShape(n=64, depth=1)
    graph = onnx.load_from_string(probe_model("int8", one)).graph
    assert [n.op_type for n in graph.node] == ["MatMulInteger", "ReduceMax"]
    # Inputs below 128: AVX2 without VNNI sums u8 x s8 pairs in saturating int16 (VPMADDUBSW),
    # so full-range inputs can differ from exact integer arithmetic; the rate is the same.
    x = np.random.default_rng(5).integers(0, 128, size=(64, 64), dtype=np.uint8)
    weight = onnx.numpy_helper.to_array(graph.initializer[0]).astype(np.int64)
    assert int(_run(probe_model("int8", one), x)) == int((x.astype(np.int64) @ weight).max())
    with pytest.raises(ValueError, match="depth must be 1"):
        probe_model("int8", SMALL)


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_precisions_without_a_probe_say_so(precision: str, session: Session) -> None:
    with pytest.raises(ProbeUnavailableError, match=f"no GEMM probe for {precision}"):
        attainable_rate(session, precision, fingerprint_id="f", cache=Path("/nonexistent"))


def test_a_probe_measures_once_then_reads_its_cache(session: Session, tmp_path: Path) -> None:
    first = attainable_rate(session, "fp32", fingerprint_id="f1", budget_s=0.05, cache=tmp_path)
    assert not first.cached and first.runs >= 5
    assert 0 < first.median_tflops <= first.tflops
    assert (first.n, first.depth, first.intra_op_threads) == (96, 2, 1)
    assert first.providers == ("CPUExecutionProvider",)
    assert "2 x MatMul 96x96 fp32 on CPUExecutionProvider" in first.method
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["tflops"] == first.tflops
    again = attainable_rate(session, "fp32", fingerprint_id="f1", cache=tmp_path)
    assert again.cached and again.tflops == first.tflops and "(cached)" in again.method


def test_the_cache_key_covers_machine_precision_and_threads(
    session: Session, tmp_path: Path
) -> None:
    for precision, fingerprint in (("fp32", "a"), ("fp32", "b"), ("int8", "a")):
        attainable_rate(
            session, precision, fingerprint_id=fingerprint, budget_s=0.01, cache=tmp_path
        )
    assert len(list(tmp_path.glob("*.json"))) == 3


def test_a_cached_rate_below_what_a_run_achieved_is_measured_again_and_the_best_kept(
    session: Session, tmp_path: Path
) -> None:
    first = attainable_rate(session, "fp32", fingerprint_id="f", budget_s=0.02, cache=tmp_path)
    (path,) = tmp_path.glob("*.json")
    stale = {**json.loads(path.read_text()), "tflops": first.tflops / 1000}
    path.write_text(json.dumps(stale))  # as if measured on a busy machine
    fresh = attainable_rate(
        session, "fp32", fingerprint_id="f", at_least_tflops=first.tflops / 100, cache=tmp_path
    )
    assert not fresh.cached and fresh.tflops > first.tflops / 100
    assert json.loads(path.read_text())["tflops"] == fresh.tflops


@pytest.mark.parametrize("text", ["not json", '{"tflops": "fast"}', '{"tflops": NaN}', "[]"])
def test_an_unreadable_cache_is_measured_again(session: Session, tmp_path: Path, text: str) -> None:
    attainable_rate(session, "fp32", fingerprint_id="f", budget_s=0.01, cache=tmp_path)
    (path,) = tmp_path.glob("*.json")
    path.write_text(text)
    rate = attainable_rate(session, "fp32", fingerprint_id="f", budget_s=0.01, cache=tmp_path)
    assert not rate.cached and rate.tflops > 0
    assert json.loads(path.read_text())["tflops"] == rate.tflops


def test_an_unwritable_cache_still_gives_the_rate(session: Session, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    rate = attainable_rate(session, "fp32", fingerprint_id="f", budget_s=0.01, cache=blocker)
    assert rate.tflops > 0 and not rate.cached
