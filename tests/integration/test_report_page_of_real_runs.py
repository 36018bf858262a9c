"""`harness report` of real tiny-model runs: the page a buyer reads, from real result files."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from tests.conftest import TINY_OFFLINE, TINY_SS, harness_printed, write_scenario

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Path:
    """A report of a SingleStream trials group of two and one Offline run, made once."""
    tmp_path = tmp_path_factory.mktemp("report-page")
    ss = write_scenario(tmp_path / "ss.yaml", TINY_SS)
    offline = write_scenario(tmp_path / "offline.yaml", TINY_OFFLINE)
    with pytest.MonkeyPatch.context() as patch:  # the session's model cache, as conftest's
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        trials = harness_printed(["run", str(ss), "--trials", "2", "--out", str(tmp_path / "runs")])
        single = harness_printed(["run", str(offline), "--out", str(tmp_path / "runs")])
    dirs = [trials.strip().splitlines()[-1], single.strip().splitlines()[-1]]
    harness_printed(["report", *dirs, "--out", str(tmp_path / "report")])
    return tmp_path / "report"


def test_the_report_of_real_runs_opens_with_what_was_measured(report: Path) -> None:
    text = (report / "report.md").read_text()
    lines = text.splitlines()
    assert lines[0].startswith("# tiny fp32 · SingleStream, Offline on ")
    rows = [line for line in lines if re.match(r"\| \[\d\]\(#c\d", line)]
    assert len(rows) == 2
    # SingleStream's row gives the early-stopping p90 in ms, Offline's its samples/s.
    assert re.search(r"\| early-stopping p90 latency \(ms\) \| \d+\.\d{3} \| 2/2 VALID", rows[0])
    assert re.search(r"\| throughput \(samples/s\) \| [\d,]+\.\d \| 1/1 VALID", rows[1])
    assert "## Contents" in text and "## Machines" in text


def test_every_link_of_the_page_resolves(report: Path) -> None:
    page = (report / "report.html").read_text()
    assert "<script" not in page and not re.search(r'(src|href)="(https?:|//)', page)
    ids = set(re.findall(r' id="([^"]+)"', page))
    targets = re.findall(r'href="([^"]+)"', page)
    assert targets
    # relative to the page, as in report.md: the report moves with its results
    assert not [t for t in targets if t.startswith("file:")]
    logs = 0
    for target in targets:
        if target.startswith("#"):
            assert target[1:] in ids, target
            continue
        url = urlparse(target)
        path = Path(unquote(url.path)) if url.scheme == "file" else report / unquote(target)
        assert path.is_file(), target
        logs += path.name == "mlperf_log_summary.txt"
    assert logs == 3  # one per run
    assert len(re.findall(r'<img width="\d+" height="\d+" src="data:image/png', page)) >= 2
