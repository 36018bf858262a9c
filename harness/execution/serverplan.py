"""Server's batcher for a worker: a session per compiled batch, warmed and timed, its policy.

Wiring, as harness.execution.runner is (whose _prepare calls it): models, runtime and LoadGen
meet here.
"""

from __future__ import annotations

import dataclasses

from harness.config import RuntimeConfig, ServerConfig
from harness.datasets.samples import SampleSource
from harness.errors import RunError
from harness.loadgen import conf as lgconf
from harness.loadgen.batching import BatchPolicy, compiled_batches, derive_policy
from harness.loadgen.sut import Executor, ServerPlan
from harness.models.prepare import PreparedModel
from harness.models.validate import resolve_dims
from harness.records.job import Job
from harness.runtime.executors import executor_for
from harness.runtime.session import Session, create_session
from harness.runtime.warmup import warm_up


def server_layout(
    server: ServerConfig, runtime: RuntimeConfig, *, gpu: bool, usable_cpus: int | None
) -> tuple[int, RuntimeConfig]:
    """Server's worker count, and the runtime each worker's session runs with.

    Unset workers divide a CPU's usable cores: one single-thread worker per core, or one per
    runtime.intra_op_threads cores where that is set. c single-thread workers beat one worker
    with every core in every Server comparison measured (README, Server). Several workers with
    intra_op_threads left to onnxruntime (0: every core) get the cores divided among them,
    so that they do not each spin a pool over all of them. A GPU runs one worker unless told.
    """
    cores, threads, workers = max(1, usable_cpus or 1), runtime.intra_op_threads, server.workers
    if workers is None:
        workers = 1 if gpu else max(1, cores // threads) if threads else cores
    if workers > 1 and threads == 0 and not gpu:
        runtime = dataclasses.replace(runtime, intra_op_threads=max(1, cores // workers))
    return workers, runtime


def server_plan(
    job: Job, model: PreparedModel, session: Session, source: SampleSource, *, workers: int
) -> tuple[ServerPlan, BatchPolicy]:
    """Server's batcher: a session per compiled batch, warmed and timed, and its policy.

    ``workers`` (server_layout's count) each get an executor per compiled batch (1, 2, 4, ...
    up to batch_size; the sessions are shared, the buffers are not), so a batch of 3 runs
    padded to 4, not to 8.
    """
    scenario, runtime = job.request.scenario, job.request.scenario.runtime
    host_copies = job.test == "accuracy" or runtime.include_host_copies
    sizes = compiled_batches(scenario.batch_size)
    sessions = {scenario.batch_size: session}
    for size in sizes[:-1]:
        dims = resolve_dims(model.info, batch_size=size, dims=model.dims)
        sessions[size] = create_session(dataclasses.replace(session.request, dims=dims))
    executors: list[dict[int, Executor]] = [
        {
            size: executor_for(
                sessions[size], io_binding=runtime.io_binding, include_host_copies=host_copies
            )
            for size in sizes
        }
        for _ in range(workers)
    ]
    costs = {
        size: warm_up(e, sessions[size].inputs, source, min_queries=5, min_duration_ms=300)
        for w in executors
        for size, e in w.items()
    }  # every executor warmed (first runs are slow); the costs are the last worker's medians
    bound_ns = lgconf.server_latency_bound_ns(scenario, job.request.loadgen_key)
    median = {size: stats.median_latency_ns for size, stats in costs.items()}
    if median[1] > bound_ns:
        raise RunError(
            f"{scenario.name}: Server's latency bound is {bound_ns / 1e6:g} ms at p99, but one "
            f"sample alone takes {median[1] / 1e6:.1f} ms here (warm-up median at batch 1): no "
            "arrival rate can meet it; use faster hardware or a lower precision, or raise "
            "server.latency_bound_ms (not for a closed submission)"
            + (
                f"; each of the {workers} workers runs on its share of the cores: set "
                "server.workers: 1 to give one query every core"
                if workers > 1
                else ""
            )
        )
    policy = derive_policy(median, bound_ns, scenario.server.max_wait_ms)
    policy = dataclasses.replace(policy, workers=workers)
    plan = ServerPlan(
        workers=executors,
        max_batch=policy.max_batch,
        max_wait_s=policy.max_wait_ms / 1000,
        queue_depth=scenario.server.queue_depth,
    )
    return plan, policy
