"""Where onnxruntime really runs a small model's nodes, per execution provider, from a profile.

Used by scripts/gpu-check.sh (inside the nvidia image: `python - PROVIDER... < this file`) and
scripts/gpu-local-check.sh. `session.get_providers()` proves registration, not placement: it
always lists CPUExecutionProvider and lists a provider even if no node runs there. So each
provider gets its own session with CPU fallback disabled and profiling on, runs once, and must
own every node event of the profile. For TensorRT, the engine and timing caches are given
directories that exist (as the harness does) and must be written. Exit status 1 on any failure.

    python scripts/gpu_placement.py TensorrtExecutionProvider CUDAExecutionProvider
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

TRT = "TensorrtExecutionProvider"
CPU = "CPUExecutionProvider"


def test_model() -> bytes:
    """MatMul, Add and Relu on a 4x4 float input: cuBLAS, elementwise and activation kernels."""
    f32 = TensorProto.FLOAT
    weight = np.eye(4, dtype=np.float32).ravel().tolist()
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["xw"]),
            helper.make_node("Add", ["xw", "x"], ["s"]),
            helper.make_node("Relu", ["s"], ["y"]),
        ],
        "gpu-placement",
        [helper.make_tensor_value_info("x", f32, [4, 4])],
        [helper.make_tensor_value_info("y", f32, [4, 4])],
        [helper.make_tensor("w", f32, [4, 4], weight)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return bytes(model.SerializeToString())


def placement(events: list[dict[str, Any]]) -> Counter[str]:
    """Nodes per provider: each node's kernel event carries args.provider (fences do not)."""
    nodes: dict[str, str] = {}
    for event in events:
        args = event.get("args") or {}
        if event.get("cat") == "Node" and "provider" in args:
            nodes[str(args.get("node_index", event.get("name")))] = str(args["provider"])
    return Counter(nodes.values())


def check(name: str, options: dict[str, str], tmp: Path) -> bool:
    """Run the model on `name` alone; True when every node ran there and the output is right."""
    if name not in ort.get_available_providers():
        print(f"FAIL {name}: not in this onnxruntime build (is onnxruntime-gpu installed?)")
        return False
    so = ort.SessionOptions()
    if name != CPU:  # onnxruntime refuses this entry when the CPU provider is the one asked for
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp / name)
    x = np.arange(-8, 8, dtype=np.float32).reshape(4, 4)
    try:
        # enable_fallback=0: the Python layer would otherwise retry on the CPU, with a print.
        session = ort.InferenceSession(
            test_model(), so, providers=[(name, options)], enable_fallback=0
        )
        out = session.run(None, {"x": x})[0]
        nodes = placement(json.loads(Path(session.end_profiling()).read_text()))
    except Exception as exc:  # onnxruntime's errors are untyped: report the first line
        print(f"FAIL {name}: {(str(exc).strip() or type(exc).__name__).splitlines()[0]}")
        return False
    ok = bool(nodes) and set(nodes) == {name} and np.array_equal(out, np.maximum(2 * x, 0))
    counts = ", ".join(f"{p}: {n}" for p, n in sorted(nodes.items())) or "no node events"
    listed = ", ".join(session.get_providers())
    print(f"{'ok  ' if ok else 'FAIL'} {name}: nodes {counts} (the session lists {listed})")
    return ok


def check_tensorrt(tmp: Path) -> bool:
    """TensorRT with its engine and timing caches on, in directories made beforehand."""
    engines, timing = tmp / "tensorrt" / "engines", tmp / "tensorrt" / "timing"
    engines.mkdir(parents=True)
    timing.mkdir(parents=True)
    options = {
        "trt_engine_cache_enable": "True",
        "trt_engine_cache_path": str(engines),
        "trt_timing_cache_enable": "True",
        "trt_timing_cache_path": str(timing),
    }
    ok = check(TRT, options, tmp)
    written = {d.name: sorted(p.name for p in d.iterdir()) for d in (engines, timing)}
    print(f"     TensorRT caches written: {written}")
    if ok and not all(written.values()):
        print("FAIL TensorRT wrote no engine or no timing cache into the directories it was given")
        return False
    return ok


def main(providers: list[str]) -> int:
    """Check each provider in turn; 0 when all place every node, else 1."""
    print(f"onnxruntime {ort.__version__}; available: {', '.join(ort.get_available_providers())}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in providers:
            work = Path(tmp) / name
            work.mkdir()
            results.append(check_tensorrt(work) if name == TRT else check(name, {}, work))
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
