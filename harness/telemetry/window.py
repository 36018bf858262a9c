"""The telemetry window: power and temperature sampled between LoadGen's load and unload."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.config import TelemetryConfig
from harness.telemetry.base import Telemetry
from harness.telemetry.csvfile import write_telemetry_csv
from harness.telemetry.discover import close_sources, discover_sources
from harness.telemetry.external import check_meter_opt_in
from harness.telemetry.recorder import TelemetryRecorder
from harness.telemetry.summary import summarize


class TelemetryWindow:
    """Samples power and temperature between LoadGen's sample load and unload."""

    def __init__(
        self, hw: str, config: TelemetryConfig, *, environ: Mapping[str, str] = os.environ
    ) -> None:
        check_meter_opt_in(config, environ)
        csv = Path(config.external_csv) if config.external_csv else None
        self._sources, unavailable = discover_sources(
            hw=hw, external_command=config.external_command, external_csv=csv
        )
        self._recorder = TelemetryRecorder(
            self._sources, interval_s=config.interval_ms / 1000, unavailable=unavailable
        )
        self._record: Telemetry | None = None
        self._opened = False

    def open(self) -> None:
        """Window start: LoadGen has loaded its samples and starts the timed test."""
        self._recorder.start()
        self._opened = True

    def close(self) -> None:
        """Window end: LoadGen finished the timed test and unloads its samples."""
        if self._record is None:
            self._record = self._recorder.stop()

    def release(self) -> None:
        """Stop sampling if the window never closed, and free vendor sessions."""
        try:
            if self._record is None and self._opened:
                self._record = self._recorder.stop()
        finally:
            # A source stuck in a read is left alone: closing its session could hang too.
            close_sources(s for s in self._sources if s.name not in self._recorder.abandoned)

    def finish(self, run_dir: Path, *, samples: int, scenario: str) -> dict[str, Any] | None:
        """Write telemetry.csv and return the result's telemetry block (None: window never ran)."""
        if self._record is None:
            return None
        write_telemetry_csv(self._record, run_dir / "telemetry.csv")
        return summarize(self._record, samples_processed=samples, scenario=scenario)
