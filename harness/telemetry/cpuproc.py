"""The host CPU sampler in a process of its own, so its reads never wait for the worker's GIL.

A sampling thread inside the worker shares the interpreter lock with the timed path, and
onnxruntime-genai holds that lock through each generation step: on llm-tiny (~75 us a token)
a thread sampling every 100 ms added 6 % to the harness's TTFT p50 and 3-5 % to its TPOT p50
(benchmarks/llm.py, interleaved, against a 10 s interval), and it took fewer rows than its
schedule. A child process costs the cores the same few reads and the worker nothing.

The child (``python -m harness.telemetry.cpuproc ROOT INTERVAL_S``) runs harness.telemetry.
cpu's own CpuSampler. Protocol on its stdin and stdout, one byte each: the child writes R once
it has found its series; the parent writes S, the child takes the window's first row and
answers S; the parent writes E, the child takes the last row and writes the window's record
as one JSON document, then exits. End of stdin at any point (the worker died) ends the child.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from harness.errors import ConfigError, RunError
from harness.telemetry.cpu import CpuSampler, discover_cpu
from harness.telemetry.cpufile import CpuRow, CpuSeries, CpuTelemetry

READY, START, END = b"R", b"S", b"E"
STARTUP_TIMEOUT_S = 60.0  # an interpreter start on a loaded machine, with the imports
REPLY_TIMEOUT_S = 30.0
MAX_RECORD_BYTES = 64 << 20  # a day of rows at 10 ms on a 256-core machine is under this


class CpuSamplerProcess:
    """CpuSampler's start() and stop(), with the sampling done in a child process.

    The child starts here, before the window, so its interpreter start is not inside it.
    """

    def __init__(self, root: Path, *, interval_s: float) -> None:
        if not interval_s > 0:
            raise ConfigError(f"telemetry interval_s must be > 0, not {interval_s}")
        package_parent = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH")) if p)
        self._child = subprocess.Popen(
            [sys.executable, "-m", __name__, str(root), repr(interval_s)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            env={**os.environ, "PYTHONPATH": path},
        )
        self._started = self._ended = False
        self._expect(READY, STARTUP_TIMEOUT_S, "start")

    def start(self) -> None:
        """Have the child take the first row, which marks the window's start; wait for it."""
        if self._started:
            raise RuntimeError("CpuSamplerProcess.start() called twice")
        self._send(START)
        self._expect(START, REPLY_TIMEOUT_S, "start sampling")
        self._started = True

    def stop(self) -> CpuTelemetry:
        """Have the child take the last row and hand over the window's record."""
        if not self._started:
            raise RuntimeError("CpuSamplerProcess.stop() called before start()")
        self._send(END)
        try:
            out, err = self._child.communicate(timeout=REPLY_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RunError(
                f"CPU telemetry: the sampling process sent no record within {REPLY_TIMEOUT_S:g} s"
            ) from None
        self._ended = True
        if self._child.returncode != 0 or len(out) > MAX_RECORD_BYTES:
            raise RunError(f"CPU telemetry: the sampling process failed: {_tail(err)}")
        return record_from_json(json.loads(out))

    def kill(self) -> None:
        """End the child if it still runs (a window that never closed); idempotent."""
        if self._ended:
            return
        self._ended = True
        if self._child.poll() is None:
            self._child.kill()
        self._child.communicate()

    def _send(self, command: bytes) -> None:
        stdin = _stream(self._child.stdin)
        try:
            stdin.write(command)
            stdin.flush()
        except BrokenPipeError:
            why = self._stderr()
            self.kill()
            raise RunError(f"CPU telemetry: the sampling process is gone: {why}") from None

    def _expect(self, reply: bytes, timeout_s: float, what: str) -> None:
        stdout = _stream(self._child.stdout)
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            ready = selector.select(timeout_s)
        got = os.read(stdout.fileno(), 1) if ready else b""
        if got != reply:
            why = f"no answer within {timeout_s:g} s" if not ready else self._stderr()
            self.kill()
            raise RunError(f"CPU telemetry: the sampling process did not {what}: {why}")

    def _stderr(self) -> str:
        try:
            self._child.wait(timeout=5)  # it closed its end: let it finish exiting
        except subprocess.TimeoutExpired:
            return "it still runs"
        return _tail(_stream(self._child.stderr).read(1 << 16))


def record_to_json(record: CpuTelemetry) -> dict[str, Any]:
    """The record as JSON-able values (what the child writes)."""
    return asdict(record)


def record_from_json(doc: dict[str, Any]) -> CpuTelemetry:
    """The record the child wrote; its shape is this module's own."""
    return CpuTelemetry(
        window_start_ns=int(doc["window_start_ns"]),
        window_end_ns=int(doc["window_end_ns"]),
        interval_s=float(doc["interval_s"]),
        series=tuple(CpuSeries(**s) for s in doc["series"]),
        rows=tuple(CpuRow(t_ns=int(r["t_ns"]), values=tuple(r["values"])) for r in doc["rows"]),
        unavailable=tuple((str(k), str(v)) for k, v in doc["unavailable"]),
        errors=tuple((str(k), str(v)) for k, v in doc["errors"]),
    )


def _stream(stream: IO[bytes] | None) -> IO[bytes]:
    if stream is None:  # Popen was given PIPE for all three
        raise RuntimeError("the sampling process has no pipe")
    return stream


def _tail(err: bytes) -> str:
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else "no message (it was killed or exited at once)"


def _child(root: Path, interval_s: float) -> int:
    """The child's side of the protocol; returns its exit status."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    probe, missing = discover_cpu(root)
    sampler = CpuSampler(probe, interval_s=interval_s, unavailable=missing)
    stdout.write(READY)
    stdout.flush()
    if stdin.read(1) != START:
        return 0  # the window never opened (or the worker is gone)
    sampler.start()
    stdout.write(START)
    stdout.flush()
    if stdin.read(1) != END:
        return 0  # end of stdin: the worker is gone, nobody reads the record
    record = sampler.stop()
    stdout.write(json.dumps(record_to_json(record)).encode())
    stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_child(Path(sys.argv[1]), float(sys.argv[2])))
