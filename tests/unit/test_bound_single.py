"""SingleStream's IO-binding executor on host memory answers what a plain `session.run` does.

_BoundSingle preallocates the outputs once and only rebinds the inputs per query, so a
binding left on a previous row, or an output buffer read before the run wrote it, would
answer with another sample's result. Each row of a real onnxruntime session on the zoo's
tiny model, queried out of order and twice over, must equal that row's own `session.run`.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from harness.config import RuntimeConfig
from harness.models.registry import zoo_model_path
from harness.runtime.executors import HostExecutor, _BoundSingle
from harness.runtime.session import Session, SessionRequest, create_session
from harness.runtime.targets import get_target

ROWS = 6


def _session(tmp_path: Path) -> Session:
    request = SessionRequest(
        model_path=zoo_model_path("tiny"),
        target=get_target("cpu"),
        runtime=RuntimeConfig(),
        dims={"batch": 1},
        cache_dir=tmp_path,
    )
    return create_session(request)


def _answer(address: int, nbytes: int, like: np.ndarray) -> np.ndarray:
    raw = (ctypes.c_char * nbytes).from_address(address)
    return np.frombuffer(raw, dtype=like.dtype).reshape(like.shape).copy()


def test_bound_single_answers_each_row_as_a_plain_run_does(tmp_path: Path) -> None:
    session = _session(tmp_path)
    rng = np.random.default_rng(7)
    arrays = {"input": rng.standard_normal((ROWS, 3, 32, 32), dtype=np.float32)}
    plain = [session.run({"input": arrays["input"][r : r + 1]})[0] for r in range(ROWS)]
    # Distinct answers, or a stale row could not be told from the right one
    assert len({p.tobytes() for p in plain}) == ROWS

    bound = _BoundSingle.of(session, arrays)
    assert bound is not None  # the tiny model's outputs have fixed shapes: bound
    for row in (3, 0, 5, 1, 4, 2, 2, 0, 5):
        np.testing.assert_array_equal(_answer(*bound.run(row), plain[row]), plain[row])

    executor = HostExecutor(session)  # SingleStream's executor takes the bound path
    executor.attach(arrays)
    assert executor._bound is not None
    for row in (1, 4, 0):
        np.testing.assert_array_equal(_answer(*executor.run_single(row), plain[row]), plain[row])
