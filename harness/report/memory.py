"""A run's memory footprint as text: show's line and the report's notes beside its numbers."""

from __future__ import annotations

from collections.abc import Sequence

from harness.records.memory import DeviceMemory, MemoryFootprint
from harness.records.metrics import DEVICE_MEMORY, PEAK_RSS
from harness.records.result import RunResult

NOT_MEASURED = "not measured (a result from before schema 8, or the window never opened)"
SCOPE = {
    "window": "over the measured window",
    "process": "since the worker started (its reset was refused)",
}


def memory_line(memory: MemoryFootprint | None) -> str:
    """Peak RSS with its scope, the arena, each device: one line of `harness show`."""
    if memory is None:
        return NOT_MEASURED
    return "; ".join([_rss(memory), _arena(memory), _devices(memory)])


def group_memory_line(results: Sequence[RunResult]) -> str:
    """A group's peak RSS over its runs (min to max) and its device memory: `show`'s row."""
    peaks = [r.memory.peak_rss_bytes for r in results if r.memory and r.memory.peak_rss_bytes]
    if not peaks:
        return NOT_MEASURED
    low, high = PEAK_RSS.format(min(peaks)), PEAK_RSS.format(max(peaks))
    shown = low if low == high else f"{low} to {high}"
    line = f"peak RSS {shown} {PEAK_RSS.unit} over {len(peaks)} of {len(results)} runs"
    devices = [r.memory.device_used_bytes for r in results if r.memory]
    used = [d for d in devices if d is not None]
    if used:
        line += f"; device memory up to {DEVICE_MEMORY.text(max(used))} in use"
    return line


def memory_notes(results: Sequence[RunResult]) -> tuple[str, ...]:
    """What the report says beside the memory rows: how each number was read, each once."""
    notes: dict[str, None] = {}
    for result in results:
        memory = result.memory
        if memory is None:
            notes[f"memory: {NOT_MEASURED}"] = None
            continue
        scope = SCOPE.get(memory.peak_rss_scope or "", "")
        notes[f"peak RSS: the worker's resident-set high-water mark (VmHWM) {scope}".strip()] = None
        for note in (memory.peak_rss_note, memory.device_note):
            if note:
                notes[note] = None
        notes[f"onnxruntime's arena: {_arena(memory).removeprefix('arena ')}"] = None
    return tuple(notes)


def _rss(memory: MemoryFootprint) -> str:
    if memory.peak_rss_bytes is None:
        return f"peak RSS not known ({memory.peak_rss_note})"
    scope = SCOPE.get(memory.peak_rss_scope or "", "")
    return f"peak RSS {PEAK_RSS.text(memory.peak_rss_bytes)} {scope}".rstrip()


def _arena(memory: MemoryFootprint) -> str:
    if memory.arena_bytes is not None:
        return f"arena {PEAK_RSS.text(memory.arena_bytes)}"
    return f"arena {memory.arena_note or 'not known'}"


def _devices(memory: MemoryFootprint) -> str:
    if not memory.devices:
        return f"device memory: {memory.device_note or 'none reported'}"
    return "device memory: " + ", ".join(_device(d) for d in memory.devices)


def _device(device: DeviceMemory) -> str:
    used = DEVICE_MEMORY.text(device.used_bytes)
    total = "" if device.total_bytes is None else f" of {DEVICE_MEMORY.text(device.total_bytes)}"
    return f"{device.device} {used}{total} in use, all processes ({device.source})"
