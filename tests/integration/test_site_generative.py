"""Issue #27: the site's LLM boards, from real llm-tiny runs and the published LLM fixtures.

An LLM board ranks by tokens/s and shows each row's p99 TTFT and TPOT against the limits it
was judged by, the token checks' verdict and the accuracy against FP32; a CNN board has
none of these columns; the published llama2-70b records sit on their own boards with their
logged TTFT and TPOT, the checks "not run here". A run whose token checks failed says so.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from harness.published.importer import import_mlperf
from harness.site.build import build_site
from tests.integration.llm_runs import llm_run
from tests.unit.test_published_import import FIXTURES, fixed_now

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
pytestmark = pytest.mark.slow
TOKEN_HEADER = '<th class="num" scope="col">TTFT p99 / limit (ms)</th>'


def _board(index: str, slug: str) -> str:
    found = re.search(rf'<section id="board-{slug}">.*?</section>', index, re.DOTALL)
    assert found is not None, slug
    return found.group(0)


def _rows(board: str) -> list[str]:
    return re.findall(r"<tr class=\"tier-.*?</tr>", board, re.DOTALL)


def test_llm_boards_show_token_latencies_limits_checks_and_accuracy(tmp_path: Path) -> None:
    results = tmp_path / "results"
    server = llm_run(results, "Server")
    llm_run(results, "Offline")
    cheated = results / "cheated" / server.name  # the same run, its token checks failed
    shutil.copytree(server, cheated)
    data = json.loads((cheated / "result.json").read_text())
    data["generation"]["token_problems"] = ["the SUT completed no query with tokens"]
    data["valid"] = False
    (cheated / "result.json").write_text(json.dumps(data))
    import_mlperf(FIXTURES, results / "published", now=fixed_now)
    build_site([results], tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text()

    board = _board(index, "llm-tiny-server")
    assert "token throughput (tokens/s)" in board and TOKEN_HEADER in board
    honest, failed = sorted(_rows(board), key=lambda r: "FAILED" in r)
    assert re.search(r">[\d.]+ / 500</td>", honest) and re.search(r">[\d.]+ / 100</td>", honest)
    assert "<td>passed</td>" in honest
    assert "NOT MEASURABLE" in honest  # FP32: the reference itself
    assert '<span class="bad">FAILED: the SUT completed no query with tokens</span>' in failed
    assert 'class="trust"' in honest and 'class="badge' in honest  # trust badges apply

    offline = _board(index, "llm-tiny-offline")
    (row,) = _rows(offline)
    assert TOKEN_HEADER in offline and ">n/a</td>" in row  # LoadGen measures no TTFT offline

    published = _board(index, "llama2-70b-99-server")
    assert TOKEN_HEADER in published
    (record,) = _rows(published)
    assert "not run here (a published record)" in record
    assert re.search(r">[\d.]+</td>", record)  # its logged TTFT p99, no limit stated

    cnn = _board(index, "resnet50-offline")
    assert "TTFT p99" not in cnn and "token checks" not in cnn
