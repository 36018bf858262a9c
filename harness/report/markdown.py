"""report.md: the report's blocks as Markdown, their PNGs written beside it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.files import atomic_write_bytes
from harness.records.group import Group
from harness.records.loadsweep import LoadSweep
from harness.records.published import PublishedResult
from harness.report.badges import TrustOf
from harness.report.blocks import Image, block_markdown
from harness.report.document import build_report


def render_markdown(
    groups: Sequence[Group],
    *,
    images_dir: Path,
    published: Sequence[PublishedResult] = (),
    trust: TrustOf | None = None,
    loads: Sequence[tuple[LoadSweep, str]] = (),
) -> str:
    """The report as Markdown, its PNGs written to images_dir; published results at the end.

    Images are linked as `<images_dir name>/<file>`, and each run's raw files relative to
    images_dir's parent: write the Markdown there.
    """
    blocks = build_report(groups, published, links_from=images_dir.parent, trust=trust, loads=loads)
    images_dir.mkdir(parents=True, exist_ok=True)
    for block in blocks:
        if isinstance(block, Image):
            atomic_write_bytes(images_dir / block.name, block.png)
    return "\n\n".join(block_markdown(b, images_dir.name) for b in blocks) + "\n"
