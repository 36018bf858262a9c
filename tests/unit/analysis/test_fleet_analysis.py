"""Fleet analysis: which nodes of a group are not alike, and which node is the odd one out."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from harness.analysis.fleet import (
    FACTS,
    Difference,
    NodeRun,
    describe_difference,
    heterogeneity,
)
from harness.analysis.fleet_outliers import (
    Outlier,
    describe_outlier,
    outliers,
    too_few_peers,
)
from harness.errors import ConfigError, ResultError
from harness.records.fingerprint import CPU_ID_KEYS, GPU_ID_KEYS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CONFIG = "tiny fp32 SingleStream batch 1"
LATENCY = "p90 latency (ms)"
THROUGHPUT = "samples/s"
NODES = ("node1", "node2", "node3", "node4")


def _fingerprint(relative: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / relative).read_text())["fingerprint"]
    return data


CPU_FP = _fingerprint("results/tiny-singlestream/result.json")
H100_FP = _fingerprint("reports/sweep-h100/bs-8/result.json")


def _fp(changes: Mapping[str, Any] | None = None, *, base: Mapping[str, Any] = CPU_FP) -> Any:
    """A copy of a recorded fingerprint with dotted paths ("cpu.model") set to new values."""
    data = copy.deepcopy(dict(base))
    for path, value in (changes or {}).items():
        *parents, leaf = path.split(".")
        target = data
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        target[leaf] = value
    return data


def _run(
    node: str,
    *,
    task: int = 0,
    value: float | None = 40.0,
    cov: float | None = None,
    fingerprint: Mapping[str, Any] = CPU_FP,
    partition: str | None = "debug",
    hw: str = "cpu",
    metric: str = LATENCY,
    higher_is_better: bool = False,
) -> NodeRun:
    return NodeRun(
        task=task,
        node=node,
        hw=hw,
        partition=partition,
        config=CONFIG,
        metric=metric,
        higher_is_better=higher_is_better,
        value=value,
        spread_cov=cov,
        fingerprint=fingerprint,
    )


def _fleet(fingerprints: Mapping[str, Mapping[str, Any]], **kwargs: Any) -> list[NodeRun]:
    return [
        _run(node, task=task, fingerprint=fp, **kwargs)
        for task, (node, fp) in enumerate(fingerprints.items())
    ]


# --- heterogeneity -----------------------------------------------------------------------------


def test_a_homogeneous_group_has_no_difference_though_volatile_facts_vary() -> None:
    volatile = {
        node: _fp(
            {
                "fingerprint_id": f"{i:016x}",
                "cpu.current_mhz": 2400.0 + i,
                "memory.available_bytes": 20_000_000_000 + i,
                "harness.git_dirty": i % 2 == 0,
            }
        )
        for i, node in enumerate(NODES)
    }
    assert heterogeneity(_fleet(volatile)) == []


@pytest.mark.parametrize(
    ("path", "usual", "odd", "fact", "shown"),
    [
        ("cpu.model", "EPYC 7763", "EPYC 7543", "CPU model", ("EPYC 7763", "EPYC 7543")),
        ("cpu.cores", 64, 32, "CPU cores", ("64", "32")),
        ("cpu.max_mhz", 3500, 2450, "CPU max clock (MHz)", ("3500", "2450")),
        ("cpu.governor", "performance", "powersave", "CPU governor", ("performance", "powersave")),
        ("cpu.turbo", True, False, "turbo", ("on", "off")),
        ("cpu.isa", ["avx2", "avx512f"], ["avx2"], "ISA flags", ("avx2 avx512f", "avx2")),
        ("os.kernel", "6.8.0-45", "5.15.0-1", "kernel", ("6.8.0-45", "5.15.0-1")),
        ("software.packages.onnxruntime", "1.20.1", "1.19.2", "onnxruntime", ("1.20.1", "1.19.2")),
    ],
)  # fmt: skip
def test_the_odd_node_is_named_with_every_nodes_value(
    path: str, usual: Any, odd: Any, fact: str, shown: tuple[str, str]
) -> None:
    fps = {node: _fp({path: odd if node == "node3" else usual}) for node in NODES}
    assert heterogeneity(_fleet(fps)) == [
        Difference(
            group="debug / cpu",
            fact=fact,
            values={"node1": shown[0], "node2": shown[0], "node3": shown[1], "node4": shown[0]},
        )
    ]


def test_another_gpu_driver_and_a_missing_gpu_are_named() -> None:
    fps = {
        "gpu1": _fp(base=H100_FP),
        "gpu2": _fp({"gpus.0.driver_version": "550.54.15"}, base=H100_FP),
        "gpu3": _fp({"gpus": [H100_FP["gpus"][0], H100_FP["gpus"][0]]}, base=H100_FP),
    }
    assert heterogeneity(_fleet(fps, hw="nvidia", partition="gpu")) == [
        Difference(
            group="gpu / nvidia", fact="GPU count", values={"gpu1": "1", "gpu2": "1", "gpu3": "2"}
        ),
        Difference(
            group="gpu / nvidia",
            fact="GPU driver",
            values={"gpu1": "570.86.15", "gpu2": "550.54.15", "gpu3": "570.86.15"},
        ),
    ]


def test_gpus_of_one_node_that_differ_are_listed_in_order() -> None:
    slow = {**H100_FP["gpus"][0], "power_limit_w": 350.0}
    fps = {
        "gpu1": _fp({"gpus": [H100_FP["gpus"][0], H100_FP["gpus"][0]]}, base=H100_FP),
        "gpu2": _fp({"gpus": [H100_FP["gpus"][0], slow]}, base=H100_FP),
    }
    assert heterogeneity(_fleet(fps, hw="nvidia")) == [
        Difference(
            group="debug / nvidia",
            fact="GPU power limit (W)",
            values={"gpu1": "700", "gpu2": "700, 350"},
        )
    ]


def test_memory_half_a_percent_apart_is_alike_ten_percent_is_not() -> None:
    total = 274_877_906_944  # 256 GiB
    close = {
        node: _fp({"memory.total_bytes": total - i * total // 200})
        for i, node in enumerate(NODES[:2])
    }
    far = {**close, "node3": _fp({"memory.total_bytes": total * 9 // 10})}
    assert heterogeneity(_fleet(close)) == []
    assert heterogeneity(_fleet(far)) == [
        Difference(
            group="debug / cpu",
            fact="memory (GiB)",
            values={"node1": "256.0", "node2": "254.7", "node3": "230.4"},
        )
    ]


def test_a_fact_one_node_knows_and_another_reports_missing_shows_as_unknown() -> None:
    fps = {node: _fp({"cpu.max_mhz": None if node == "node2" else 3500}) for node in NODES[:3]}
    assert heterogeneity(_fleet(fps)) == [
        Difference(
            group="debug / cpu",
            fact="CPU max clock (MHz)",
            values={"node1": "3500", "node2": "unknown", "node3": "3500"},
        )
    ]
    # The fixture's max clock is null on every node: nobody knows, nothing differs.
    assert CPU_FP["cpu"]["max_mhz"] is None
    assert heterogeneity(_fleet(dict.fromkeys(NODES, CPU_FP))) == []


def test_a_node_without_a_fingerprint_is_noted_once_not_per_fact() -> None:
    fps: dict[str, Mapping[str, Any]] = {"node1": CPU_FP, "node2": {}, "node3": CPU_FP}
    assert heterogeneity(_fleet(fps)) == [
        Difference(
            group="debug / cpu",
            fact="fingerprint",
            values={"node1": "recorded", "node2": "not recorded", "node3": "recorded"},
        )
    ]


def test_a_fact_absent_from_an_older_fingerprint_differs_from_nothing() -> None:
    older = _fp()
    del older["cpu"]["usable_cpus"]
    fps = {"node1": CPU_FP, "node2": older, "node3": _fp({"cpu.usable_cpus": 1})}
    assert heterogeneity(_fleet(fps)) == [
        Difference(
            group="debug / cpu",
            fact="usable CPUs",
            values={"node1": "2", "node2": "not recorded", "node3": "1"},
        )
    ]


def test_different_partitions_and_hardware_are_never_compared() -> None:
    runs = [
        _run("a1", task=0, partition="debug", fingerprint=_fp({"cpu.model": "AMD EPYC 7763"})),
        _run("a2", task=1, partition="debug", fingerprint=_fp({"cpu.model": "AMD EPYC 7763"})),
        _run("b1", task=2, partition="batch", fingerprint=_fp({"cpu.model": "AMD EPYC 7543"})),
        _run("b2", task=3, partition="batch", fingerprint=_fp({"cpu.model": "AMD EPYC 7543"})),
        _run("g1", task=4, partition="debug", hw="nvidia", fingerprint=H100_FP),
    ]
    assert heterogeneity(runs) == []


def test_a_node_whose_own_runs_disagree_is_a_finding_even_alone() -> None:
    runs = [
        _run("node1", task=0, fingerprint=_fp({"cpu.max_mhz": 3500})),
        _run("node1", task=3, fingerprint=_fp({"cpu.max_mhz": 2450})),
        _run("node1", task=5, fingerprint=_fp({"cpu.max_mhz": 3500})),
    ]
    assert heterogeneity(runs) == [
        Difference(group="debug / cpu", fact="CPU max clock (MHz)", values={"node1": "3500 | 2450"})
    ]


def test_differences_come_by_group_then_fact_with_nodes_in_natural_order() -> None:
    runs = [
        _run("n10", task=0, partition="p2", fingerprint=_fp({"cpu.cores": 8, "os.kernel": "6.1"})),
        _run("n2", task=1, partition="p2", fingerprint=_fp()),
        _run("x1", task=2, partition=None, fingerprint=_fp({"cpu.model": "Xeon"})),
        _run("x2", task=3, partition=None, fingerprint=_fp()),
        _run("n1", task=4, partition="p1", fingerprint=_fp({"cpu.governor": "performance"})),
        _run("n3", task=5, partition="p1", fingerprint=_fp({"cpu.governor": "powersave"})),
    ]
    found = [(d.group, d.fact, list(d.values)) for d in heterogeneity(runs)]
    assert found == [
        ("(unknown) / cpu", "CPU model", ["x1", "x2"]),
        ("p1 / cpu", "CPU governor", ["n1", "n3"]),
        ("p2 / cpu", "CPU cores", ["n2", "n10"]),
        ("p2 / cpu", "kernel", ["n2", "n10"]),
    ]


def test_every_comparability_key_but_the_vendor_is_a_compared_fact() -> None:
    paths = {fact.path for fact in FACTS}
    assert {f"cpu.{key}" for key in CPU_ID_KEYS if key != "vendor"} <= paths
    assert {f"gpus.{key}" for key in GPU_ID_KEYS if key != "vendor"} <= paths


def test_describe_difference_groups_nodes_by_value() -> None:
    difference = Difference(
        group="debug / cpu",
        fact="CPU model",
        values={"node1": "AMD EPYC 7763", "node2": "AMD EPYC 7763", "node3": "AMD EPYC 7543"},
    )
    assert describe_difference(difference) == (
        "debug / cpu: CPU model differs: node1, node2 'AMD EPYC 7763'; node3 'AMD EPYC 7543'"
    )


# --- outliers ----------------------------------------------------------------------------------


def _values(values: Mapping[str, float | None], **kwargs: Any) -> list[NodeRun]:
    return [
        _run(node, task=task, value=value, **kwargs)
        for task, (node, value) in enumerate(values.items())
    ]


FIVE_NODES = ("node1", "node2", "node3", "node4", "node5")


def test_a_node_25_percent_slower_on_latency_is_flagged_above_its_peers() -> None:
    runs = _values({node: 50.0 if node == "node3" else 40.0 for node in FIVE_NODES})
    assert outliers(runs) == [
        Outlier(
            config=CONFIG,
            hw="cpu",
            node="node3",
            task=2,
            metric=LATENCY,
            value=50.0,
            peers_median=40.0,
            deviation=0.25,
            slower=True,
            threshold=0.10,
            peers=4,
        )
    ]


def test_a_node_25_percent_slower_on_throughput_is_flagged_below_its_peers() -> None:
    values = {node: 75.0 if node == "node4" else 100.0 for node in FIVE_NODES}
    runs = _values(values, metric=THROUGHPUT, higher_is_better=True)
    [flagged] = outliers(runs)
    assert (flagged.node, flagged.value, flagged.peers_median) == ("node4", 75.0, 100.0)
    assert (flagged.deviation, flagged.slower) == (-0.25, True)


def test_a_faster_node_is_flagged_as_faster() -> None:
    runs = _values({node: 30.0 if node == "node1" else 40.0 for node in FIVE_NODES})
    [flagged] = outliers(runs)
    assert (flagged.node, flagged.deviation, flagged.slower) == ("node1", -0.25, False)


def test_a_node_5_percent_off_is_not_flagged() -> None:
    runs = _values({node: 42.0 if node == "node3" else 40.0 for node in FIVE_NODES})
    assert outliers(runs) == []


def test_a_noisy_group_raises_the_threshold_to_three_times_its_cov() -> None:
    slow = {node: 50.0 if node == "node3" else 40.0 for node in FIVE_NODES}
    slower = {node: 56.0 if node == "node3" else 40.0 for node in FIVE_NODES}
    assert outliers(_values(slow, cov=0.10)) == []
    [flagged] = outliers(_values(slower, cov=0.10))
    assert flagged.threshold == pytest.approx(0.30)
    assert flagged.deviation == pytest.approx(0.40)


def test_the_pooled_cov_is_the_root_mean_square_of_the_known_ones() -> None:
    covs = {"node1": 0.06, "node2": 0.08, "node3": math.nan, "node4": 0.06, "node5": None}
    runs = [
        _run(node, task=task, value=56.0 if node == "node3" else 40.0, cov=cov)
        for task, (node, cov) in enumerate(covs.items())
    ]
    [flagged] = outliers(runs)
    assert flagged.threshold == pytest.approx(3 * math.sqrt((2 * 0.06**2 + 0.08**2) / 3))


def test_min_deviation_and_spread_factor_are_the_callers_to_choose() -> None:
    runs = _values({node: 42.0 if node == "node3" else 40.0 for node in FIVE_NODES}, cov=0.01)
    [flagged] = outliers(runs, min_deviation=0.04, spread_factor=1.0)
    assert (flagged.node, flagged.threshold) == ("node3", 0.04)
    assert outliers(runs, min_deviation=0.0, spread_factor=6.0) == []


def test_two_nodes_give_no_outlier_but_a_note() -> None:
    runs = _values({"node1": 40.0, "node2": 50.0})
    assert outliers(runs) == []
    assert too_few_peers(runs) == [
        f"{CONFIG} / cpu: node2 is 25.0 % slower than node1 ({LATENCY} 50 vs 40); with only "
        "2 nodes neither can be called the odd one: run it on a third"
    ]


def test_two_nodes_on_throughput_name_the_lower_one_slower() -> None:
    runs = _values({"node1": 80.0, "node2": 100.0}, metric=THROUGHPUT, higher_is_better=True)
    assert too_few_peers(runs) == [
        f"{CONFIG} / cpu: node1 is 20.0 % slower than node2 ({THROUGHPUT} 80 vs 100); with only "
        "2 nodes neither can be called the odd one: run it on a third"
    ]


def test_two_nodes_that_agree_give_no_note_and_neither_do_three() -> None:
    assert too_few_peers(_values({"node1": 40.0, "node2": 42.0})) == []
    assert too_few_peers(_values({"node1": 40.0, "node2": 50.0, "node3": 40.0})) == []


def test_runs_without_a_value_are_skipped() -> None:
    values: dict[str, float | None] = {"node1": 40.0, "node2": None, "node3": 50.0}
    assert outliers(_values(values)) == []
    assert len(too_few_peers(_values(values))) == 1
    values = {**dict.fromkeys(FIVE_NODES, 40.0), "node2": None, "node5": math.nan, "node6": 50.0}
    [flagged] = outliers(_values(values))
    assert (flagged.node, flagged.peers, flagged.peers_median) == ("node6", 3, 40.0)


def test_a_node_with_several_tasks_counts_once_with_their_median() -> None:
    runs = [
        *_values({"node1": 40.0, "node2": 40.0, "node3": 40.0}),
        _run("node9", task=7, value=54.0),
        _run("node9", task=4, value=50.0),
        _run("node9", task=9, value=40.0),
    ]
    [flagged] = outliers(runs)
    assert (flagged.node, flagged.task, flagged.value, flagged.peers) == ("node9", 4, 50.0, 3)


def test_configurations_and_hardware_are_compared_apart() -> None:
    cpu = _values(dict.fromkeys(FIVE_NODES, 40.0))
    gpu = _values(dict.fromkeys(FIVE_NODES[:2], 4.0), hw="nvidia")
    assert outliers([*cpu, *gpu]) == []


def test_three_nodes_one_far_flags_only_the_far_one() -> None:
    # Against the median of all three (40), the normal nodes are 0 % off; a leave-one-out
    # median (45) would have flagged them as 11.1 % faster.
    found = outliers(_values({"node1": 40.0, "node2": 40.0, "node3": 50.0}))
    assert [(o.node, o.slower, round(o.deviation, 4), o.peers_median) for o in found] == [
        ("node3", True, 0.25, 40.0)
    ]


def test_one_configuration_with_two_metrics_is_an_error() -> None:
    runs = [*_values({"node1": 40.0, "node2": 40.0}), _run("node3", metric=THROUGHPUT)]
    with pytest.raises(ResultError, match=f"{CONFIG} / cpu disagree on the metric"):
        outliers(runs)


@pytest.mark.parametrize(("min_deviation", "spread_factor"), [(-0.1, 3.0), (0.1, -1.0)])
def test_negative_limits_are_refused(min_deviation: float, spread_factor: float) -> None:
    with pytest.raises(ConfigError, match="fleet outliers"):
        outliers(_values({"node1": 40.0}), min_deviation=min_deviation, spread_factor=spread_factor)


def test_describe_outlier_says_how_far_which_way_and_on_what() -> None:
    slow = Outlier(
        config=CONFIG,
        hw="cpu",
        node="node3",
        task=2,
        metric=LATENCY,
        value=41.2,
        peers_median=33.4,
        deviation=(41.2 - 33.4) / 33.4,
        slower=True,
        threshold=0.10,
        peers=5,
    )
    fast = Outlier(
        config="resnet50 fp16 Offline batch 32",
        hw="nvidia",
        node="gpu07",
        task=11,
        metric=THROUGHPUT,
        value=2871.4,
        peers_median=2304.0,
        deviation=(2871.4 - 2304.0) / 2304.0,
        slower=False,
        threshold=0.12,
        peers=7,
    )
    assert describe_outlier(slow) == (
        "node3 is 23.4 % slower than its 5 peers on tiny fp32 SingleStream batch 1 / cpu "
        "(p90 latency (ms) 41.2 vs median 33.4)"
    )
    assert describe_outlier(fast) == (
        "gpu07 is 24.6 % faster than its 7 peers on resnet50 fp16 Offline batch 32 / nvidia "
        "(samples/s 2,871 vs median 2,304)"
    )
