"""`harness compare` of inputs that hold several scenarios (bundles, fleets): like with like.

Each model in each scenario is compared on its own (harness.analysis.pairing), as the site's
boards are; a side no other input ran is named, unpaired. The exit code is the worst of the
pairs': not comparable (33) where any pair is, or where nothing pairs; slower (34) where the
gate finds any pair slower; else 0.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from harness.analysis.pairing import Pairing, describe_key
from harness.analysis.published_side import Side
from harness.errors import NOT_COMPARABLE, SLOWER, ConfigError
from harness.records.trust import Trust
from harness.text import printable


def compare_by_scenario(
    pairs: Sequence[tuple[Side, Trust]],
    pairing: Pairing,
    args: argparse.Namespace,
    *,
    threshold: float | None,
    width: int,
) -> int:
    """Print one comparison per model and scenario; the exit code of the worst."""
    from harness.analysis.compare import compare
    from harness.analysis.regression import judge
    from harness.cli.scripting import machine_output
    from harness.report.compare_render import render_compare_text
    from harness.report.regression import regression_line

    if machine_output(args) or args.out is not None:
        raise ConfigError(
            f"compare: these inputs hold results of {len(pairing.groups) + len(pairing.unpaired)} "
            "models or scenarios; --json, --csv and --out take one set of like results: give "
            "the runs of one scenario (their directories inside the bundle or fleet)"
        )
    not_comparable = not pairing.groups
    slower = False
    for group in pairing.groups:
        comparison = compare([pairs[i][0] for i in group], trust=[pairs[i][1] for i in group])
        _say(f"== {describe_key(pairing.keys[group[0]])}: {len(group)} results")
        _say(render_compare_text(comparison, width=width))
        if not comparison.comparable:
            not_comparable = True
        elif threshold is not None:
            gate = judge(comparison, threshold)
            _say(regression_line(gate))
            slower = slower or gate.slower
    for index in pairing.unpaired:
        side = pairs[index][0]
        _say(
            f"unpaired: {side.label} ({describe_key(pairing.keys[index])}): no other input "
            "ran this model in this scenario"
        )
    if not pairing.groups:
        _say("nothing is compared: no two inputs ran the same model in the same scenario")
    if not_comparable:
        return NOT_COMPARABLE.code
    return SLOWER.code if slower else 0


def _say(text: str) -> None:
    print(printable(text), file=sys.stdout)
