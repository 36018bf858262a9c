"""benchmarks/offline_floor.py: the plain loop inside a minimal LoadGen Offline SUT, for real."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import offline_floor  # noqa: E402  (benchmarks/offline_floor.py)
import overhead  # noqa: E402  (benchmarks/overhead.py)

from harness.config import RuntimeConfig  # noqa: E402


def test_the_minimal_sut_answers_every_sample_loadgen_asked_for() -> None:
    sc = overhead.scenario("Offline", "tiny", 4, 1.0, RuntimeConfig())
    session = overhead.plain_session(sc)
    floor = offline_floor.offline_floor(session, overhead.plain_feeds(session), 0.5)
    # LoadGen's query: whole batches, all answered.
    assert floor.answered > 0 and floor.answered % 4 == 0
    # The query is sized for about the 0.5 s asked: one sized ten times too long or too
    # short lands outside these bounds, which leave room for a noisy machine's warm-up rate.
    assert 0.05 < floor.window_s < 5.0, floor.window_s
    # LoadGen's rate is the SUT's own count over (about) its own span: never above it by
    # more than the slack of LoadGen's window starting before the first issue.
    own = floor.answered / floor.window_s
    assert 0.5 * own < floor.samples_per_second <= 1.01 * own
