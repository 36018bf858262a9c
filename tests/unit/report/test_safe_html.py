"""harness.report.safe: one escaping path for pages and Markdown, links allowed by scheme.

Each refused URL is a trick a page could be made to carry; each is fed to the URL check, to
the link renderer and to the report text renderers. The Markdown the harness writes is read
back by a CommonMark renderer told to allow every link and raw HTML (the most lenient reader
a report.md may meet), and the HTML it makes must hold nothing live.
"""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from harness.report import safe
from harness.report.compare_render import render_compare_markdown
from harness.report.html import render_html
from harness.report.markdown import render_markdown
from harness.results.groups import load_group
from tests.conftest import REPO
from tests.html_audit import audit

REPORTS = REPO / "tests" / "fixtures" / "reports"

REFUSED = [
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "JAVASCRIPT:alert(1)",
    " javascript:alert(1)",
    "javascript:alert(1) ",
    "\tjavascript:alert(1)",
    "java\nscript:alert(1)",
    "java\tscript:alert(1)",
    "\x01javascript:alert(1)",
    "java\x00script:alert(1)",
    "javascript&#58;alert(1)",
    "javascript&#x3A;alert(1)",
    "javascript&colon;alert(1)",
    "&#x6A;avascript:alert(1)",
    "&#106;avascript:alert(1)",
    "&#0000106avascript:alert(1)",
    "%6Aavascript:alert(1)",
    "javascript%3Aalert(1)",
    "java%09script:alert(1)",
    "%26%23x6A;avascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "DATA:,x",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
    "ftp://example.com/x",
    "mailto:a@example.com",
    "blob:https://example.com/x",
    "unknown-scheme:x",
    "http:evil.example",
    "http://",
    "//evil.example/x",
    "%2F%2Fevil.example",
    "\\\\evil.example\\x",
    "/\\evil.example",
    "\\/evil.example",
    "a\\b",
    'x" onmouseover="alert(1)',
    "x' onmouseover='alert(1)",
    "<script>",
    "https://exämple.com",
    "https://example.com/\u202e",
    "",
]
ALLOWED = [
    "http://example.com",
    "https://example.com/a?b=1&c=2#d",
    "HTTPS://EXAMPLE.COM/",
    "#machine-b288c2bca45d0ed8",
    "../data/trials-epyc/trial-1/result.json",
    "entries/run-x/index.html",
    "report/report.md",
    "data/run%20x/a.txt",
    "/absolute/path.html",
    "?query=1",
]
HOSTILE_TEXT = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "' onmouseover='alert(1)' x='",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[x](javascript&#58;alert(1))",
    "[x](&#x6A;avascript:alert(1))",
    "[x](data:text/html,alert)",
    "[x](//evil.example/x)",
    "[x]: javascript:alert(1)",
    "\n\n[x]: javascript:alert(1)\n\n[x]",
    "[a [b] c](javascript:alert(1))",
    "![x](javascript:alert(1))",
    "<javascript:alert(1)>",
    "<a href='javascript:alert(1)'>x</a>",
    "<iframe src=javascript:alert(1)>",
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    "\\[x\\](javascript:alert(1))",
    "``[x](javascript:alert(1))`",
    "`\n\n<script>alert(1)</script>\n\n`",
    "a](javascript:alert(1)) [b",
    "&lt;script&gt;",
    "\x1b]0;pwned\x07\x1b[2J",
    "\u202eevil",
]


def _lenient_markdown(markdown: str) -> str:
    """What the most lenient CommonMark reader makes of it: raw HTML on, every link allowed."""
    reader = MarkdownIt("commonmark", {"html": True})
    reader.validateLink = lambda url: True  # type: ignore[method-assign]
    return str(reader.render(markdown))


def _hrefs(page: str) -> list[str]:
    found = audit(page)
    assert not found.live, found.live
    return _attributes(page, "href")


def _attributes(page: str, name: str) -> list[str]:
    from html.parser import HTMLParser

    values: list[str] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            values.extend(v or "" for n, v in attrs if n == name)

    Collect().feed(page)
    return values


@pytest.mark.parametrize("url", REFUSED, ids=[repr(u) for u in REFUSED])
def test_a_url_outside_the_grammar_is_never_linked(url: str) -> None:
    assert safe.url(url) is None
    assert "<a" not in safe.link(url, "label")
    assert safe.link(url, "label") == "label"
    page = safe.inline_html(f"see [label]({url}) here")
    assert "href" not in page
    assert not audit(page).live


@pytest.mark.parametrize("url", ALLOWED)
def test_relative_and_http_urls_are_linked_escaped(url: str) -> None:
    assert safe.url(url) == html.escape(url, quote=True)
    assert _hrefs(safe.link(url, "label")) == [url]
    assert _hrefs(safe.inline_html(f"[label]({url})")) == [url]


def test_text_and_attributes_escape_markup_and_show_control_characters() -> None:
    hostile = "<b>\"x\" & 'y'</b>\x1b]0;pwned\x07\u202e"
    shown = "&lt;b&gt;&quot;x&quot; &amp; &#x27;y&#x27;&lt;/b&gt;\\x1b]0;pwned\\x07\\u202e"
    assert safe.text(hostile) == shown
    assert safe.attribute(hostile) == shown
    assert "\x1b" not in safe.text(hostile)


@pytest.mark.parametrize("hostile", HOSTILE_TEXT, ids=[repr(h) for h in HOSTILE_TEXT])
def test_hostile_report_text_is_text_in_html(hostile: str) -> None:
    page = safe.inline_html(f"before {hostile} after [contents](#contents)")
    assert not audit(page).live
    assert _hrefs(page) == ["#contents"]
    text = "".join(audit(page).text)
    # every character is there to read; a `code` span only loses its backticks
    assert text.replace("`", "") == f"before {_shown(hostile)} after contents".replace("`", "")


@pytest.mark.parametrize("hostile", HOSTILE_TEXT, ids=[repr(h) for h in HOSTILE_TEXT])
def test_hostile_report_text_is_text_in_markdown(hostile: str) -> None:
    markdown = safe.inline_markdown(f"before {hostile} after [contents](#contents)")
    page = _lenient_markdown(markdown)
    assert _hrefs(page) == ["#contents"], (markdown, page)
    assert not audit(page).live, (markdown, page)


@pytest.mark.parametrize("hostile", HOSTILE_TEXT, ids=[repr(h) for h in HOSTILE_TEXT])
def test_a_value_in_markdown_reads_as_itself(hostile: str) -> None:
    page = _lenient_markdown(f"- {safe.markdown_text(hostile)}")
    assert _hrefs(page) == []
    found = audit(page)
    assert not found.live
    # a Markdown list item folds its newlines into spaces; every other character survives
    assert " ".join(_shown(hostile).split()) == " ".join("".join(found.text).split())


def test_a_label_crafted_to_close_the_link_leaves_only_the_harness_link() -> None:
    title = "a](javascript:alert(1)) [b"
    item = f"[{title}](#c1-a)"  # how the report lists a section in its contents
    page = safe.inline_html(item)
    assert page == '[a](javascript:alert(1)) <a href="#c1-a">b</a>'
    markdown = _lenient_markdown(safe.inline_markdown(item))
    assert _hrefs(markdown) == ["#c1-a"]


def _shown(value: str) -> str:
    """How a value reads on a page: its control characters as escapes."""
    from harness.text import printable

    return printable(value)


def _hostile_copy(tmp_path: Path, name: str, values: dict[str, str]) -> Path:
    """A copy of a fixture group, each of its JSON string values in `values` replaced."""
    copy = tmp_path / name
    shutil.copytree(REPORTS / name, copy)
    for path in copy.rglob("*.json"):
        data = json.loads(path.read_text())
        path.write_text(json.dumps(_replaced(data, values)))
    return copy


def _replaced(data: Any, values: dict[str, str]) -> Any:
    if isinstance(data, dict):
        return {k: _replaced(v, values) for k, v in data.items()}
    if isinstance(data, list):
        return [_replaced(v, values) for v in data]
    return values.get(data, data) if isinstance(data, str) else data


HOSTILE_RUN = {
    "tiny-ss-test": '[x](javascript:alert(1)) <script>alert(1)</script> "><img src=x onerror=1>',
    "AMD EPYC": "a](javascript:alert(1)) [b \x1b]0;pwned\x07",
}


def test_a_report_of_hostile_records_holds_nothing_live(tmp_path: Path) -> None:
    group = load_group(_hostile_copy(tmp_path, "trials-epyc", HOSTILE_RUN))
    out = tmp_path / "report"
    page = render_html([group], out_dir=out)
    found = audit(page)
    assert not found.live and not found.scripts
    text = "".join(found.text)
    assert _shown(HOSTILE_RUN["tiny-ss-test"]) in text
    assert "a](javascript:alert(1)) [b \\x1b]0;pwned\\x07" in text
    assert "\x1b" not in page
    markdown = render_markdown([group], images_dir=out / "images")
    assert "\x1b" not in markdown
    rendered = _lenient_markdown(markdown)
    assert not audit(rendered).live
    assert all(safe.url(h) is not None for h in _hrefs(rendered))
    assert _shown(HOSTILE_RUN["tiny-ss-test"]) in "".join(audit(rendered).text)


def test_compare_markdown_of_hostile_records_holds_nothing_live(tmp_path: Path) -> None:
    from harness.analysis.compare import compare

    hostile = load_group(_hostile_copy(tmp_path, "trials-epyc", HOSTILE_RUN))
    markdown = render_compare_markdown(compare([hostile, load_group(REPORTS / "trials-xeon")]))
    rendered = _lenient_markdown(markdown)
    assert not audit(rendered).live and _hrefs(rendered) == []
    assert _shown(HOSTILE_RUN["tiny-ss-test"]) in "".join(audit(rendered).text)


LIVE_PAGES = [
    '<a href="javascript:alert(1)">x</a>',
    '<a href=" JaVaScRiPt:alert(1)">x</a>',
    '<a href="java&#x0A;script:alert(1)">x</a>',
    '<a href="&#x6A;avascript:alert(1)">x</a>',
    '<a href="javascript&amp;#58;alert(1)">x</a>',
    '<a href="%6Aavascript:alert(1)">x</a>',
    '<a href="//evil.example">x</a>',
    '<a href="\\\\evil.example">x</a>',
    '<img src="x" onerror="alert(1)">',
    '<svg onload="alert(1)"></svg>',
    "<script>alert(1)</script>",
    '<iframe src="https://example.com"></iframe>',
    '<object data="x.swf"></object>',
    '<embed src="x.swf">',
    '<base href="https://evil.example/">',
    '<meta http-equiv="Refresh" content="0;url=https://evil.example">',
    '<form action="javascript:alert(1)"><button formaction="data:,x">x</button></form>',
    '<iframe srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;"></iframe>',
    '<img src="data:image/svg+xml,<svg onload=alert(1)>">',
    '<div style="background: url(javascript:alert(1))">x</div>',
]


@pytest.mark.parametrize("page", LIVE_PAGES)
def test_the_audit_finds_each_live_construct(page: str) -> None:
    found = audit(page)
    assert found.live or found.scripts, page


def test_the_audit_passes_the_harness_own_data_uris_and_links() -> None:
    page = (
        '<link rel="icon" href="data:,"><img src="data:image/png;base64,iVBORw0KGgo=" alt="">'
        '<a href="#x">x</a><a href="../a%20b.txt">f</a><a href="https://example.com">e</a>'
    )
    assert audit(page).live == []
