"""Like with like: the sides of a compare grouped by model and scenario, as the site's boards are.

A bundle or a fleet directory holds runs of several scenarios (a suite); compared as one
row, every side after the first of another scenario is "not comparable". So where an input
holds several results, `harness compare` pairs them: each LoadGen model key (a config name, so
Interactive is apart from Server) in each scenario is compared on its own, and a side no other
input ran is named, unpaired.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.analysis.published_side import Side
from harness.records.group import Group

Key = tuple[str, str]  # LoadGen's model key (its config name), LoadGen's scenario


@dataclass(frozen=True, kw_only=True)
class Pairing:
    """The sides' indices grouped: each group of two or more compared; the rest unpaired."""

    groups: tuple[tuple[int, ...], ...]
    unpaired: tuple[int, ...]
    keys: tuple[Key | None, ...]  # per side; None: a sweep that measured nothing


def side_key(side: Side) -> Key | None:
    """The site's board of a side: its LoadGen model key and scenario; None if it ran nothing.

    A local run's model key is its config name (`llm-tiny-interactive` for Interactive), a
    published record's the LoadGen model it states, so a local llama3_1-8b-shaped run and a
    published llama3.1-8b record share a board.
    """
    if not isinstance(side, Group):
        return side.model, side.scenario
    if not side.results:
        return None
    first = side.results[0]
    return first.loadgen_config.model_key, first.scenario


def describe_key(key: Key | None) -> str:
    """`llm-tiny Server`, as the site titles its board."""
    return "nothing measured" if key is None else f"{key[0]} {key[1]}"


def pair_sides(sides: Sequence[Side]) -> Pairing:
    """Group sides by key in the order each key is first seen; the input order kept within."""
    keys = tuple(side_key(s) for s in sides)
    order: dict[Key, list[int]] = {}
    alone: list[int] = []
    for index, key in enumerate(keys):
        if key is None:
            alone.append(index)
        else:
            order.setdefault(key, []).append(index)
    groups = tuple(tuple(i) for i in order.values() if len(i) > 1)
    alone += [i[0] for i in order.values() if len(i) == 1]
    return Pairing(groups=groups, unpaired=tuple(sorted(alone)), keys=keys)
