"""The SWAP audit in a worker: two performance tests in one process, the second on swapped data.

The SUT is the run's own (same executor, same settings); only the data behind each sample index
changes between the two loads (harness.compliance.swap). Each response of the second test is
judged against the FP32 model's outputs of the data now behind its index and of its earlier
data; the verdict files are written into the audit's directory.
"""

from __future__ import annotations

import dataclasses
from typing import IO

from harness.analysis.accuracy import decode_outputs, read_accuracy_log
from harness.compliance.swap import (
    SWAP_AUDIT,
    SwapCheck,
    SwappedSource,
    check_swap,
    write_swap_verdict,
)
from harness.errors import RunError
from harness.execution.runner import _loadgen_test, _prepare, _warmed
from harness.loadgen.plan import Audit, write_test_confs
from harness.models.prepare import data_key, reference_outputs
from harness.records.job import Job
from harness.records.layout import ACCURACY_LOG, SWAP_FIRST_LOAD_DIR
from harness.stopping import Phases


def run_swap_audit(job: Job, *, phases: Phases, progress: IO[str] | None = None) -> SwapCheck:
    """Both loads, then the verdict, written into ``job.run_dir`` (the worker's directory).

    Responses must carry the outputs, so a device run copies them back here, as the accuracy
    test does, whatever its timed path did.
    """
    job = _with_host_copies(job)
    ready = _prepare(job, progress, phases)
    executor, _, expected = _warmed(job, ready, phases)
    scenario = job.request.scenario
    confs = {
        "scenario": scenario,
        "profile": job.request.profile,
        "model_key": job.request.loadgen_key,
        "expected": expected,
        "total_samples": ready.source.total_count,
        "mode": "performance",
        "pins": job.request.pins,
    }
    first = job.run_dir / SWAP_FIRST_LOAD_DIR
    first.mkdir(exist_ok=True)
    if progress is not None:
        progress.write("  SWAP audit: performance test 1 of 2, each index with its own data\n")
    plan = write_test_confs(first, **confs)  # type: ignore[arg-type]
    _loadgen_test(dataclasses.replace(job, run_dir=first), ready, executor, plan, None, progress)
    swapped = SwappedSource(ready.source)
    audit = Audit(name="beyond-tops SWAP audit", settings=SWAP_AUDIT)
    plan = write_test_confs(job.run_dir, **confs, audit=audit)  # type: ignore[arg-type]
    if progress is not None:
        progress.write("  SWAP audit: performance test 2 of 2, each index with another's data\n")
    second = dataclasses.replace(ready, source=swapped)
    _loadgen_test(job, second, executor, plan, None, progress)
    phases.enter("write")
    log = job.run_dir / ACCURACY_LOG
    entries = read_accuracy_log(log)
    if not entries:
        raise RunError(f"{log}: LoadGen logged no responses in the SWAP audit's second test")
    dtype = ready.session.outputs[0].dtype
    responses = decode_outputs(entries, dtype=dtype, shape=(len(entries[0][1]) // dtype.itemsize,))
    needed = sorted({*responses, *(swapped.shown.get(i, i) for i in responses)})
    reference = reference_outputs(
        ready.model, ready.source, needed, data_key=data_key(scenario, ready.source)
    )
    check = check_swap(responses, reference, swapped.shown, kind=ready.model.kind)
    write_swap_verdict(check, job.run_dir)
    return check


def _with_host_copies(job: Job) -> Job:
    scenario = job.request.scenario
    runtime = dataclasses.replace(scenario.runtime, include_host_copies=True)
    request = dataclasses.replace(
        job.request, scenario=dataclasses.replace(scenario, runtime=runtime)
    )
    return dataclasses.replace(job, request=request)
