"""The harness's telemetry over a known GPU load, to check it against the hardware's own counters.

Run on a real NVIDIA (or AMD) host with the harness's venv and PyTorch: it samples the
target's sources (NVML or amdsmi, plus RAPL) with the harness's own recorder while a
PyTorch GEMM keeps the GPU busy, then writes into OUT_DIR, for committing as fixtures:

  telemetry.csv     the time series, as a run writes it
  summary.json      the result's telemetry block (energy, power, clocks, temperature, throttling)
  check.json        per source: the energy counter's delta against the integrated power
                    samples (they should agree within a few %), clock and temperature ranges,
                    the throttle reasons seen, and the load's achieved TFLOP/s

  python scripts/gpu_load_telemetry.py OUT_DIR [--hw nvidia] [--seconds 60] [--load gemm|idle]
      [--external-command PROGRAM [ARG ...]]

--external-command is the user's own command line, so it needs no other opt-in; it runs
without a shell (put everything after it: `--external-command ipmitool dcmi power reading`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from harness.config import TelemetryConfig
from harness.records.codec import to_object
from harness.telemetry import summarize, write_telemetry_csv
from harness.telemetry.base import Telemetry
from harness.telemetry.discover import close_sources, discover_sources
from harness.telemetry.energy import window_energy_j
from harness.telemetry.recorder import TelemetryRecorder


def gemm_load(seconds: float, size: int = 8192) -> dict[str, Any]:
    """FP16 GEMMs on cuda:0 until `seconds` pass; returns what was done (needs PyTorch)."""
    import torch

    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(10):
            a @ b
        torch.cuda.synchronize()
        count += 10
    elapsed = time.perf_counter() - start
    return {
        "load": f"fp16 GEMM {size}x{size} on {torch.cuda.get_device_name(0)}",
        "iterations": count,
        "seconds": round(elapsed, 3),
        "achieved_tflops": round(2 * size**3 * count / elapsed / 1e12, 2),
    }


def idle_load(seconds: float) -> dict[str, Any]:
    """No load: the baseline (and what this script does on a machine without a GPU)."""
    time.sleep(seconds)
    return {"load": "idle", "iterations": 0, "seconds": seconds, "achieved_tflops": None}


def check(record: Telemetry) -> dict[str, Any]:
    """Per source: counter energy against integrated power, and the ranges seen."""
    out: dict[str, Any] = {}
    for counters in record.counters:
        rows = record.samples_of(counters.name)
        points = [(s.t_ns, s.power_w) for s in rows if s.power_w is not None]
        integrated = window_energy_j(points, record.window_start_ns, record.window_end_ns)
        start, end = counters.energy_start_mj, counters.energy_end_mj
        counter_j = None if start is None or end is None else (end - start) / 1000
        out[counters.name] = {
            "counter_energy_j": counter_j,
            "integrated_energy_j": integrated,
            "counter_over_integrated": (
                round(counter_j / integrated, 4) if counter_j and integrated else None
            ),
            "power_samples": len(points),
            "sm_clock_mhz": _range([s.sm_clock_mhz for s in rows]),
            "temp_c": _range([s.temp_c for s in rows]),
            "throttle_seen": sorted({r for s in rows for r in (s.throttle or ())}),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    """Sample telemetry over the load and write the three files; exit 1 if no source worked."""
    args = _parser().parse_args(argv)
    out: Path = args.out_dir
    if out.exists() and any(out.iterdir()):
        sys.exit(f"{out}: not empty; give a new directory so fixtures from two runs never mix")
    out.mkdir(parents=True, exist_ok=True)
    config = TelemetryConfig(interval_ms=args.interval_ms)
    meter = args.external_command or None  # the user's own command line: opted in
    sources, unavailable = discover_sources(hw=args.hw, external_command=meter)
    recorder = TelemetryRecorder(
        sources, interval_s=config.interval_ms / 1000, unavailable=unavailable
    )
    recorder.start()
    try:
        load = gemm_load(args.seconds) if args.load == "gemm" else idle_load(args.seconds)
    finally:
        record = recorder.stop()
        close_sources(sources)
    write_telemetry_csv(record, out / "telemetry.csv")
    summary = summarize(record, samples_processed=max(load["iterations"], 1), scenario="Offline")
    (out / "summary.json").write_text(json.dumps(to_object(summary), indent=2) + "\n")
    (out / "check.json").write_text(json.dumps({**load, "sources": check(record)}, indent=2) + "\n")
    print(json.dumps({**load, "sources": check(record)}, indent=2))
    return 0 if record.counters else 1


def _range(values: list[float | None]) -> list[float] | None:
    seen = [v for v in values if v is not None]
    return [min(seen), max(seen)] if seen else None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--hw", default="nvidia", help="hardware target whose sources to sample")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--interval-ms", type=int, default=100)
    parser.add_argument("--load", choices=("gemm", "idle"), default="gemm")
    parser.add_argument(
        "--external-command",
        nargs=argparse.REMAINDER,
        metavar="PROGRAM [ARG ...]",
        help="also read a wall meter: a program printing W, run without a shell (give it last)",
    )
    return parser


if __name__ == "__main__":
    sys.exit(main())
