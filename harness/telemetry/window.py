"""The telemetry window: power, temperature, the host CPU and memory between load and unload."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from harness.config import CPU_INTERVAL_MS, TelemetryConfig
from harness.records.layout import CPU_TELEMETRY_FILE, TELEMETRY_FILE
from harness.records.memory import MemoryFootprint
from harness.records.telemetry import TelemetrySummary
from harness.telemetry.base import Telemetry
from harness.telemetry.cpufile import CpuTelemetry, write_cpu_csv
from harness.telemetry.cpuproc import CpuSamplerProcess
from harness.telemetry.csvfile import write_telemetry_csv
from harness.telemetry.discover import close_sources, discover_sources
from harness.telemetry.external import check_meter_opt_in
from harness.telemetry.memory import MemoryWindow
from harness.telemetry.pertoken import TokenSpan
from harness.telemetry.recorder import TelemetryRecorder
from harness.telemetry.summary import summarize


class TelemetryWindow:
    """Samples power, temperature and the host CPU between LoadGen's sample load and unload.

    ``cpu_root`` stands in for ``/`` when reading the CPU's /proc and /sys files (tests);
    ``root`` for ``/`` when finding power sources (RAPL's /sys/class/powercap);
    ``proc_self`` for /proc/self, where the worker's peak RSS is reset and read.
    """

    def __init__(
        self,
        hw: str,
        config: TelemetryConfig,
        *,
        environ: Mapping[str, str] = os.environ,
        cpu_root: Path = Path("/"),
        root: Path = Path("/"),
        proc_self: Path = Path("/proc/self"),
    ) -> None:
        check_meter_opt_in(config, environ)
        csv = Path(config.external_csv) if config.external_csv else None
        self._sources, unavailable = discover_sources(
            hw=hw, root=root, external_command=config.external_command, external_csv=csv
        )
        self._recorder = TelemetryRecorder(
            self._sources, interval_s=config.interval_ms / 1000, unavailable=unavailable
        )
        # In a child process: a thread here would wait for the timed path's GIL (cpuproc.py)
        self._cpu = CpuSamplerProcess(
            cpu_root, interval_s=(config.cpu_interval_ms or CPU_INTERVAL_MS) / 1000
        )
        self._memory = MemoryWindow(devices=self._sources, proc_self=proc_self)
        self._record: Telemetry | None = None
        self._cpu_record: CpuTelemetry | None = None
        self._opened = False
        self.files: dict[str, str] = {}

    def open(self) -> None:
        """Window start: LoadGen has loaded its samples and starts the timed test."""
        self._memory.open()  # first: the samplers' threads are part of what the worker holds
        self._recorder.start()
        self._cpu.start()
        self._opened = True

    def close(self) -> None:
        """Window end: LoadGen finished the timed test and unloads its samples."""
        try:
            if self._opened:
                self._memory.close()  # a device that fails here still lets the samplers stop
        finally:
            if self._record is None:
                self._record = self._recorder.stop()
            if self._cpu_record is None:
                self._cpu_record = self._cpu.stop()

    def release(self) -> None:
        """Stop sampling if the window never closed, and free vendor sessions."""
        try:
            if self._opened:
                self.close()
        finally:
            self._cpu.kill()  # a window that never opened: its child waits for a start
            # A source stuck in a read is left alone: closing its session could hang too.
            close_sources(s for s in self._sources if s.name not in self._recorder.abandoned)

    def finish(
        self, run_dir: Path, *, samples: int, scenario: str, tokens: TokenSpan | None = None
    ) -> TelemetrySummary | None:
        """Write the window's CSV files and return the result's telemetry summary.

        None when the window never ran; ``files`` then names the files written, by role.
        ``tokens``: a generative run's output tokens and LoadGen's span, as the SUT stamped
        them, for the energy per output token.
        """
        if self._cpu_record is not None:
            write_cpu_csv(self._cpu_record, run_dir / CPU_TELEMETRY_FILE)
            self.files["cpu_telemetry"] = CPU_TELEMETRY_FILE
        if self._record is None:
            return None
        write_telemetry_csv(self._record, run_dir / TELEMETRY_FILE)
        self.files["telemetry"] = TELEMETRY_FILE
        return summarize(self._record, samples_processed=samples, scenario=scenario, tokens=tokens)

    def memory(self, *, arena_bytes: int | None, arena_note: str | None) -> MemoryFootprint | None:
        """The worker's memory over the window; None when the window never opened."""
        if not self._opened:
            return None
        return self._memory.footprint(arena_bytes=arena_bytes, arena_note=arena_note)
