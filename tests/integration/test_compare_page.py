"""`harness compare` of real tiny-model runs: the verdict first, each scenario's own metrics,
80 columns in the terminal, and compare.md with a self-contained compare.html."""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.cli import main
from tests.conftest import TINY_OFFLINE, TINY_SS, harness_dir, write_scenario

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[list[Path]]:
    """Two SingleStream trials groups of two trials each, then one Offline run."""
    root = tmp_path_factory.mktemp("compare-page")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        ss = write_scenario(root / "ss.yaml", TINY_SS)
        offline = write_scenario(root / "offline.yaml", TINY_OFFLINE)
        made = [
            harness_dir(["run", str(ss), "--trials", "2", "--out", str(root / "runs")])
            for _ in range(2)
        ]
        made.append(harness_dir(["run", str(offline), "--out", str(root / "runs")]))
        yield made


def test_singlestream_groups_make_a_page_and_fit_80_columns(
    groups: list[Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out_dir = tmp_path / "cmp"
    assert main(["compare", str(groups[0]), str(groups[1]), "--out", str(out_dir)]) == 0
    text = capsys.readouterr().out
    assert [line for line in text.splitlines() if len(line) > 80] == []
    assert text.index("Verdict: COMPARABLE") < text.index("early-stopping p90 latency")
    assert "throughput" not in text and "samples/s)" not in text
    page = (out_dir / "compare.html").read_text()
    markdown = (out_dir / "compare.md").read_text()
    assert markdown.index("**Verdict: COMPARABLE") < markdown.index("| early-stopping p90")
    assert page.index("Verdict: COMPARABLE") < page.index("<svg") < page.index('class="metrics"')
    sources = _sources(page)
    assert sources == [] and "http" not in page
    assert page.count('class="ci"') >= 4  # two trials a side: an interval for each latency


def test_singlestream_against_offline_compares_nothing_and_says_so_first(
    groups: list[Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["compare", str(groups[0]), str(groups[2])]) == 33  # not comparable
    text = capsys.readouterr().out
    assert text.index("Verdict: NOT COMPARABLE") < text.index("scenario: 'SingleStream'")
    assert "nothing is compared" in text
    assert "latency (ms)" not in text and "samples/s)" not in text
    assert f"{groups[0].name} vs {groups[2].name}: scenario: 'SingleStream' != 'Offline'" in (
        text.replace("\n    ", " ")
    )


class _Sources(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [str(v) for k, v in attrs if k in ("src", "href")]


def _sources(page: str) -> list[str]:
    parser = _Sources()
    parser.feed(page)
    return parser.found
