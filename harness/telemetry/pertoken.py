"""Energy per output token of a generative run: each source's energy over the window, per token.

The divisor is the tokens the SUT generated and counted itself, never the count it told
LoadGen (a SUT that inflates that count must not look more efficient: the token checks of
harness.analysis.tokens catch the inflation, and the energy figures ignore it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from harness.records.telemetry import SourceUnavailable, TokenWindow

NOT_MEASURED = "not measured"


@dataclass(frozen=True, kw_only=True)
class TokenSpan:
    """What the SUT stamped: its output tokens, LoadGen's first issue and last completion (ns)."""

    output_tokens: int
    first_issue_ns: int
    last_completion_ns: int


def not_measured(reason: str) -> str:
    """The one wording of a figure with no value: "not measured: <reason>"."""
    return f"{NOT_MEASURED}: {reason}"


def missed(span: TokenSpan, window_start_ns: int, window_end_ns: int) -> str | None:
    """Why the window cannot stand for LoadGen's; None where it covers it.

    A window that opened after the first issue, or closed before the last completion, leaves
    out some of the work of the tokens it would be divided by: a figure that flatters.
    """
    if span.first_issue_ns < window_start_ns:
        early = (window_start_ns - span.first_issue_ns) / 1e6
        return f"LoadGen's first issue came {early:.3f} ms before the telemetry window opened"
    if span.last_completion_ns > window_end_ns:
        late = (span.last_completion_ns - window_end_ns) / 1e6
        return f"LoadGen's last completion came {late:.3f} ms after the telemetry window closed"
    return None


def per_token(
    energy_j: float | None, tokens: int, reasons: dict[str, str], outside: str | None = None
) -> tuple[float | None, float | None]:
    """(mJ per output token, output tokens per J); None with the reason for each where absent.

    ``outside``: why the window does not cover LoadGen's (missed()); no figure then.
    """
    if outside is not None:
        why = not_measured(outside)
    elif energy_j is None:
        why = not_measured(reasons.get("energy_j", "this source measured no energy"))
    elif tokens <= 0:
        why = not_measured("the SUT generated no output tokens in the window")
    elif energy_j <= 0:
        why = not_measured(f"the source's energy over the window is {energy_j:g} J")
    else:
        return round(energy_j * 1000 / tokens, 6), round(tokens / energy_j, 6)
    reasons["energy_per_token_mj"] = reasons["tokens_per_joule"] = why
    return None, None


def token_window(
    span: TokenSpan,
    *,
    window_start_ns: int,
    window_end_ns: int,
    per_source_mj: Mapping[str, float | None],
    unavailable: tuple[SourceUnavailable, ...],
    source_reasons: Mapping[str, str] | None = None,
) -> TokenWindow:
    """The run's tokens, the gaps between the window and LoadGen's, and why nothing was measured.

    A negative gap means the window missed part of LoadGen's: the SUT stamped an issue before
    the window opened, or a completion after it closed.
    """
    measured = any(v is not None for v in per_source_mj.values())
    if measured:
        why = None
    elif per_source_mj:
        said = source_reasons or {}
        each = [
            f"{name}: {said[name].removeprefix(NOT_MEASURED + ': ')}" if name in said else name
            for name in per_source_mj
        ]
        why = not_measured(f"no source measured energy per token ({'; '.join(each)})")
    else:
        missing = "; ".join(f"{u.source}: {u.reason}" for u in unavailable)
        why = not_measured(missing or "no power source on this machine")
    return TokenWindow(
        output_tokens=span.output_tokens,
        first_issue_ns=span.first_issue_ns,
        last_completion_ns=span.last_completion_ns,
        issue_gap_ms=round((span.first_issue_ns - window_start_ns) / 1e6, 3),
        completion_gap_ms=round((window_end_ns - span.last_completion_ns) / 1e6, 3),
        not_measured=why,
    )
