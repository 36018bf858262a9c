r"""The one way text reaches what the harness writes for browsers: HTML pages and Markdown files.

Every page (report.html, compare.html, every site page) writes each value with `text` or
`attribute`, and each link's target through `url`, which allows a URL by its scheme
(STYLE 15): http(s) and relative references, never a blacklist. Markdown files (report.md,
compare.md) write each value with `markdown_text`. All of them first make control and bidi
characters visible (harness.text.printable), so ESC shows as `\x1b` there too.

Report text (the blocks of harness.report.document) is plain text with the two inline
constructs the harness writes itself: `code` and [label](url). A link whose URL `url` refuses
is not a link: it is shown as the text it was, escaped.

Grammar of a URL that may be linked:
    URL      = ABSOLUTE | RELATIVE, written only in RFC 3986 characters
               (A-Z a-z 0-9 - . _ ~ : / ? # [ ] @ ! $ & ' ( ) * + , ; = %): no space, control,
               backslash, quote, angle bracket or non-ASCII character
    ABSOLUTE = ("http" | "https", in any case) "://" HOST ...   (HOST: not empty)
    RELATIVE = anything with no scheme (no "name:" before the first "/", "?" or "#") that
               does not start with "//" (protocol-relative: another host)
The same must hold, but for the character set, of the URL read as a lenient browser might:
its HTML character references and percent-escapes decoded (again, up to DECODE_ROUNDS times)
and its whitespace and control characters dropped, with no backslash left (browsers read
`\` as `/`). So `javascript&#58;x`, `&#x6A;avascript:x`, `javascript&colon;x`,
`%6Aavascript:x`, `java\nscript:x`, ` JaVaScRiPt:x`, `//evil` and `\\evil` are never links;
neither are `data:`, `vbscript:`, `file:` or any other scheme. The harness's own data URIs
(the report's PNG figures, the site's empty favicon) are constants of their modules, never
passed through here.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from urllib.parse import unquote

from harness.text import printable

# Inline markup of report text: `code` and [label](url).
# Neither spans a line: a blank line would end a Markdown paragraph inside the construct.
INLINE = re.compile(r"`([^`\n]+)`|\[([^\[\]\n]+)\]\(([^()\s]+)\)")
URL_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")
SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
ABSOLUTE = re.compile(r"https?://[^/?#]+([/?#].*)?", re.IGNORECASE | re.DOTALL)
# What a browser drops from a URL before reading it: leading/trailing C0 and space, inner
# tabs and newlines; here every whitespace and control character, anywhere.
DROPPED = re.compile(r"[\x00-\x20\x7f-\x9f\s]+")
DECODE_ROUNDS = 4
# Markdown: what must be escaped for a value to stay text in any CommonMark reader.
# `<` only before what opens a tag, comment or autolink; `&` only before what makes a reference;
# `]` only before what makes it close a link's text or a reference definition.
MARKDOWN_SPECIAL = re.compile(r"[\\`]|<(?=[A-Za-z/!?])|&(?=[A-Za-z0-9#])|\](?=[(\[:])")
MARKDOWN_ESCAPES = {"<": "&lt;", "&": "&amp;"}


def text(value: str) -> str:
    """`value` as HTML text: `<`, `>`, `&` and quotes escaped, control characters shown."""
    return html.escape(printable(value), quote=True)


def attribute(value: str) -> str:
    """`value` for a double-quoted HTML attribute (the harness quotes every attribute)."""
    return html.escape(printable(value), quote=True)


def url(value: str) -> str | None:
    """`value` escaped for an href or src, if the grammar above allows it; else None."""
    if not URL_CHARACTERS.fullmatch(value) or not _allowed(value):
        return None
    decoded = _decoded(value)
    if decoded is None or "\\" in decoded or not _allowed(decoded):
        return None
    return attribute(value)


def link(href: str, label: str) -> str:
    """An <a> element, its label escaped; the label alone, as text, if `href` is refused."""
    target = url(href)
    return text(label) if target is None else f'<a href="{target}">{text(label)}</a>'


def inline_html(value: str) -> str:
    """Report text as HTML: `code` as <code>, allowed [label](url) as links, the rest text."""
    out = []
    for plain, code, label, target in _pieces(value):
        if code is not None:
            out.append(f"<code>{text(code)}</code>")
        elif label is not None and target is not None and url(target) is not None:
            out.append(link(target, label))
        else:
            out.append(text(plain))
    return "".join(out)


def inline_markdown(value: str) -> str:
    """Report text as Markdown: its `code` and allowed links kept, everything else text."""
    out = []
    for plain, code, label, target in _pieces(value):
        if code is not None:
            out.append(f"`{printable(code)}`")
        elif label is not None and target is not None and url(target) is not None:
            out.append(f"[{markdown_text(label)}]({target})")
        else:
            out.append(markdown_text(plain))
    return "".join(out)


def markdown_text(value: str) -> str:
    """`value` as Markdown that reads as itself: no link, image, raw HTML or code span.

    Backslashes and backticks are escaped; a `<` that could open a tag or an autolink and an
    `&` that could start a character reference are written as references (`&lt;`, `&amp;`);
    a `]` that could close a link's text or a reference's label (before `(`, `[` or `:`) is
    escaped. What is left cannot form a link, an image, raw HTML or a code span.
    """
    return MARKDOWN_SPECIAL.sub(_markdown_escape, printable(value))


def _markdown_escape(match: re.Match[str]) -> str:
    found = match.group()
    return MARKDOWN_ESCAPES.get(found, f"\\{found}")


def _pieces(value: str) -> Iterator[tuple[str, str | None, str | None, str | None]]:
    """(source text, code, label, url) of each piece of report text, in order."""
    position = 0
    for match in INLINE.finditer(value):
        if match.start() > position:
            yield value[position : match.start()], None, None, None
        code, label, target = match.groups()
        yield match.group(), code, label, target
        position = match.end()
    if position < len(value):
        yield value[position:], None, None, None


def _allowed(value: str) -> bool:
    """Whether `value` is an http(s) URL or a relative reference that stays on this host."""
    if value.startswith("//"):
        return False
    scheme = SCHEME.match(value)
    return scheme is None or ABSOLUTE.fullmatch(value) is not None


def _decoded(value: str) -> str | None:
    """`value` as a lenient reader might take it; None if it still changes after the rounds."""
    for _ in range(DECODE_ROUNDS):
        decoded = DROPPED.sub("", html.unescape(unquote(value)))
        if decoded == value:
            return decoded
        value = decoded
    return None
