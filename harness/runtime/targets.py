"""Hardware targets as data: which execution providers each one runs, in one place."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import DeviceError


@dataclass(frozen=True, kw_only=True)
class HardwareTarget:
    """A hardware target: its onnxruntime package and execution-provider chain."""

    name: str
    ort_package: str
    providers: tuple[str, ...]


TARGETS: dict[str, HardwareTarget] = {
    "cpu": HardwareTarget(
        name="cpu", ort_package="onnxruntime", providers=("CPUExecutionProvider",)
    ),
}
PLANNED = ("nvidia", "rocm")


def get_target(name: str) -> HardwareTarget:
    """Look a target up by name; unknown or not-yet-supported names are one-line errors."""
    if name in TARGETS:
        return TARGETS[name]
    if name in PLANNED:
        raise DeviceError(
            f"HW={name}: GPU targets need the pinned Docker images, which this version does not "
            f"have yet; use HW=cpu"
        )
    raise DeviceError(f"HW={name}: unknown hardware target (known: {', '.join(TARGETS)})")
