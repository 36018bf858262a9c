"""One LoadGen performance test of a minimal SUT, logged as the harness logs (end of test, no
trace), in a temporary directory: what benchmarks/lg_floor.py and offline_floor.py both run."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import mlperf_loadgen as lg

from harness.records.loadgen_log import DetailLog, parse_detail_log

DETAIL_LOG = "mlperf_log_detail.txt"


def run_minimal(
    issue: Callable[[list[int], list[int]], None],
    flush: Callable[[], None],
    samples: int,
    settings: lg.TestSettings,
) -> DetailLog:
    """Run ``settings`` on a fast SUT (``issue``, ``flush``) over a QSL of ``samples`` that
    loads nothing; LoadGen's detail log, parsed."""
    with tempfile.TemporaryDirectory(prefix="minimal-lg-") as tmp:
        log = lg.LogSettings()
        log.log_output.outdir = tmp
        log.log_output.copy_summary_to_stdout = False
        log.enable_trace = False
        log.log_mode = lg.LoggingMode.EndOfTestOnly
        handle_sut = lg.ConstructFastSUT(issue, flush)
        handle_qsl = lg.ConstructQSL(samples, samples, lambda _: None, lambda _: None)
        try:
            lg.StartTestWithLogSettings(handle_sut, handle_qsl, settings, log)
        finally:
            lg.DestroyQSL(handle_qsl)
            lg.DestroyFastSUT(handle_sut)
        return parse_detail_log(Path(tmp) / DETAIL_LOG)
