"""A load sweep in the report: latency against achieved rate (the knee marked), its table."""

from __future__ import annotations

from harness.records.loadsweep import LoadSweep
from harness.report import plots
from harness.report.blocks import Block, Bullets, Heading, Image, Para, Table
from harness.report.cells import slug
from harness.report.loadtext import LOAD_HEADER, bound_text, load_rows, load_verdict


def load_blocks(sweep: LoadSweep, where: str) -> list[Block]:
    """The sweep's section: its plot, a row per rate, then the knee and why it stopped."""
    name = slug(f"load-{sweep.scenario_name}")
    return [
        Heading(2, f"Load sweep: {sweep.scenario_name} (Server, {bound_text(sweep)})", name),
        Para(f"Found at `{where}`: each rate is a trials group of its own (`qps-*/`)."),
        Image(
            name=f"{name}.png",
            png=plots.load_png(sweep),
            alt=f"p50, p90 and p99 latency against achieved rate, {sweep.scenario_name}",
            caption="Latency percentiles against the achieved rate (log scale); the dotted "
            "line is the bound, the dashed one the knee; hollow points broke the bound.",
        ),
        Table(LOAD_HEADER, tuple(load_rows(sweep))),
        Bullets(tuple(load_verdict(sweep))),
    ]
