"""Server's worker layout: how many workers, and the threads each worker's session gets."""

from __future__ import annotations

import pytest

from harness.config import RuntimeConfig, ServerConfig
from harness.execution.serverplan import server_layout


def _layout(
    workers: int | None, threads: int, *, gpu: bool = False, cpus: int | None = 8
) -> tuple[int, int]:
    count, runtime = server_layout(
        ServerConfig(workers=workers),
        RuntimeConfig(intra_op_threads=threads),
        gpu=gpu,
        usable_cpus=cpus,
    )
    return count, runtime.intra_op_threads


@pytest.mark.parametrize(
    ("workers", "threads", "cpus", "expected"),
    [
        (None, 0, 8, (8, 1)),  # the default on a CPU: one single-thread worker per core
        (None, 0, 2, (2, 1)),
        (None, 2, 8, (4, 2)),  # threads set: the cores divided by them
        (None, 3, 8, (2, 3)),
        (None, 16, 8, (1, 16)),  # more threads than cores: still one worker, as asked
        (None, 0, 1, (1, 0)),  # one core: one worker, onnxruntime's own choice of threads
        (None, 0, None, (1, 0)),  # the usable count unknown: one worker
        (2, 0, 8, (2, 4)),  # set workers, unset threads: each its share of the cores
        (3, 0, 8, (3, 2)),
        (16, 0, 8, (16, 1)),  # more workers than cores: one thread each, never 0 (= every core)
        (1, 0, 8, (1, 0)),  # one worker keeps onnxruntime's choice (every core)
        (2, 3, 8, (2, 3)),  # both set: as written
    ],
)
def test_the_cpu_layout_divides_the_usable_cores(
    workers: int | None, threads: int, cpus: int | None, expected: tuple[int, int]
) -> None:
    assert _layout(workers, threads, cpus=cpus) == expected


def test_a_gpu_runs_one_worker_unless_told_and_keeps_its_threads() -> None:
    assert _layout(None, 0, gpu=True) == (1, 0)
    assert _layout(3, 0, gpu=True) == (3, 0)


def test_only_the_thread_count_changes() -> None:
    runtime = RuntimeConfig(intra_op_threads=0, allow_spinning=False, io_binding=True)
    _, resolved = server_layout(ServerConfig(), runtime, gpu=False, usable_cpus=4)
    assert resolved == RuntimeConfig(intra_op_threads=1, allow_spinning=False, io_binding=True)
