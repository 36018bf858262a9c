"""A load sweep in the report: latency against achieved rate (the knee marked), its table.

A generative model's sweep is drawn as its TTFT and TPOT percentiles, tokens/s and goodput
against the offered rate instead (harness.report.genloadplot).
"""

from __future__ import annotations

from harness.records.loadsweep import LoadSweep
from harness.report import plots
from harness.report.blocks import Block, Bullets, Heading, Image, Para, Table
from harness.report.cells import slug
from harness.report.genloadplot import token_load_plot
from harness.report.loadtext import bound_text, is_generative, load_header, load_rows, load_verdict

TOKEN_CAPTION = (
    "LoadGen's TTFT and TPOT p50, p90 and p99 (medians over each rate's trials) against the "
    "offered rate, completed tokens/s and goodput (queries that met both limits per second, "
    "from the SUT's stamps) below; dotted: the p99 limits, dashed: the knee; hollow points "
    "broke a limit or did not keep up (the queue grew)."
)


def load_blocks(sweep: LoadSweep, where: str) -> list[Block]:
    """The sweep's section: its plot, a row per rate, then the knee and why it stopped."""
    name = slug(f"load-{sweep.scenario_name}")
    return [
        Heading(2, f"Load sweep: {sweep.scenario_name} ({sweep.mode}, {bound_text(sweep)})", name),
        Para(f"Found at `{where}`: each rate is a trials group of its own (`qps-*/`)."),
        _image(sweep, name),
        Table(load_header(sweep), tuple(load_rows(sweep))),
        Bullets(tuple(load_verdict(sweep))),
    ]


def _image(sweep: LoadSweep, name: str) -> Image:
    if is_generative(sweep):
        return Image(
            name=f"{name}.png",
            png=token_load_plot(sweep),
            alt=f"TTFT, TPOT, tokens/s and goodput against rate, {sweep.scenario_name}",
            caption=TOKEN_CAPTION,
        )
    return Image(
        name=f"{name}.png",
        png=plots.load_png(sweep),
        alt=f"p50, p90 and p99 latency against achieved rate, {sweep.scenario_name}",
        caption="Latency percentiles against the achieved rate (log scale); the dotted "
        "line is the bound, the dashed one the knee; hollow points broke the bound.",
    )
