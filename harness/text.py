r"""Untrusted text made harmless to print: control and bidi characters shown, never obeyed.

Grammar (issue #23): a string read from a record, a log or a foreign tree may hold any
character; what reaches a terminal (and every page or Markdown file the harness writes) holds
no C0 control but newline (so no ESC, BEL or carriage return: no window titles, screen clears
or overwritten lines), no DEL, no C1 control (CSI is U+009B on some terminals), no Unicode
bidi control (embeddings, overrides, isolates and marks reorder a line as it is read: "Trojan
Source", CVE-2021-42574) and no lone surrogate (what a non-UTF-8 file name decodes to; it
cannot be encoded for output). Each such character is written as its Python escape, so the
information stays visible: ESC as `\x1b`, U+202E as `\u202e`.
"""

from __future__ import annotations

import re

# C0 but newline, DEL and C1; the bidi controls (ALM, LRM, RLM, LRE..RLO, LRI..PDI); surrogates
_UNSAFE = "\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
UNSAFE = re.compile(f"[{_UNSAFE}]")
UNSAFE_OR_NEWLINE = re.compile(f"[{_UNSAFE}\n]")


def printable(text: str, *, newlines: bool = True) -> str:
    r"""`text` with every unsafe character written as its escape (`\x1b`, `\u202e`).

    Args:
        text: any string, from anywhere.
        newlines: keep newlines as they are; False writes them as `\n` too, for a value
            that must stay on its one line (a field of `harness show`).
    """
    pattern = UNSAFE if newlines else UNSAFE_OR_NEWLINE
    return pattern.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
