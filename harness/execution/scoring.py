"""The accuracy test's score: LoadGen's logged responses against the FP32 model and the labels.

Wiring, as harness.execution.runner is (whose accuracy test calls it): the analysis of responses and
the model's own FP32 outputs meet here.
"""

from __future__ import annotations

import numpy as np

from harness.analysis.accuracy import decode_outputs, read_accuracy_log, score_accuracy
from harness.analysis.labels import label_offset, scenario_labels
from harness.datasets.samples import SampleSource
from harness.errors import RunError
from harness.models.prepare import PreparedModel, data_key, reference_outputs
from harness.records.accuracy import Accuracy
from harness.records.job import Job
from harness.records.layout import ACCURACY_LOG
from harness.runtime.session import Session


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
