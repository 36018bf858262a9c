"""Issue #27: compare's sides paired like with like: by LoadGen model key and scenario."""

from __future__ import annotations

import dataclasses

from harness.analysis.pairing import describe_key, pair_sides
from harness.records.group import Group
from harness.results.groups import load_group
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "results" / "tiny-singlestream-v3"


def _as(group: Group, model_key: str, scenario: str) -> Group:
    (result,) = group.results
    config = dataclasses.replace(result.loadgen_config, model_key=model_key)
    changed = dataclasses.replace(result, loadgen_config=config, scenario=scenario)
    return dataclasses.replace(group, runs=dataclasses.replace(group.runs, results=(changed,)))


def test_sides_pair_by_model_key_and_scenario_and_the_rest_stay_unpaired() -> None:
    base = load_group(FIXTURE)
    sides = [
        _as(base, "llm-tiny", "Server"),
        _as(base, "llm-tiny", "Offline"),
        _as(base, "llm-tiny-interactive", "Server"),  # Interactive: not Server's pair
        _as(base, "llm-tiny", "Offline"),
        _as(base, "llm-tiny", "Server"),
    ]
    pairing = pair_sides(sides)
    assert pairing.groups == ((0, 4), (1, 3))
    assert pairing.unpaired == (2,)
    assert describe_key(pairing.keys[2]) == "llm-tiny-interactive Server"
    assert describe_key(None) == "nothing measured"


def test_like_sides_make_one_group() -> None:
    base = load_group(FIXTURE)
    pairing = pair_sides([base, base, base])
    assert len(pairing.groups) == 1 and pairing.groups[0] == (0, 1, 2) and not pairing.unpaired
