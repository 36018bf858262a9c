"""The accuracy check every run ends with: LoadGen's AccuracyOnly mode, scored against FP32."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from harness.analysis.accuracy import (
    accuracy_block,
    decode_outputs,
    labels_by_index,
    load_labels,
    read_accuracy_log,
    write_accuracy_txt,
)
from harness.config import ProfileName, Scenario
from harness.data import SampleSource
from harness.errors import RunError
from harness.files import atomic_write_text
from harness.loadgen import conf as lgconf
from harness.loadgen.sut import SampleStore, make_sut
from harness.loadgen.timed import TestPlan, load_settings, run_timed_test
from harness.modelprep import PreparedModel, data_key, reference_outputs
from harness.runtime.executors import executor_for
from harness.runtime.session import Session

ACCURACY_BLOCK = "accuracy.json"
# What "passed" means without labels: agreement with the FP32 model on the same inputs.
MIN_TOP1_AGREEMENT = 0.99
MIN_COSINE = 0.99


@dataclass(frozen=True, kw_only=True)
class AccuracyJob:
    """One accuracy pass over the measured session, into its own directory."""

    scenario: Scenario
    profile: ProfileName
    run_dir: Path
    model_key: str
    # None: AccuracyOnly issues every sample once whatever the speed, so none is needed.
    expected: lgconf.Expectation | None


def run_accuracy(
    job: AccuracyJob,
    prepared: PreparedModel,
    session: Session,
    source: SampleSource,
    progress: IO[str] | None = None,
) -> dict[str, Any]:
    """Run the accuracy pass into `job.run_dir`, write accuracy.txt and .json, return the block."""
    out = job.run_dir
    out.mkdir(exist_ok=True)
    plan = _plan(job, out, source.total_count)
    settings = load_settings(plan)
    # Responses must carry the outputs here: copy them back, whatever the timed run did.
    executor = executor_for(
        session, io_binding=job.scenario.runtime.io_binding, include_host_copies=True
    )
    store = SampleStore(source, session.inputs, executor)
    sut = make_sut(job.scenario.scenario, executor, store)
    if progress is not None:
        progress.write("  accuracy pass (LoadGen AccuracyOnly)\n")
    run_timed_test(plan, settings, sut, store, progress=None)
    if sut.error is not None:
        raise RunError(f"{out}: inference failed in the accuracy pass: {sut.error}")
    block = score(job, prepared, session, source, out / "mlperf_log_accuracy.json")
    write_accuracy_txt(block, out / "accuracy.txt")
    atomic_write_text(out / ACCURACY_BLOCK, json.dumps(block, indent=2) + "\n")
    return block


def read_accuracy_block(accuracy_dir: Path) -> dict[str, Any]:
    """The scored block an accuracy test left in its directory."""
    path = accuracy_dir / ACCURACY_BLOCK
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunError(f"{path}: no accuracy verdict; the accuracy test did not finish") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise RunError(f"{path}: unreadable accuracy verdict ({exc})") from None
    if not isinstance(data, dict):
        raise RunError(f"{path}: expected a JSON object")
    return data


def score(
    job: AccuracyJob,
    prepared: PreparedModel,
    session: Session,
    source: SampleSource,
    log: Path,
) -> dict[str, Any]:
    """Decode LoadGen's accuracy log and compare it with the FP32 model and the labels."""
    entries = read_accuracy_log(log)
    if not entries:
        raise RunError(f"{log}: LoadGen logged no responses")
    dtype = session.outputs[0].dtype
    shape = (len(entries[0][1]) // dtype.itemsize,)
    outputs = decode_outputs(entries, dtype=dtype, shape=shape)
    reference = reference_outputs(
        prepared, source, sorted(outputs), data_key=data_key(job.scenario)
    )
    flat = {k: np.asarray(v).reshape(-1) for k, v in reference.items()}
    labels = None
    if job.scenario.data.labels:
        labels = labels_by_index(load_labels(Path(str(job.scenario.data.dir))))
    block = accuracy_block(outputs, flat, kind=prepared.kind, labels=labels)
    block.update(_verdict(block))
    block["reference"] = f"FP32 source model sha256 {prepared.source.sha256[:12]}, batch 1"
    return block


def _verdict(block: dict[str, Any]) -> dict[str, Any]:
    labelled = block.get("against_labels")
    if labelled is not None:
        passed = bool(labelled["closed_division"]["passed"])
        return {"passed": passed, "criterion": "top-1 >= 99 % of FP32 (MLPerf closed division)"}
    fp32 = block["against_fp32"]
    if "top1_agreement" in fp32:
        return {
            "passed": fp32["top1_agreement"] >= MIN_TOP1_AGREEMENT,
            "criterion": f"top-1 agreement with FP32 >= {MIN_TOP1_AGREEMENT:.0%} (no labels)",
        }
    return {
        "passed": fp32["cosine_similarity"] >= MIN_COSINE,
        "criterion": f"mean cosine similarity with FP32 >= {MIN_COSINE} (no labels)",
    }


def _plan(job: AccuracyJob, out: Path, total: int) -> TestPlan:
    overrides = lgconf.user_conf_overrides(job.scenario, job.profile, job.expected)
    if job.profile == "quick":
        overrides["accuracy_sample_count_override"] = min(
            job.scenario.quick.accuracy_sample_count, total
        )
    atomic_write_text(out / "mlperf.conf", lgconf.official_mlperf_conf())
    atomic_write_text(
        out / "user.conf",
        lgconf.render_user_conf(job.model_key, job.scenario.scenario, overrides),
    )
    return TestPlan(
        scenario=job.scenario.scenario,
        mode="accuracy",
        model_key=job.model_key,
        mlperf_conf=out / "mlperf.conf",
        user_conf=out / "user.conf",
        out_dir=out,
        total_sample_count=total,
    )
