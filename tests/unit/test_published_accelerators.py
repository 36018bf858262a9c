"""Per-accelerator figures of published records: per node times nodes, never a guessed count."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.published.describe import describe
from harness.published.importer import import_mlperf
from harness.published.record import load_published
from harness.records.published import PublishedSystem, whole_count
from tests.unit.test_published_import import INTEL_RUN, fixed_now

DGX = PublishedSystem(
    id="dgx-h100-4node",
    name="4 x DGX H100",
    system_type="datacenter",
    status="available",
    processor="Intel Xeon Platinum 8480C",
    processors_per_node="2",
    accelerator="NVIDIA H100-SXM-80GB",
    accelerators_per_node="8",
    nodes="4",
    framework="TensorRT",
    software=None,
    operating_system=None,
)


def test_a_four_node_system_counts_every_nodes_accelerators() -> None:
    assert DGX.accelerator_count == 32
    assert DGX.devices == (
        "4 nodes x 2 x Intel Xeon Platinum 8480C",
        "4 nodes x 8 x NVIDIA H100-SXM-80GB",
    )


@pytest.mark.parametrize(
    ("per_node", "nodes", "count"),
    [("8", "1", 8), (" 8 ", "2", 16), ("8", None, None), (None, "1", None), ("eight", "1", None)],
)
def test_an_unstated_count_is_unknown_not_guessed(
    per_node: str | None, nodes: str | None, count: int | None
) -> None:
    system = dataclasses.replace(DGX, accelerators_per_node=per_node, nodes=nodes)
    assert system.accelerator_count == count


def test_whole_count_takes_positive_whole_numbers_only() -> None:
    assert [whole_count(t) for t in ("4", " 12", "0", "-1", "1.5", "", None)] == [
        4,
        12,
        None,
        None,
        None,
        None,
        None,
    ]


def test_show_gives_the_rate_per_accelerator_beside_the_systems(tmp_path: Path) -> None:
    (written,) = import_mlperf(INTEL_RUN, tmp_path, now=fixed_now).written
    record = load_published(written)
    rows = dict(describe(record))
    assert rows["accelerator"] == "none" and "per accelerator" not in rows  # a CPU system
    gpus = dataclasses.replace(record, system=DGX)
    rows = dict(describe(gpus))
    assert rows["accelerator"] == "4 nodes x 8 x NVIDIA H100-SXM-80GB = 32 in all"
    assert rows["per accelerator"] == f"{25289.6 / 32:,.2f} samples/s (32 accelerators)"
    unknown = dataclasses.replace(record, system=dataclasses.replace(DGX, nodes=None))
    rows = dict(describe(unknown))
    assert rows["per accelerator"].startswith("unknown")
    assert rows["accelerator"].endswith("(total not stated)")
