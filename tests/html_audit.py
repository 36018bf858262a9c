"""A page audit for the hostile-input tests: what in a page the harness wrote could run code.

Read by html.parser (stdlib), as a browser reads the page: attribute values come back with
their character references decoded. The audit reports every element that can run script or
leave the page (script, iframe, object, embed, base, a refresh), every on* attribute, and
every URL attribute whose scheme, after decoding its references and percent-escapes again
and dropping whitespace and control characters, is neither http(s) nor absent (a relative
URL). It decides with its own rules, not with harness.report.safe's, so the two can disagree.
"""

from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

URL_ATTRIBUTES = frozenset(
    {"href", "src", "action", "formaction", "srcdoc", "xlink:href", "poster", "data"}
    | {"background", "cite", "longdesc", "ping", "srcset", "manifest", "codebase"}
)
ACTIVE_TAGS = frozenset(
    {"script", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "form"}
    | {"animate", "set", "foreignobject", "portal", "template", "noscript"}
)
# The data URIs the harness writes itself: its PNG figures and the site's empty favicon.
OWN_DATA = (("img", "src", "data:image/png;base64,"), ("link", "href", "data:,"))
OWN_PNG = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]+")
SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):")
DROPPED = re.compile(r"[\x00-\x20\x7f-\x9f\s]+")


@dataclass
class Findings:
    """What the audit of one page found: live constructs, the page's own scripts, its text."""

    live: list[str] = field(default_factory=list)
    scripts: list[tuple[str | None, str]] = field(default_factory=list)  # (src, inline body)
    text: list[str] = field(default_factory=list)


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found = Findings()
        self._script: list[str] | None = None
        self._script_src: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "script":
            self._script, self._script_src = [], values.get("src")
        elif tag in ACTIVE_TAGS:
            self.found.live.append(f"<{tag}> element")
        if tag == "meta" and values.get("http-equiv", "").lower() == "refresh":
            self.found.live.append("<meta http-equiv=refresh>")
        for name, value in values.items():
            self._attribute(tag, name, value)

    def _attribute(self, tag: str, name: str, value: str) -> None:
        if name.startswith("on"):
            self.found.live.append(f"<{tag} {name}=...>")
        if name == "style" and re.search(r"url\(|expression\(|javascript", value, re.I):
            self.found.live.append(f"<{tag} style={value!r}>")
        if name == "srcdoc":
            self.found.live.append(f"<{tag} srcdoc=...>")
        elif name in URL_ATTRIBUTES and not _allowed(tag, name, value):
            self.found.live.append(f"<{tag} {name}={value!r}>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.found.scripts.append((self._script_src, "".join(self._script)))
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script.append(data)
        else:
            self.found.text.append(data)


def _allowed(tag: str, name: str, value: str) -> bool:
    """http(s) or relative, after decoding as a lenient browser might; or one of our data URIs."""
    if any(tag == t and name == n and value.startswith(p) for t, n, p in OWN_DATA):
        return value == "data:," or bool(
            re.fullmatch(r"data:image/png;base64,[A-Za-z0-9+/=]+", value)
        )
    for _ in range(4):
        value = DROPPED.sub("", html.unescape(unquote(value)))
    lowered = value.lower().replace("\\", "/")
    if lowered.startswith("//"):
        return False
    scheme = SCHEME.match(lowered)
    return scheme is None or scheme.group(1) in ("http", "https")


def audit(page: str) -> Findings:
    """Every live construct in `page`, its scripts and its text."""
    parser = _Audit()
    parser.feed(page)
    parser.close()
    return parser.found


def sha256(text: str) -> str:
    """The hex sha256 of a text's UTF-8 bytes: how an allowed script is named."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def foreign_scripts(found: Findings, page: Path, own: dict[str, str]) -> list[str]:
    """The scripts of a page that are not ours: ours are `own` (file name -> sha256), by src.

    A script of ours has no inline body, and its src names a file beside or above the page
    whose content has the recorded hash.
    """
    return [
        f"<script src={src!r}>{body[:40]!r}"
        for src, body in found.scripts
        if body.strip() or not src or not _ours((page.parent / src).resolve(), own)
    ]


def _ours(target: Path, own: dict[str, str]) -> bool:
    return target.is_file() and own.get(target.name) == sha256(target.read_text())
