"""The tree's small documents: measurements.json, each result's README.md and src/README.md."""

from __future__ import annotations

import json
from collections.abc import Mapping, Set
from pathlib import Path
from typing import Any

import yaml

from harness.config import scenario_to_dict
from harness.records.job import Job
from harness.records.result import RunResult
from harness.submission.plan import Entry, Plan

# MLPerf names element types as fp32, fp16, int8 ...; onnx names them float32, float16, int8.
_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}
QUICK_LABEL = (
    "QUICK PROFILE: LoadGen ran with shortened settings (minimum duration, query and sample "
    "counts); this result is NOT valid for an MLPerf submission and was exported with "
    "--force-quick."
)
# The one statement of a result whose model has seeded, generated weights: every place a
# reader sees the result says it (README.md, accuracy.txt's first line, the system's sw_notes).
SYNTHETIC_WEIGHTS = "Synthetic weights: accuracy not measurable"


def synthetic_weights(job: Job, real_weights: Set[str] = frozenset()) -> bool:
    """Whether the job ran a zoo model with seeded weights, from its model's provenance.

    A zoo model run without ``--model`` has synthetic weights unless its zoo entry says they
    are trained (``real_weights``: the zoo names with ``synthetic=False``); any model file, the
    scenario's ``path`` or ``--model``, is the user's, and the export claims nothing about it.
    A file's path or name never decides.
    """
    zoo = job.request.scenario.model.zoo
    return job.request.model_override is None and zoo is not None and zoo not in real_weights


def weights_statement(job: Job, real_weights: Set[str] = frozenset()) -> str | None:
    """The synthetic-weights statement with its reason, or None where there is nothing to say."""
    if not synthetic_weights(job, real_weights):
        return None
    return (
        f"{SYNTHETIC_WEIGHTS} (the beyond-tops zoo model '{job.request.scenario.model.zoo}' is "
        "generated with seeded weights, not trained: the speed is real, the outputs carry no "
        "accuracy)"
    )


def measurements(entry: Entry, job: Job, real_weights: Set[str] = frozenset()) -> dict[str, str]:
    """measurements.json: the data types and weights, from the model and precision records."""
    precision = entry.result.precision
    synthetic = synthetic_weights(job, real_weights)
    return {
        "input_data_types": _dtype(precision.io_dtype),
        "retraining": "no",
        "starting_weights_filename": _starting_weights(entry.result, job, synthetic=synthetic),
        "weight_data_types": _dtype(precision.weights_dtype),
        "weight_transformations": _transformations(entry.result),
        "model_sha256": entry.result.model.sha256,
    }


def measurements_json(entry: Entry, job: Job, real_weights: Set[str] = frozenset()) -> str:
    """measurements.json's text."""
    return json.dumps(measurements(entry, job, real_weights), indent=2) + "\n"


def _dtype(name: str) -> str:
    return _DTYPES.get(name, name)


def _starting_weights(result: RunResult, job: Job, *, synthetic: bool) -> str:
    """The FP32 file the measured model was made from (the measured one, when unconverted)."""
    model = job.request.scenario.model
    if job.request.model_override is not None:
        return job.request.model_override.name
    if model.zoo is not None:
        zoo = f"beyond-tops zoo model '{model.zoo}' (sha256 {result.precision.source_sha256})"
        if synthetic:
            return f"{zoo}. {SYNTHETIC_WEIGHTS} (seeded and generated, not trained)"
        return f"{zoo}, with trained weights"
    return Path(model.path or result.model.path).name


def _transformations(result: RunResult) -> str:
    precision = result.precision
    recipe = precision.recipe
    if recipe.method == "none":
        return "none"
    text = (
        f"{recipe.method} conversion to {precision.precision} with onnxruntime's tools, from the "
        f"FP32 model sha256 {precision.source_sha256}"
    )
    calibration = precision.calibration
    if calibration is not None:
        text += f"; calibrated on {calibration.count} samples (seed {calibration.seed})"
    return text


def result_readme(
    entry: Entry, job: Job, plan: Plan, compliance: Mapping[str, bool] | None = None
) -> str:
    """README.md of one result directory: what ran, how to run it again with beyond-tops.

    ``compliance`` maps each compliance test exported beside the result to whether it passed.
    A synthetic-weights model's statement stands in bold under the title.
    """
    r = entry.result
    lines = [f"# {entry.benchmark} {entry.scenario}: {plan.system}, by beyond-tops", ""]
    statement = weights_statement(job, plan.real_weights)
    if statement is not None:
        reason = statement.removeprefix(SYNTHETIC_WEIGHTS).strip()
        lines += [f"**{SYNTHETIC_WEIGHTS}** {reason}.", ""]
    if entry.quick:
        lines += [f"**{QUICK_LABEL}**", ""]
    lines += _provenance(entry, r)
    for test, passed in (compliance or {}).items():
        verdict = "TEST PASS" if passed else "**TEST FAIL** (the open division does not require it)"
        lines.append(f"- compliance {test}: {verdict}; see {test}/verify_performance.txt")
    lines += ["", "## Run it again", ""]
    lines += _rerun_steps(entry, job, plan)
    lines += ["", "The scenario as it ran (resolved: precision, batch size, providers):", ""]
    lines += ["```yaml", _scenario_yaml(job).rstrip(), "```", ""]
    return "\n".join(lines)


def _provenance(entry: Entry, r: RunResult) -> list[str]:
    harness = r.fingerprint.section("harness")
    commit = harness.get("git_commit") or "unknown"
    dirty = " (with uncommitted changes)" if harness.get("git_dirty") else ""
    image = (
        f"image {r.image.tag or '(untagged)'}, ID {r.image.id}"
        if r.image is not None
        else "no container image (the host's own install)"
    )
    return [
        f"- beyond-tops {r.versions.harness}, git commit {commit}{dirty}; {image}",
        f"- run `{entry.run_dir.name}` ({entry.chosen}), {r.created_utc}, "
        f"profile {r.outcome.profile}, LoadGen {'VALID' if r.outcome.valid else 'INVALID'}",
        f"- model {r.model.name} {r.model.precision}, sha256 {r.model.sha256}",
        f"- onnxruntime {r.versions.onnxruntime} ({', '.join(r.providers)}), "
        f"LoadGen {r.versions.loadgen}, Python {r.versions.python}",
        f"- hardware target `{r.hardware.target}`, fingerprint {r.hardware.fingerprint_id}",
    ]


def _rerun_steps(entry: Entry, job: Job, plan: Plan) -> list[str]:
    r = entry.result
    harness = r.fingerprint.section("harness")
    commit = harness.get("git_commit")
    checkout = f"`git checkout {commit}`" if commit else "check out the version above"
    if harness.get("git_dirty"):
        checkout += " (the run had uncommitted changes, which that commit lacks)"
    runner = f" --runner docker --image {r.image.tag or r.image.id}" if r.image is not None else ""
    override, hw = job.request.model_override, job.request.hw
    model = f" --model {override}" if override is not None else ""
    return [
        f"1. In a clone of beyond-tops, {checkout}; `make bench` once sets up `.venv`.",
        "2. Save the scenario below as `scenario.yaml`.",
        f"3. `harness run scenario.yaml --profile {r.outcome.profile} --hw {hw} --trials 1"
        f"{model}{runner}`: the performance test, then the accuracy test, in its run directory.",
        f"4. `harness submission RUN_DIR --org {plan.org} --system {plan.system} "
        f"--division {plan.division}"
        + (" --force-quick" if entry.quick else "")
        + " --out DIR` writes this directory again.",
    ]


def _scenario_yaml(job: Job) -> str:
    # Through JSON: YAML's safe dumper refuses tuples, and the job file stores this form.
    data: Any = json.loads(json.dumps(scenario_to_dict(job.request.scenario)))
    return str(yaml.safe_dump(data, sort_keys=False))


def src_readme(plan: Plan) -> str:
    """src/README.md: where the code that produced every result comes from."""
    versions = sorted({_code_version(r) for r in plan.results})
    lines = [
        "# Code",
        "",
        "Every result here was measured by beyond-tops, a benchmark harness that runs ONNX models "
        "with onnxruntime under MLPerf LoadGen:",
        "",
        *(f"- {v}" for v in versions),
        "",
        "Each result directory's README.md says how that result was produced and how to "
        "produce it again.",
        "",
    ]
    return "\n".join(lines)


def _code_version(r: RunResult) -> str:
    harness = r.fingerprint.section("harness")
    commit = harness.get("git_commit") or "an unknown commit"
    dirty = " with uncommitted changes" if harness.get("git_dirty") else ""
    return f"beyond-tops {r.versions.harness}, git commit {commit}{dirty}"
