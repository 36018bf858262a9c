"""How thin is the harness? LoadGen runs vs plain onnxruntime loops, interleaved in one process.

(a) SingleStream p50 latency, harness / plain `session.run` loop, tiny model: target <= 1.05.
(b) Offline samples/s, harness / plain batched loop, ResNet-50: target >= 0.98.

Usage: python benchmarks/overhead.py [--rounds 3] [--ss-seconds 5] [--offline-seconds 20]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from harness.config import (
    DataConfig,
    ModelConfig,
    QuickConfig,
    RuntimeConfig,
    Scenario,
    ScenarioName,
    WarmupConfig,
)
from harness.models.registry import cache_root, zoo_model_path
from harness.models.validate import inspect_model, resolve_dims
from harness.runner import RunRequest, run
from harness.runtime.session import SessionRequest, create_session
from harness.runtime.targets import get_target


def scenario(
    kind: ScenarioName, zoo: str, batch: int, seconds: float, runtime: RuntimeConfig
) -> Scenario:
    dims = {"height": 224, "width": 224} if zoo == "resnet50" else {}
    return Scenario(
        name=f"overhead-{zoo}-{kind}",
        scenario=kind,
        batch_size=batch,
        model=ModelConfig(zoo=zoo, dims=dims),
        runtime=runtime,
        data=DataConfig(total_sample_count=256),
        warmup=WarmupConfig(min_queries=5, min_duration_ms=500),
        quick=QuickConfig(
            min_duration_ms=int(seconds * 1000), min_query_count=1, performance_sample_count=64
        ),
    )


def plain_loop(sc: Scenario, seconds: float) -> tuple[float, float]:
    """Median latency (ns) and samples/s of session.run on preallocated inputs."""
    path = zoo_model_path(str(sc.model.zoo))
    dims = resolve_dims(inspect_model(path), batch_size=sc.batch_size, dims=sc.model.dims)
    session = create_session(
        SessionRequest(
            model_path=path,
            runtime=sc.runtime,
            target=get_target("cpu"),
            dims=dims,
            cache_dir=cache_root() / "engines",
        )
    )
    rng = np.random.default_rng(0)
    feeds = {s.name: rng.standard_normal(s.shape, dtype=np.float32) for s in session.inputs}
    for _ in range(5):
        session.run(feeds)
    latencies = []
    start = time.perf_counter_ns()
    while time.perf_counter_ns() - start < seconds * 1e9:
        t0 = time.perf_counter_ns()
        session.run(feeds)
        latencies.append(time.perf_counter_ns() - t0)
    elapsed_s = (time.perf_counter_ns() - start) / 1e9
    return statistics.median(latencies), len(latencies) * sc.batch_size / elapsed_s


def harness_run(sc: Scenario, out: Path) -> tuple[float, float]:
    _, result = run(RunRequest(scenario=sc, profile="quick", out_root=out))
    if not result.valid:
        raise SystemExit(f"harness run INVALID: {result.invalid_reasons}")
    return float(result.latency_ns["p50"] or 0), float(result.samples_per_second or 0)


def measure(
    kind: ScenarioName,
    zoo: str,
    batch: int,
    seconds: float,
    rounds: int,
    runtime: RuntimeConfig,
    out: Path,
) -> tuple[list[float], list[float]]:
    sc = scenario(kind, zoo, batch, seconds, runtime)
    index = 0 if kind == "SingleStream" else 1
    ours: list[float] = []
    plain: list[float] = []
    for r in range(rounds):
        # Alternate which side goes first so drift does not favour one side.
        for side in ("harness", "plain") if r % 2 == 0 else ("plain", "harness"):
            if side == "harness":
                ours.append(harness_run(sc, out)[index])
            else:
                plain.append(plain_loop(sc, seconds)[index])
    return ours, plain


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ss-seconds", type=float, default=5.0)
    parser.add_argument("--offline-seconds", type=float, default=20.0)
    parser.add_argument("--offline-batch", type=int, default=8)
    parser.add_argument("--intra-op-threads", type=int, default=RuntimeConfig().intra_op_threads)
    parser.add_argument("--no-spinning", action="store_true")
    parser.add_argument("--only", choices=("ss", "offline"))
    args = parser.parse_args()
    runtime = dataclasses.replace(
        RuntimeConfig(), intra_op_threads=args.intra_op_threads, allow_spinning=not args.no_spinning
    )
    print(f"runtime: {runtime}")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        if args.only in (None, "ss"):
            ours, plain = measure(
                "SingleStream", "tiny", 1, args.ss_seconds, args.rounds, runtime, out
            )
            ratio = statistics.median(ours) / statistics.median(plain)
            print(
                f"(a) SingleStream p50, tiny: harness {[round(v / 1e3, 1) for v in ours]} us, "
                f"plain {[round(v / 1e3, 1) for v in plain]} us "
                f"-> ratio {ratio:.3f} (target <= 1.05)"
            )
            failed |= ratio > 1.05
        if args.only in (None, "offline"):
            ours, plain = measure(
                "Offline",
                "resnet50",
                args.offline_batch,
                args.offline_seconds,
                args.rounds,
                runtime,
                out,
            )
            ratio = statistics.median(ours) / statistics.median(plain)
            print(
                f"(b) Offline samples/s, resnet50 batch {args.offline_batch}: harness "
                f"{[round(v, 2) for v in ours]}, plain {[round(v, 2) for v in plain]} "
                f"-> ratio {ratio:.3f} (target >= 0.98)"
            )
            failed |= ratio < 0.98
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
