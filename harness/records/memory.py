"""A run's memory footprint: the worker's peak RSS, onnxruntime's arena, device memory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# "window": VmHWM was reset when LoadGen's window opened, so the peak is the window's own;
# "process": the reset was refused, so it is the worker's peak since it started (stated).
RssScope = Literal["window", "process"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceMemory:
    """One accelerator's memory at the window's close, as its vendor library reports it.

    ``used_bytes`` is the whole device's (every process on it), not the worker's alone.
    """

    device: str
    source: str
    used_bytes: int
    total_bytes: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryFootprint:
    """Memory the worker held during LoadGen's measured window.

    ``peak_rss_bytes``: the worker's resident-set high-water mark (Linux VmHWM) read at the
    window's close; ``peak_rss_scope`` says whether it covers the window alone or the whole
    process, ``peak_rss_note`` why (None when the window's own peak was read). None when
    the platform has no /proc/self/status. ``arena_bytes``: onnxruntime's allocator arena,
    None with ``arena_note`` saying why when onnxruntime does not expose it. ``devices``:
    each accelerator's memory in use, ``device_note`` why there is none (no GPU telemetry).
    """

    peak_rss_bytes: int | None
    peak_rss_scope: RssScope | None
    peak_rss_note: str | None
    arena_bytes: int | None
    arena_note: str | None
    devices: tuple[DeviceMemory, ...]
    device_note: str | None

    @property
    def device_used_bytes(self) -> int | None:
        """Memory in use on every device together; None where no device reported it."""
        return sum(d.used_bytes for d in self.devices) if self.devices else None
