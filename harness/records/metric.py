"""One metric of the catalogue (harness.records.metrics): the type, and how numbers read.

A Metric says where its value is, how people see it, which way is better and how it spreads;
the catalogue holds the rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SpreadRule = Literal["trials", "beside", "none"]
# A time or a rate: its change reads "faster" or "slower"; any other metric "better" or "worse".
SPEED_UNITS = frozenset({"ns", "us", "ms", "s", "samples/s", "queries/s", "tokens/s", "TFLOP/s"})


@dataclass(frozen=True, kw_only=True)
class Metric:
    """One metric: where its value is, how people see it, which way is better, how it spreads.

    Shown value = stored value * `scale`, in `unit`; a table formats it with `spec`. Spread
    rules: "trials", its spread over a group's trials is checked (CoV, outliers) and recorded
    in trials.json; "beside", checked for the report only, beside its number, in
    throughput's words when it spreads as throughput does (it is throughput times a constant
    of the model and machine); "none", it has no spread to check (a constant of the
    hardware, or the untimed warm-up).
    """

    key: str
    label: str
    unit: str
    higher_is_better: bool
    scale: float = 1.0
    spec: str = ",.2f"
    spread: SpreadRule = "trials"
    published: str | None = None  # its path in published.json; None: a published result lacks it
    path: tuple[str, ...] = ()  # its path from a result, where the key's dots would mislead
    stored_unit: str | None = None  # the stored value's unit where `scale` converts it

    @property
    def speed(self) -> bool:
        """A time or a rate: a change of it reads as faster or slower (else better or worse)."""
        return self.unit in SPEED_UNITS

    @property
    def value_unit(self) -> str:
        """The unit of the stored value (ns for a latency shown in ms)."""
        return self.stored_unit or self.unit

    @property
    def steps(self) -> tuple[str, ...]:
        """The attributes (or mapping keys) that lead from a result to its value."""
        return self.path or tuple(self.key.split("."))

    @property
    def name(self) -> str:
        """Its label: the name a trial's warning leads with."""
        return self.label

    @property
    def title(self) -> str:
        """Label with unit, e.g. "p90 latency (ms)"."""
        return f"{self.label} ({self.unit})"

    def shown(self, value: float) -> float:
        """A stored value in shown units; ns to ms divides by 1e6, exactly as people would."""
        inverse = 1 / self.scale
        return value / inverse if inverse.is_integer() else value * self.scale

    def format(self, value: float | None) -> str:
        """A stored value in shown units with the table's decimals, or "n/a"."""
        return "n/a" if value is None else format(self.shown(value), self.spec)

    def text(self, value: float) -> str:
        """A stored value as a sentence gives it: 3 significant digits and the unit ("2.51 ms")."""
        shown = self.shown(value)
        if self.unit in ("", "1"):
            return number(shown)
        digits = number(shown) if abs(shown) >= 100 else f"{shown:#.3g}".rstrip(".")
        return f"{digits} {self.unit}"


def number(value: float) -> str:
    """Stable text for a measured number: 2 decimals below 1000, whole numbers above."""
    return f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"


def percent(fraction: float) -> str:
    """A fraction as a percentage with one decimal ("7.3 %")."""
    return f"{fraction * 100:.1f} %"
