"""What surrounds a run: the fingerprint, the preflight checks and the telemetry window."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config import ProfileName, TelemetryConfig
from harness.fingerprint import (
    Fingerprint,
    PreflightWarning,
    collect_fingerprint,
    enforce_strict,
    preflight,
)
from harness.telemetry import (
    Telemetry,
    TelemetryRecorder,
    close_sources,
    discover_sources,
    gpu_inventory,
    summarize,
    write_telemetry_csv,
)


@dataclass(frozen=True, kw_only=True)
class Survey:
    """The machine a run is about to use, and what is wrong with it."""

    fingerprint: Fingerprint
    warnings: tuple[PreflightWarning, ...]


def survey(hw: str, *, profile: ProfileName | None, strict: bool = False) -> Survey:
    """Fingerprint the machine and run the preflight checks; `strict` turns warnings into errors."""
    gpus, gpu_missing = gpu_inventory(hw)
    fingerprint = collect_fingerprint(gpus=gpus, gpu_missing=gpu_missing)
    warnings = preflight(fingerprint, profile=profile or "none")
    if strict:
        enforce_strict(warnings)
    return Survey(fingerprint=fingerprint, warnings=tuple(warnings))


def image_info(environ: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The harness image this run is in, as the container runner handed it over."""
    env = os.environ if environ is None else environ
    image_id = env.get("BEYOND_TOPS_IMAGE_ID")
    if not image_id:
        return None
    return {"id": image_id, "tag": env.get("BEYOND_TOPS_IMAGE_TAG", "")}


class TelemetryWindow:
    """Samples power and temperature between LoadGen's sample load and unload."""

    def __init__(self, hw: str, config: TelemetryConfig) -> None:
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
            close_sources(self._sources)

    def finish(self, run_dir: Path, *, samples: int, scenario: str) -> dict[str, Any] | None:
        """Write telemetry.csv and return the result's telemetry block (None: window never ran)."""
        if self._record is None:
            return None
        write_telemetry_csv(self._record, run_dir / "telemetry.csv")
        return summarize(self._record, samples_processed=samples, scenario=scenario)
