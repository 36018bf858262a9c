"""The attainable dense rate: a short GEMM probe through onnxruntime, cached per machine.

A datasheet or ISA-derived peak rests on assumptions a VM can hide (the turbo clock, the
vector pipes' real width). The probe measures what this machine, through this onnxruntime
build, this provider chain and this run's thread settings, actually reaches on the operation
dense inference spends its time in: a matrix multiply at the run's precision. It is an
upper reference for the run, not a hardware peak: utilization against it says how far the
model is from the best GEMM this runtime gets here.

The probe graph is a chain of ``depth`` square MatMuls of one ``n x n`` weight (scaled so that
values neither vanish nor overflow), ending in a scalar mean so the copy back is one number;
the input lives on the device when the provider can bind it there. Its rate is the fastest of
many timed runs (the attainable rate is a best case by definition); the median is kept too.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import math
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from harness.files import atomic_write_text
from harness.paths import cache_root
from harness.runtime.session import Session, create_helper_session

PROBE_VERSION: Final = 1
OPSET: Final = 17
# precision -> (onnx element type, numpy dtype of the chain); int8 is one MatMulInteger.
_FLOAT_TYPES: Final = {
    "fp32": (TensorProto.FLOAT, np.float32),
    "tf32": (TensorProto.FLOAT, np.float32),
    "fp16": (TensorProto.FLOAT16, np.float16),
}


@dataclass(frozen=True, kw_only=True)
class ProbeShape:
    """The GEMM's size: ``depth`` MatMuls of ``n x n`` by ``n x n``."""

    n: int
    depth: int

    @property
    def flops(self) -> float:
        """Multiply-adds counted as two FLOPs (integer ops for int8), per run."""
        return 2.0 * self.n**3 * self.depth


CPU_SHAPE: Final = ProbeShape(n=1024, depth=2)
GPU_SHAPE: Final = ProbeShape(n=8192, depth=4)


@dataclass(frozen=True, kw_only=True)
class AttainableRate:
    """What the probe measured; ``tflops`` is the fastest run's rate (TOPS for int8)."""

    precision: str
    tflops: float
    median_tflops: float
    runs: int
    n: int
    depth: int
    providers: tuple[str, ...]
    intra_op_threads: int
    fingerprint_id: str
    measured_utc: str
    cached: bool

    @property
    def method(self) -> str:
        """One line a reader can check: what was multiplied, where, and how it was timed."""
        return (
            f"onnxruntime GEMM probe: {self.depth} x MatMul {self.n}x{self.n} {self.precision} on "
            f"{' then '.join(self.providers)}, intra-op threads {self.intra_op_threads}, fastest "
            f"of {self.runs} runs (median {self.median_tflops:.3g} TFLOP/s), measured "
            f"{self.measured_utc}{' (cached)' if self.cached else ''}"
        )


class ProbeUnavailableError(Exception):
    """The probe cannot run at this precision on this provider chain (the reason is the text)."""


def attainable_rate(
    session: Session,
    precision: str,
    *,
    fingerprint_id: str,
    at_least_tflops: float | None = None,
    budget_s: float = 2.0,
    cache: Path | None = None,
) -> AttainableRate:
    """The cached rate for this machine and configuration, or a fresh probe of ``budget_s``.

    The cache key covers the fingerprint id (CPU, GPUs, driver, onnxruntime and its
    providers, container image), the provider chain, the thread settings, the precision and
    the probe's shape and version: any change measures again. A cached rate below
    ``at_least_tflops`` (what a run just achieved) was measured on a busy machine: the probe
    runs again and the cache keeps the faster of the two.

    Raises:
        ProbeUnavailableError: when onnxruntime has no kernel for the probe at ``precision`` here.
    """
    shape = GPU_SHAPE if session.target.is_gpu else CPU_SHAPE
    if precision == "int8":
        shape = ProbeShape(n=shape.n, depth=1)
    threads = int(session.settings.get("intra_op_threads") or 0)
    key = _cache_key(session, precision, shape, fingerprint_id, threads)
    path = (cache if cache is not None else cache_root() / "peaks") / f"{key}.json"
    cached = _read_cache(path)
    if cached is not None and (at_least_tflops is None or cached.tflops >= at_least_tflops):
        return cached
    seconds = _time_runs(session, precision, shape, budget_s)
    best, median = min(seconds), statistics.median(seconds)
    rate = AttainableRate(
        precision=precision,
        tflops=shape.flops / best / 1e12,
        median_tflops=shape.flops / median / 1e12,
        runs=len(seconds),
        n=shape.n,
        depth=shape.depth,
        providers=_probe_providers(session),
        intra_op_threads=threads,
        fingerprint_id=fingerprint_id,
        measured_utc=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        cached=False,
    )
    if cached is not None and cached.tflops > rate.tflops:
        return cached
    # An unwritable cache costs the next run a probe, not this run its rate.
    with contextlib.suppress(OSError):
        atomic_write_text(path, json.dumps(asdict(rate), indent=2, allow_nan=False) + "\n")
    return rate


def probe_model(precision: str, shape: ProbeShape) -> bytes:
    """The probe graph at ``precision``, serialized.

    Raises:
        ProbeUnavailableError: for a precision the probe has no graph for (bf16, fp8).
    """
    rng = np.random.default_rng(0)
    if precision == "int8":
        if shape.depth != 1:
            raise ValueError("the int8 probe is one MatMulInteger: depth must be 1")
        weight = rng.integers(-128, 128, size=(shape.n, shape.n), dtype=np.int8)
        nodes = [
            helper.make_node("MatMulInteger", ["x", "w"], ["y"]),
            helper.make_node("ReduceMax", ["y"], ["out"], keepdims=0),
        ]
        x_type, out_type = TensorProto.UINT8, TensorProto.INT32
    elif precision in _FLOAT_TYPES:
        x_type, dtype = _FLOAT_TYPES[precision]
        # N(0, 1/n) entries keep each product's values near N(0, 1): no overflow in fp16.
        weight = (rng.standard_normal((shape.n, shape.n)) / math.sqrt(shape.n)).astype(dtype)
        names = ["x", *(f"y{i}" for i in range(1, shape.depth + 1))]
        nodes = [
            helper.make_node("MatMul", [names[i], "w"], [names[i + 1]]) for i in range(shape.depth)
        ]
        nodes.append(helper.make_node("ReduceMean", [names[-1]], ["out"], keepdims=0))
        out_type = x_type
    else:
        raise ProbeUnavailableError(f"no GEMM probe for {precision}")
    graph = helper.make_graph(
        nodes,
        f"gemm-probe-{precision}-{shape.n}x{shape.depth}",
        [helper.make_tensor_value_info("x", x_type, [shape.n, shape.n])],
        [helper.make_tensor_value_info("out", out_type, [])],
        initializer=[numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


def _time_runs(session: Session, precision: str, shape: ProbeShape, budget_s: float) -> list[float]:
    model = probe_model(precision, shape)
    try:
        ort_session = create_helper_session(session, model)
    except Exception as exc:  # any refusal means "no probe here", said as such
        chain = " then ".join(_probe_providers(session))
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ProbeUnavailableError(
            f"onnxruntime cannot run a {precision} MatMul on {chain}: {first}"
        ) from None
    run = _runner(ort_session, precision, shape, session.target.is_gpu)
    for _ in range(2):  # the first runs pick kernels and fault pages in: never timed
        run()
    seconds: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(seconds) < 5 or (time.perf_counter() < deadline and len(seconds) < 1000):
        start = time.perf_counter_ns()
        run()
        seconds.append((time.perf_counter_ns() - start) / 1e9)
    return seconds


def _runner(ort_session: Any, precision: str, shape: ProbeShape, on_gpu: bool) -> Any:
    """A no-argument callable that runs the probe once, with the input on the device if it can."""
    rng = np.random.default_rng(1)
    if precision == "int8":
        x = rng.integers(0, 256, size=(shape.n, shape.n), dtype=np.uint8)
    else:
        x = rng.standard_normal((shape.n, shape.n)).astype(_FLOAT_TYPES[precision][1])
    if on_gpu:
        try:
            # A host input would time the copy of n*n elements, not the GEMM.
            binding = ort_session.io_binding()
            binding.bind_ortvalue_input("x", ort.OrtValue.ortvalue_from_numpy(x, "cuda", 0))
            binding.bind_output("out")

            def bound() -> None:
                ort_session.run_with_iobinding(binding)

            return bound
        except Exception:  # no device binding: feed from the host instead
            pass

    def host() -> None:
        ort_session.run(["out"], {"x": x})

    return host


def _probe_providers(session: Session) -> tuple[str, ...]:
    names = [name for name, _ in session.chain]
    if "TensorrtExecutionProvider" in names and "CUDAExecutionProvider" in names:
        names.remove("TensorrtExecutionProvider")  # create_helper_session leaves it out too
    return tuple(names)


def _cache_key(
    session: Session, precision: str, shape: ProbeShape, fingerprint_id: str, threads: int
) -> str:
    fields = {
        "probe_version": PROBE_VERSION,
        "fingerprint_id": fingerprint_id,
        "providers": _probe_providers(session),
        "intra_op_threads": threads,
        "inter_op_threads": session.settings.get("inter_op_threads"),
        "allow_spinning": session.settings.get("allow_spinning"),
        "precision": precision,
        "n": shape.n,
        "depth": shape.depth,
    }
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:24]


def _read_cache(path: Path) -> AttainableRate | None:
    """The cached rate, or None when absent or unreadable (a bad cache is measured again)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["providers"] = tuple(data["providers"])
        data["cached"] = True
        rate = AttainableRate(**data)
        finite = all(math.isfinite(v) and v > 0 for v in (rate.tflops, rate.median_tflops))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return rate if finite else None
