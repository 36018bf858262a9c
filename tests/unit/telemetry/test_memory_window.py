"""The memory window: peak RSS reset and read around LoadGen's window, device memory, arena."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import onnxruntime
import pytest

from harness.config import TelemetryConfig
from harness.errors import DeviceError
from harness.runtime.info import arena_bytes
from harness.telemetry import window as window_module
from harness.telemetry.base import Reading
from harness.telemetry.memory import NO_DEVICE, MemoryWindow
from harness.telemetry.window import TelemetryWindow

MIB = 2**20


def _proc(tmp_path: Path, hwm_kb: int = 153_600) -> Path:
    proc = tmp_path / "self"
    proc.mkdir()
    (proc / "clear_refs").write_text("")
    (proc / "status").write_text(f"Name:\tpython\nVmPeak:\t 999999 kB\nVmHWM:\t  {hwm_kb} kB\n")
    return proc


class FakeGpu:
    """A telemetry source that reports its device's memory (the adapters' shape)."""

    memory_method = "nvmlDeviceGetMemoryInfo"

    def __init__(self, name: str, read: tuple[int, int | None] | None) -> None:
        self.name, self._read = name, read

    def memory_bytes(self) -> tuple[int, int | None] | None:
        return self._read


def test_open_resets_the_high_water_mark_and_close_reads_it(tmp_path: Path) -> None:
    proc = _proc(tmp_path)
    window = MemoryWindow(proc_self=proc)
    window.open()
    assert (proc / "clear_refs").read_text() == "5"
    window.close()
    memory = window.footprint(arena_bytes=None, arena_note="not exposed")
    assert memory.peak_rss_bytes == 153_600 * 1024
    assert (memory.peak_rss_scope, memory.peak_rss_note) == ("window", None)
    assert (memory.devices, memory.device_note) == ((), NO_DEVICE)


def test_a_refused_reset_says_the_peak_is_the_processs_since_it_started(tmp_path: Path) -> None:
    proc = _proc(tmp_path)
    (proc / "clear_refs").unlink()
    (proc / "clear_refs").mkdir()  # writing it fails, as a locked-down /proc does
    window = MemoryWindow(proc_self=proc)
    window.open()
    window.close()
    memory = window.footprint(arena_bytes=None, arena_note=None)
    assert memory.peak_rss_bytes == 153_600 * 1024
    assert memory.peak_rss_scope == "process"
    assert memory.peak_rss_note is not None
    assert "could not be reset" in memory.peak_rss_note
    assert "since it started" in memory.peak_rss_note


def test_without_a_status_file_the_peak_is_not_known_and_says_why(tmp_path: Path) -> None:
    proc = _proc(tmp_path)
    (proc / "status").unlink()
    window = MemoryWindow(proc_self=proc)
    window.open()
    window.close()
    memory = window.footprint(arena_bytes=None, arena_note=None)
    assert (memory.peak_rss_bytes, memory.peak_rss_scope) == (None, None)
    assert memory.peak_rss_note is not None and "not known" in memory.peak_rss_note


def test_devices_that_report_memory_are_read_at_close_and_summed(tmp_path: Path) -> None:
    gpus = [FakeGpu("gpu0", (5 * 2**30, 80 * 2**30)), FakeGpu("gpu1", (3 * 2**30, None))]
    window = MemoryWindow(devices=[*gpus, object()], proc_self=_proc(tmp_path))
    window.open()
    window.close()
    memory = window.footprint(arena_bytes=None, arena_note=None)
    assert [(d.device, d.used_bytes, d.total_bytes) for d in memory.devices] == [
        ("gpu0", 5 * 2**30, 80 * 2**30),
        ("gpu1", 3 * 2**30, None),
    ]
    assert memory.device_used_bytes == 8 * 2**30
    assert memory.devices[0].source == "nvmlDeviceGetMemoryInfo"
    assert memory.device_note is None


def test_a_device_that_does_not_report_memory_is_named_in_the_note(tmp_path: Path) -> None:
    window = MemoryWindow(devices=[FakeGpu("gpu0", None)], proc_self=_proc(tmp_path))
    window.open()
    window.close()
    memory = window.footprint(arena_bytes=None, arena_note=None)
    assert (memory.devices, memory.device_used_bytes) == ((), None)
    assert memory.device_note == "1 device(s) do not report memory in use"


# Run in a fresh interpreter: in a long test session the allocator may keep freed memory
# resident and hand it back to the next array, so RSS would not move (seen in CI at 942 MB).
_REAL_RESET = """
import json, numpy as np
from harness.telemetry.memory import MemoryWindow
MIB = 2**20
window = MemoryWindow()
before = np.ones(256 * MIB, dtype=np.uint8)
del before
window.open()
window.close()
quiet = window.footprint(arena_bytes=None, arena_note=None)
window = MemoryWindow()
window.open()
inside = np.ones(256 * MIB, dtype=np.uint8)
window.close()
del inside
busy = window.footprint(arena_bytes=None, arena_note=None)
print(json.dumps([quiet.peak_rss_bytes, quiet.peak_rss_scope, quiet.peak_rss_note,
                  busy.peak_rss_bytes]))
"""


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="Linux /proc only")
def test_the_real_reset_drops_the_peak_of_memory_freed_before_the_window() -> None:
    """/proc/self: 256 MiB touched and freed before open do not count; touched inside do."""
    done = subprocess.run(
        [sys.executable, "-c", _REAL_RESET], capture_output=True, text=True, check=True
    )
    quiet_bytes, scope, note, busy_bytes = json.loads(done.stdout)
    assert quiet_bytes is not None
    if scope != "window":
        pytest.skip(f"this kernel refuses the reset: {note}")
    assert quiet_bytes < 200 * MIB  # the freed 256 MiB are not in the window's peak
    assert busy_bytes >= quiet_bytes + 200 * MIB


def test_the_arena_is_not_exposed_by_the_installed_onnxruntime(tmp_path: Path) -> None:
    """The note is true: InferenceSession's Python API has no allocator statistics."""
    session: Any = onnxruntime.InferenceSession
    names = [n.lower() for n in dir(session) if not n.startswith("_")]
    assert not [n for n in names if "alloc" in n or "arena" in n or "stats" in n]
    value, note = arena_bytes(session)
    assert value is None
    assert note == (
        f"not exposed by onnxruntime {onnxruntime.__version__}: its Python API has no "
        "allocator statistics (the C API's AllocatorGetStats)"
    )


def test_an_onnxruntime_that_names_allocator_statistics_is_said_to_not_be_read_yet() -> None:
    class Newer:
        def get_allocator_stats(self) -> dict[str, int]:
            return {"InUse": 1}

    value, note = arena_bytes(Newer())
    assert value is None
    assert note is not None and "names get_allocator_stats" in note


class FailingGpu:
    """A GPU source whose memory read fails at the window's close (a lost GPU)."""

    name, kind, memory_method = "gpu0", "gpu", "nvmlDeviceGetMemoryInfo"

    def read(self) -> Reading:
        return Reading(power_w=100.0)

    def energy_mj(self) -> float | None:
        return None

    def memory_bytes(self) -> tuple[int, int | None] | None:
        raise DeviceError("gpu0: cannot read memory: GPU is lost")


def test_the_telemetry_window_reads_memory_and_stops_its_samplers_even_when_it_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(window_module, "discover_sources", lambda **kw: ([FailingGpu()], []))
    window = TelemetryWindow("cpu", TelemetryConfig(), proc_self=_proc(tmp_path))
    assert window.memory(arena_bytes=None, arena_note=None) is None  # never opened
    before = threading.active_count()
    window.open()
    assert threading.active_count() > before  # the samplers run
    with pytest.raises(DeviceError, match="GPU is lost"):
        window.close()
    assert threading.active_count() == before  # stopped regardless, before any release
    window.release()
    memory = window.memory(arena_bytes=None, arena_note="not exposed")
    assert memory is not None and memory.peak_rss_bytes == 153_600 * 1024
