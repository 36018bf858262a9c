"""The accuracy test's plan and score: LoadGen's logged responses against FP32 and the labels.

Wiring, as harness.execution.runner and genrunner are (whose accuracy tests call it): the
AccuracyOnly pass's plan (one home for both), and the analysis of the logged responses against
the model's own FP32 outputs: a CNN's output tensors, a generative model's token ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import IO

import numpy as np

from harness.analysis.accuracy import decode_outputs, read_accuracy_log, score_accuracy
from harness.analysis.genaccuracy import logged_tokens, token_agreement
from harness.analysis.labels import label_offset, scenario_labels
from harness.datasets.samples import SampleSource
from harness.errors import RunError
from harness.loadgen.plan import write_test_confs
from harness.loadgen.timed import TestPlan
from harness.models.prepare import PreparedModel, data_key, reference_outputs
from harness.records.accuracy import Accuracy, TokenAgreement
from harness.records.job import Job
from harness.records.layout import ACCURACY_LOG
from harness.runtime.session import Session
from harness.stopping import Phases


def accuracy_plan(
    job: Job, *, total_samples: int, phases: Phases, progress: IO[str] | None = None
) -> TestPlan:
    """The accuracy job's LoadGen plan: AccuracyOnly over every sample, its confs written."""
    phases.enter("loadgen")
    plan = write_test_confs(
        job.run_dir,
        scenario=job.request.scenario,
        profile=job.request.profile,
        model_key=job.request.loadgen_key,
        pins=job.request.pins,
        expected=None,
        total_samples=total_samples,
        mode="accuracy",
    )
    if progress is not None:
        progress.write("  accuracy pass (LoadGen AccuracyOnly)\n")
    return plan


def score_tokens(job: Job, count: int, reference: Callable[[int], Sequence[int]]) -> TokenAgreement:
    """The SUT's tokens of samples 0..count-1, as LoadGen logged them, against ``reference``.

    ``reference(i)`` is the FP32 model's greedy tokens of sample i; the scored tokens are what
    the SUT returned in the AccuracyOnly pass (mlperf_log_accuracy.json), not a regeneration.

    Raises:
        RunError: When LoadGen logged no answer for one of those samples.
    """
    log = job.run_dir / ACCURACY_LOG
    logged = logged_tokens(log)
    missing = [i for i in range(count) if i not in logged]
    if missing:
        raise RunError(
            f"{log}: LoadGen logged no answer for sample(s) {missing[:8]}; the accuracy pass "
            "did not complete every sample"
        )
    return token_agreement([logged[i] for i in range(count)], [reference(i) for i in range(count)])


def score(job: Job, model: PreparedModel, session: Session, source: SampleSource) -> Accuracy:
    """Decode LoadGen's accuracy log and compare it with the FP32 model and the labels."""
    log = job.run_dir / ACCURACY_LOG
    entries = read_accuracy_log(log)
    if not entries:
        raise RunError(f"{log}: LoadGen logged no responses")
    dtype = session.outputs[0].dtype
    outputs = decode_outputs(entries, dtype=dtype, shape=(len(entries[0][1]) // dtype.itemsize,))
    reference = reference_outputs(
        model, source, sorted(outputs), data_key=data_key(job.request.scenario, source)
    )
    flat = {k: np.asarray(v).reshape(-1) for k, v in reference.items()}
    labels, offset = None, 0
    if job.request.scenario.data.has_labels:
        labels = scenario_labels(job.request.scenario.data)
        offset = label_offset(job.request.scenario.data.source, [o.shape for o in session.outputs])
    return score_accuracy(
        outputs,
        flat,
        kind=model.kind,
        described_as=f"FP32 source model sha256 {model.source.sha256[:12]}, batch 1",
        labels=labels,
        label_offset=offset,
    )
