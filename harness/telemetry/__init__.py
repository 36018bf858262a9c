"""Power and thermal telemetry over the measured window: sources, recorder, summary, CSV."""

from harness.telemetry.base import (
    LoggedSource,
    PowerSource,
    Reading,
    Sample,
    SourceCounters,
    Telemetry,
    ViolationCounters,
)
from harness.telemetry.csvfile import read_telemetry_csv, render_telemetry_csv, write_telemetry_csv
from harness.telemetry.discover import close_sources, discover_sources, gpu_inventory
from harness.telemetry.recorder import TelemetryRecorder
from harness.telemetry.summary import summarize

__all__ = [
    "LoggedSource",
    "PowerSource",
    "Reading",
    "Sample",
    "SourceCounters",
    "Telemetry",
    "TelemetryRecorder",
    "ViolationCounters",
    "close_sources",
    "discover_sources",
    "gpu_inventory",
    "read_telemetry_csv",
    "render_telemetry_csv",
    "summarize",
    "write_telemetry_csv",
]
