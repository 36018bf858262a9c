"""How far a reproduction may land from the recorded value: `--tolerance offline=3%,latency=5%`."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from harness.errors import ConfigError

ToleranceKey = Literal["throughput", "latency"]
# The names --tolerance takes: `offline` is the throughput tolerance under its usual name
# (Offline and Server are both judged by samples/s).
KEYS: dict[str, ToleranceKey] = {
    "offline": "throughput",
    "throughput": "throughput",
    "latency": "latency",
}
DEFAULT_THROUGHPUT = 0.03
DEFAULT_LATENCY = 0.05
_PERCENT = re.compile(r"(\d+(?:\.\d+)?|\.\d+)%")


@dataclass(frozen=True, kw_only=True)
class Tolerance:
    """Allowed relative distance of the recorded value from the reproduction's median."""

    throughput_fraction: float = DEFAULT_THROUGHPUT
    latency_fraction: float = DEFAULT_LATENCY

    def __post_init__(self) -> None:
        for name in ("throughput_fraction", "latency_fraction"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 <= value <= 1):
                raise ValueError(f"{name}: must be 0..1 (0 % to 100 %), got {value}")

    def fraction(self, key: ToleranceKey) -> float:
        """The tolerance of a metric kind."""
        return self.throughput_fraction if key == "throughput" else self.latency_fraction

    def describe(self) -> str:
        """As --tolerance takes it: `offline=3%,latency=5%`."""
        return (
            f"offline={_percent_text(self.throughput_fraction)},"
            f"latency={_percent_text(self.latency_fraction)}"
        )


def parse_tolerance(text: str | None) -> Tolerance:
    """`offline=3%,latency=5%` (either part may be left out: its default stays).

    Every problem is a one-line ConfigError naming the part that is wrong.
    """
    if text is None:
        return Tolerance()
    given: dict[ToleranceKey, float] = {}
    for part in text.split(","):
        key, value = _part(part.strip(), text)
        if key in given:
            raise ConfigError(
                f"--tolerance: {part.strip()!r} sets the {key} tolerance a second time; "
                "give it once"
            )
        given[key] = value
    return Tolerance(
        throughput_fraction=given.get("throughput", DEFAULT_THROUGHPUT),
        latency_fraction=given.get("latency", DEFAULT_LATENCY),
    )


def _part(part: str, text: str) -> tuple[ToleranceKey, float]:
    example = "e.g. --tolerance offline=3%,latency=5%"
    if not part:
        raise ConfigError(f"--tolerance: {text!r} has an empty part; {example}")
    name, sep, value = part.partition("=")
    if not sep:
        raise ConfigError(f"--tolerance: {part!r} is not KEY=PERCENT; {example}")
    key = KEYS.get(name.strip())
    if key is None:
        raise ConfigError(
            f"--tolerance: {part!r}: unknown key {name.strip()!r} (allowed: {', '.join(KEYS)})"
        )
    match = _PERCENT.fullmatch(value.strip())
    if match is None:
        raise ConfigError(
            f"--tolerance: {part!r}: {value.strip()!r} is not a percentage such as 3% or 2.5%"
        )
    percent = float(match.group(1))
    if percent > 100:
        raise ConfigError(f"--tolerance: {part!r}: must be 0% to 100%, got {value.strip()}")
    return key, percent / 100


def _percent_text(fraction: float) -> str:
    return f"{fraction * 100:g}%"
