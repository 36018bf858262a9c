"""What the Server SUT is worth: its peak rate under a p99 bound against Offline, interleaved.

Each round measures, in worker processes exactly as `harness run` does:
(a) Offline samples/s of the model (quick profile, batch --offline-batch);
(b) the Server peak: no target_qps, so LoadGen's FindPeakPerformance finds the highest rate whose
    p99 stays within --bound-ms, then a confirming performance run at that rate (stepping down
    to 85 % at a time, at most four runs in all, while the confirmation is INVALID).
It prints each round's figures, the medians and the ratio Server peak / Offline (target >= 0.7
for ResNet-50 FP32 at a 200 ms bound), with the batch sizes the batcher used at the peak.
MLPerf's reference harness (one session.run per query, no batching) reaches ~0.45 here.

Beside them, the queueing ceiling (harness.analysis.queueing): the highest Poisson rate at
which a server running one query at a time, at the measured batch-1 cost, keeps its p99
within the bound. Server / ceiling is what the SUT makes of what queueing allows; ceiling /
Offline is what the hardware allows without a batching gain.

Usage: python benchmarks/server.py [--model resnet50] [--bound-ms 200] [--rounds 3]
       python benchmarks/server.py --model tiny --bound-ms 5   # the same behaviour in seconds
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
from pathlib import Path

from harness.analysis.queueing import ceiling_qps
from harness.config import (
    DataConfig,
    ModelConfig,
    QuickConfig,
    Scenario,
    ServerConfig,
    WarmupConfig,
)
from harness.errors import HarnessError
from harness.execution.pipeline import new_run_dir, run_one
from harness.records.request import RunRequest
from harness.records.result import RunResult
from harness.results.runfile import load_result

TARGET_RATIO = 0.7


@dataclasses.dataclass(frozen=True)
class Round:
    offline_sps: float
    server_qps: float | None  # None: no valid confirmation
    result: RunResult | None  # None: the Server run failed (failure says why)
    failure: str | None = None
    ceiling_qps: float | None = None  # one-at-a-time M/D/1 at the batch-1 cost (None: no cost)


def scenario(model: str, kind: str, *, batch: int, bound_ms: float, seconds: int) -> Scenario:
    dims = {"height": 224, "width": 224} if model == "resnet50" else {}
    return Scenario(
        name=f"{model}-{kind.lower()}-bench",
        scenario=kind,  # type: ignore[arg-type]
        model=ModelConfig(zoo=model, loadgen_name=model, dims=dims),
        batch_size=batch,
        data=DataConfig(total_sample_count=256),
        warmup=WarmupConfig(min_queries=5, min_duration_ms=1000),
        quick=QuickConfig(
            min_duration_ms=seconds * 1000,
            # Server: the search's runs (the confirming run gets the ~460 queries early
            # stopping needs from the pipeline); Offline: one query of at least this many.
            min_query_count=100 if kind == "Server" else 64,
            performance_sample_count=64,
        ),
        server=ServerConfig(latency_bound_ms=bound_ms),
    )


def run(sc: Scenario, out: Path) -> RunResult:
    request = RunRequest(scenario=sc, scenario_path=None, profile="quick", hw="cpu")
    return load_result(run_one(request, new_run_dir(request, out), progress=sys.stderr))


def one_round(args: argparse.Namespace, out: Path) -> Round:
    def measure(kind: str, batch: int, seconds: int) -> RunResult:
        return run(
            scenario(args.model, kind, batch=batch, bound_ms=args.bound_ms, seconds=seconds), out
        )

    offline = measure("Offline", args.offline_batch, args.offline_seconds)
    assert offline.samples_per_second is not None
    try:
        server = measure("Server", args.server_batch, args.server_seconds)
    except HarnessError as exc:  # e.g. no rate met the bound, not even the search's first
        return Round(offline.samples_per_second, None, None, failure=str(exc))
    record = server.server
    assert record is not None
    cost_ms = record.batch_costs_ms.get("1")
    return Round(
        offline_sps=offline.samples_per_second,
        server_qps=record.target_qps if server.valid else None,
        result=server,
        ceiling_qps=None if cost_ms is None else ceiling_qps(cost_ms, args.bound_ms),
    )


def describe(r: Round) -> str:
    if r.result is None:
        return f"offline {r.offline_sps:.2f} samples/s | server FAILED: {r.failure}"
    server = r.result.server
    assert server is not None
    sizes = ", ".join(f"{k}: {v}" for k, v in server.batch_sizes.items())
    qps = "INVALID" if r.server_qps is None else f"{r.server_qps:.2f} QPS"
    ratio = "n/a" if r.server_qps is None else f"{r.server_qps / r.offline_sps:.3f}"
    p99 = r.result.latency_ns.p99
    delays = server.queue_delay_ns
    queued = "" if delays is None else f", queue delay p99 {delays.p99 / 1e6:.1f} ms"
    ceiling = "n/a" if r.ceiling_qps is None else f"{r.ceiling_qps:.2f} QPS"
    return (
        f"offline {r.offline_sps:.2f} samples/s | server peak {qps}, p99 "
        f"{'n/a' if p99 is None else f'{p99 / 1e6:.1f} ms'} (bound "
        f"{(server.latency_bound_ns or 0) / 1e6:g} ms), batches {sizes}, hold "
        f"{server.max_wait_ms:g} ms{queued} | one-at-a-time ceiling {ceiling} | ratio {ratio}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--bound-ms", type=float, default=200.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--offline-batch", type=int, default=8)
    parser.add_argument("--server-batch", type=int, default=8)
    parser.add_argument("--offline-seconds", type=int, default=20)
    parser.add_argument("--server-seconds", type=int, default=20)
    args = parser.parse_args()
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory(prefix="server-bench-") as tmp:
        for number in range(1, args.rounds + 1):
            rounds.append(one_round(args, Path(tmp)))
            print(f"round {number}: {describe(rounds[-1])}", flush=True)
    offline = statistics.median(r.offline_sps for r in rounds)
    peaks = [r.server_qps for r in rounds if r.server_qps is not None]
    ratios = [r.server_qps / r.offline_sps for r in rounds if r.server_qps is not None]
    print(f"{args.model}, p99 bound {args.bound_ms:g} ms, {args.rounds} interleaved rounds:")
    print(f"  Offline median {offline:.2f} samples/s")
    if not peaks:
        print("  Server: no confirmed valid peak in any round")
        return 1
    ratio = statistics.median(ratios)
    print(
        f"  Server peak median {statistics.median(peaks):.2f} QPS "
        f"({len(peaks)}/{args.rounds} rounds confirmed VALID)"
    )
    ceilings = [r.ceiling_qps for r in rounds if r.ceiling_qps]
    if ceilings:
        ceiling = statistics.median(ceilings)
        print(
            f"  queueing ceiling (one query at a time, batch-1 cost, p99 <= {args.bound_ms:g} "
            f"ms): median {ceiling:.2f} QPS = {ceiling / offline:.3f}x Offline; the Server "
            f"peak is {statistics.median(peaks) / ceiling:.2f}x that ceiling"
        )
    verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
    print(
        f"  ratio Server / Offline: median {ratio:.3f} (rounds: "
        f"{', '.join(f'{x:.3f}' for x in ratios)}); {verdict} the {TARGET_RATIO} target"
    )
    return 0 if ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
