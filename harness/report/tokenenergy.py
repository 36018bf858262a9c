"""A generative run's energy per output token as text: per source, and the window's alignment."""

from __future__ import annotations

from harness.records.group import Group
from harness.records.metrics import PER_TOKEN, TOKENS_PER_JOULE, per_source
from harness.records.result import RunResult
from harness.records.telemetry import TokenWindow
from harness.report.blocks import Block, Heading, Para, Table

NEVER_OPENED = "not measured: the telemetry window never opened"


def _window(tokens: TokenWindow) -> str:
    return (
        f"{tokens.output_tokens:,} output tokens (the SUT's count); window opened "
        f"{tokens.issue_gap_ms:.3f} ms before LoadGen's first issue, closed "
        f"{tokens.completion_gap_ms:.3f} ms after its last completion"
    )


def _per_source(result: RunResult) -> list[str]:
    """Each source that measured it, as "<source> <mJ> mJ/token, <n> tokens/J"."""
    telemetry = result.telemetry
    parts: list[str] = []
    for name, source in sorted((telemetry.sources if telemetry else {}).items()):
        mj, per_j = source.energy_per_token_mj, source.tokens_per_joule
        if mj is not None and per_j is not None:
            parts.append(
                f"{name} {per_source(name, PER_TOKEN).format(mj)} mJ/token, "
                f"{per_source(name, TOKENS_PER_JOULE).format(per_j)} tokens/J"
            )
    return parts


def energy_text(result: RunResult) -> str | None:
    """A generative run's energy per output token in one line; None for other runs."""
    if result.generation is None:
        return None
    telemetry = result.telemetry
    tokens = None if telemetry is None else telemetry.tokens
    if tokens is None:
        return NEVER_OPENED
    parts = _per_source(result)
    if not parts:
        return f"{tokens.not_measured or 'not measured'}; {_window(tokens)}"
    return f"{'; '.join(parts)}; {_window(tokens)}"


def energy_rows(result: RunResult) -> list[tuple[str, str]]:
    """The summary's "energy/tok" row of a generative run; none for other runs."""
    text = energy_text(result)
    return [] if text is None else [("energy/tok", text)]


def energy_blocks(group: Group) -> list[Block]:
    """The report's energy per output token of a generative group, per run and source."""
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    for label, _, result in group.labelled(group.runs):
        if result.generation is None:
            continue
        telemetry = result.telemetry
        tokens = None if telemetry is None else telemetry.tokens
        if tokens is None or telemetry is None:
            notes.append(f"{label}: energy per output token {NEVER_OPENED}")
            continue
        measured = [
            (name, s)
            for name, s in sorted(telemetry.sources.items())
            if s.energy_per_token_mj is not None
        ]
        for name, s in measured:
            rows.append(
                (
                    label,
                    name,
                    per_source(name, PER_TOKEN).format(s.energy_per_token_mj),
                    per_source(name, TOKENS_PER_JOULE).format(s.tokens_per_joule),
                    f"{tokens.output_tokens:,}",
                    f"{tokens.issue_gap_ms:.3f}",
                    f"{tokens.completion_gap_ms:.3f}",
                )
            )
        if not measured:
            why = tokens.not_measured or "not measured"
            notes.append(f"{label}: energy per output token {why}")
    if not rows and not notes:
        return []
    blocks: list[Block] = [Heading(3, "Energy per output token")]
    if rows:
        header = (
            "run",
            "source",
            "energy per token (mJ)",
            "tokens/J",
            "output tokens",
            "window start to first issue (ms)",
            "last completion to window end (ms)",
        )
        blocks.append(Table(header, tuple(rows)))
    blocks += [Para(f"{note}.") for note in notes]
    blocks.append(
        Para(
            "Energy over LoadGen's measured window (its sample load to unload), divided by the "
            "output tokens the SUT generated and counted itself, never the count it told LoadGen."
        )
    )
    return blocks
