"""The worker's memory over LoadGen's window: peak RSS (VmHWM) and each device's memory in use.

Linux keeps a process's resident-set high-water mark as VmHWM in /proc/self/status; writing
"5" to /proc/self/clear_refs resets it to the current RSS (Linux 4.0+). The window's open
resets it and its close reads it, so the peak is the window's own. Where the reset is refused
(an older kernel, a locked-down /proc), the peak read is the process's since it started, and
the record says so. Both happen in LoadGen's load and unload callbacks, outside the timed path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from harness.records.memory import DeviceMemory, MemoryFootprint, RssScope
from harness.telemetry.base import DeviceMemoryReader

_VMHWM = re.compile(r"^VmHWM:\s*(\d+)\s*kB\s*$", re.MULTILINE)
RESET_VALUE = "5"  # clear_refs: reset the peak RSS (Documentation/filesystems/proc.rst)
NO_DEVICE = "no accelerator telemetry (NVML or amdsmi) on this target"


class MemoryWindow:
    """Peak RSS between ``open`` and ``close``; device memory read at ``close``.

    ``proc_self`` stands in for /proc/self (tests); ``devices`` are the telemetry sources,
    of which those that report memory (harness.telemetry.base.DeviceMemoryReader) are read.
    """

    def __init__(self, *, devices: Iterable[object] = (), proc_self: Path = Path("/proc/self")):
        self._proc = proc_self
        self._devices = [d for d in devices if isinstance(d, DeviceMemoryReader)]
        self._scope: RssScope | None = None
        self._note: str | None = None
        self._peak_bytes: int | None = None
        self._device_memory: tuple[DeviceMemory, ...] = ()
        self._closed = False

    def open(self) -> None:
        """Reset the high-water mark, or note why it could not be reset."""
        try:
            (self._proc / "clear_refs").write_text(RESET_VALUE)
        except OSError as exc:
            self._scope = "process"
            self._note = (
                f"{self._proc / 'clear_refs'}: {exc.strerror or exc}: the peak RSS could not "
                "be reset when the window opened, so it is the worker's peak since it started"
            )
        else:
            self._scope, self._note = "window", None

    def close(self) -> None:
        """Read the high-water mark and each device's memory in use (once)."""
        if self._closed:
            return
        self._closed = True
        self._peak_bytes = self._vmhwm_bytes()
        read = (self._read(d) for d in self._devices)
        self._device_memory = tuple(d for d in read if d is not None)

    def footprint(self, *, arena_bytes: int | None, arena_note: str | None) -> MemoryFootprint:
        """The record, with onnxruntime's arena as the runtime reports it."""
        return MemoryFootprint(
            peak_rss_bytes=self._peak_bytes,
            peak_rss_scope=self._scope if self._peak_bytes is not None else None,
            peak_rss_note=self._note,
            arena_bytes=arena_bytes,
            arena_note=arena_note,
            devices=self._device_memory,
            device_note=self._device_note(),
        )

    def _vmhwm_bytes(self) -> int | None:
        path = self._proc / "status"
        try:
            found = _VMHWM.search(path.read_text())
        except OSError as exc:
            self._scope = None
            self._note = f"{path}: {exc.strerror or exc}: the peak RSS is not known here"
            return None
        if found is None:
            self._note = f"{path}: no VmHWM line: the peak RSS is not known here"
            return None
        return int(found.group(1)) * 1024

    def _device_note(self) -> str | None:
        if not self._devices:
            return NO_DEVICE
        missing = len(self._devices) - len(self._device_memory)
        return f"{missing} device(s) do not report memory in use" if missing else None

    @staticmethod
    def _read(device: DeviceMemoryReader) -> DeviceMemory | None:
        read = device.memory_bytes()
        if read is None:
            return None
        return DeviceMemory(
            device=str(getattr(device, "name", "device")),
            source=device.memory_method,
            used_bytes=read[0],
            total_bytes=read[1],
        )
