"""The plain-text summary of a run that `run`, `bench` and `show` print."""

from __future__ import annotations

from harness.result import RunResult


def render_summary(result: RunResult, run_dir: str | None = None) -> str:
    """A short, aligned table of the numbers a user looks at first."""
    verdict = "VALID" if result.valid else "INVALID"
    if result.profile == "submission":
        profile = "submission profile" + ("" if result.submission_valid else " (not valid)")
    else:
        profile = "quick profile - NOT submission-valid"
    rows = [
        ("result", f"{verdict} per LoadGen; {profile}"),
        ("throughput", _throughput(result)),
        ("latency", _latency(result)),
        (
            "model",
            f"{result.model['name']} {result.model['precision']} "
            f"sha256 {str(result.model['sha256'])[:12]}",
        ),
        (
            "runtime",
            f"onnxruntime {result.versions['onnxruntime']} {','.join(result.providers)}"
            f" | LoadGen {result.versions['loadgen']}",
        ),
        (
            "warm-up",
            f"{result.warmup['queries']} queries in {result.warmup['duration_ms'] / 1000:.1f} s",
        ),
    ]
    rows.append(("precision", _precision(result)))
    rows.append(("accuracy", _accuracy(result)))
    rows.append(("compute", _compute(result)))
    rows.append(("power", _power(result)))
    rows += [("reason", reason) for reason in result.invalid_reasons]
    rows += [("warning", warning) for warning in result.warnings]
    if run_dir is not None:
        rows.append(("run dir", run_dir))
    title = f"{result.scenario_name}: {result.scenario}, batch {result.batch_size}"
    return "\n".join([title] + [f"  {key:<11} {value}" for key, value in rows])


def _precision(result: RunResult) -> str:
    block = result.precision
    recipe = block.get("recipe") or {}
    method = recipe.get("method", "none")
    if method == "none":
        return f"{block.get('precision')} (the source model, unconverted)"
    params = recipe.get("params") or {}
    calib = params.get("calibration_method")
    how = f"{method}, {calib} on {params.get('calibration_samples')} samples" if calib else method
    return f"{block.get('precision')} ({how}) from fp32 sha256 {str(block['source_sha256'])[:12]}"


def _accuracy(result: RunResult) -> str:
    block = result.accuracy
    fp32 = block.get("against_fp32") or {}
    verdict = "passed" if block.get("passed") else "FAILED"
    if "top1_agreement" in fp32:
        found = f"top-1 agreement with FP32 {fp32['top1_agreement'] * 100:.2f} %"
    else:
        found = f"cosine similarity with FP32 {fp32.get('cosine_similarity', float('nan')):.6f}"
    return f"{found} over {block.get('samples')} samples: {verdict} ({block.get('criterion')})"


def _compute(result: RunResult) -> str:
    block = result.utilization
    achieved, peak = block.get("achieved_tflops"), block.get("peak_tflops")
    share = block.get("utilization")
    if achieved is None:
        return f"n/a ({block.get('note')})"
    text = f"{achieved:.3f} TFLOP/s achieved"
    if peak is None or share is None:
        return f"{text}; no peak known ({block.get('note')}); set peak_tflops in the scenario"
    text = f"{text} of {peak:.3f} peak ({block.get('peak_precision')}): {share * 100:.1f} %"
    return f"{text}; {block['note']}" if share > 1 and block.get("note") else text


def _power(result: RunResult) -> str:
    telemetry = result.telemetry
    if telemetry is None:
        return "not measured (the telemetry window never opened)"
    parts = []
    for name, block in telemetry.get("sources", {}).items():
        watts, per_inference = block.get("avg_power_w"), block.get("energy_per_inference_mj")
        text = f"{name} {watts:.1f} W" if watts is not None else f"{name} n/a"
        if per_inference is not None:
            text += f", {per_inference:.2f} mJ/inference"
        parts.append(text)
    if parts:
        return "; ".join(parts)
    missing = ", ".join(item["source"] for item in telemetry.get("unavailable", []))
    return f"not measured here (unavailable: {missing or 'no source'}; see result.json)"


def _throughput(result: RunResult) -> str:
    if result.samples_per_second is None:
        return "n/a"
    return f"{result.samples_per_second:,.1f} samples/s"


def _latency(result: RunResult) -> str:
    lat = result.latency_ns
    if result.scenario == "Offline":
        return "n/a (Offline measures throughput; see SingleStream for latency)"
    parts = [f"{name} {_ms(lat.get(name))}" for name in ("p50", "p90", "p99")]
    parts.append(f"early-stopping p90 {_ms(lat.get('early_stopping_p90'))}")
    return "  ".join(parts)


def _ms(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 1e6:.3f} ms"
