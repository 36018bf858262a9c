"""The site in a real browser: built from real tiny-model runs, opened from file://.

Screenshots land in tests/browser/screenshots/ (git-ignored); with BT_UPDATE_SCREENSHOTS=1
the README's two (docs/screenshots/) are taken again.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.published.importer import import_mlperf
from tests.browser.conftest import HEIGHT_PX, WIDTH_PX
from tests.conftest import (
    REPO,
    TINY_OFFLINE,
    TINY_SS,
    fleet_run_by_hand,
    harness_printed,
    write_scenario,
)
from tests.unit.test_published_import import FIXTURES, fixed_now

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SCREENSHOTS = Path(__file__).parent / "screenshots"
README_SHOTS = REPO / "docs" / "screenshots"
README_MAX_BYTES = 150_000
BUNDLE = (
    REPO
    / "results"
    / "published"
    / "2026-12-01-resnet50-open-2core-epyc-kvm-SingleStream.bundle.tar"
)
REFLOW_WIDTH_PX = 800


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Path:
    """A site of real runs: a trials group, a sweep, a fleet, a bundle, published results."""
    root = tmp_path_factory.mktemp("browser-site")
    results = root / "results"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        ss = write_scenario(root / "ss.yaml", TINY_SS)
        offline = write_scenario(root / "offline.yaml", TINY_OFFLINE)
        runs = str(results / "runs")
        assert main(["run", str(ss), "--trials", "2", "--out", runs]) in (0, 1)
        assert main(
            ["sweep", str(offline), "--batches", "1,2", "--out", str(results / "sweeps")]
        ) in (0, 1)
        fleet = fleet_run_by_hand(root, results / "fleets", trials=2)
        harness_printed(["fleet", "collect", str(fleet)])
    import_mlperf(FIXTURES, results / "published-imports", now=fixed_now)
    shutil.copy(BUNDLE, results / BUNDLE.name)
    out = root / "site"
    assert _harness_site([str(results), "--out", str(out)]) == 0
    return out


def _harness_site(argv: list[str]) -> int:
    """`harness site ARGV` through the verb's own parser and handler."""
    from harness.cli.site import add_site_verb

    parser = argparse.ArgumentParser(prog="harness")
    add_site_verb(parser.add_subparsers())
    args = parser.parse_args(["site", *argv])
    return int(args.func(args))


def _open(driver: Any, page: Path) -> None:
    driver.get(page.as_uri())
    driver.get_log("browser")  # empties the log of the page before


def _console_errors(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _broken_images(driver: Any) -> list[str]:
    return list(
        driver.execute_script(
            "return Array.from(document.images)"
            ".filter(i => !i.complete || i.naturalWidth === 0).map(i => i.alt || i.src);"
        )
    )


def _overflow_px(driver: Any) -> int:
    return int(
        driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth;"
        )
    )


def _rows(driver: Any, table: str) -> list[list[str]]:
    from selenium.webdriver.common.by import By

    body = driver.find_element(By.CSS_SELECTOR, f"#{table} tbody")
    return [
        [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
        for row in body.find_elements(By.TAG_NAME, "tr")
        if row.is_displayed()
    ]


def _shoot(driver: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    assert driver.save_screenshot(str(path))
    return path


def test_the_index_lists_every_kind_and_sorts_and_filters_a_leaderboard(
    driver: Any, site: Path
) -> None:
    from selenium.webdriver.common.by import By

    driver.set_window_size(WIDTH_PX, HEIGHT_PX)
    _open(driver, site / "index.html")
    assert driver.title == "beyond-tops results"
    kinds = {row[1] for row in _rows(driver, "results-table")}
    assert kinds == {"trials group", "sweep", "fleet", "bundle", "published MLPerf result"}
    # a bundled ResNet-50 run beside a published one: sort them by MLPerf's metric
    board = "lb-resnet50-singlestream"
    metric = 5  # the early-stopping p90 column
    written = [float(row[metric].replace(",", "")) for row in _rows(driver, board)]
    assert len(written) == 2 and written == sorted(written)  # best (lowest) first, as written
    header = driver.find_elements(By.CSS_SELECTOR, f"#{board} thead th button.sort")[metric]
    header.click()
    ascending = [float(row[metric].replace(",", "")) for row in _rows(driver, board)]
    assert ascending == sorted(ascending)
    header.click()
    descending = [float(row[metric].replace(",", "")) for row in _rows(driver, board)]
    assert descending == sorted(ascending, reverse=True)
    box = driver.find_element(By.CSS_SELECTOR, "#board-resnet50-offline input[type=search]")
    box.send_keys("intel")
    (only,) = _rows(driver, "lb-resnet50-offline")
    assert "Intel" in only[1]
    count = driver.find_element(By.CSS_SELECTOR, "#board-resnet50-offline .filter span").text
    assert count == "1 of 2 shown"
    assert _console_errors(driver) == []
    driver.execute_script("window.scrollTo(0, 0);")
    _shoot(driver, "index")


def test_links_lead_to_a_report_and_a_raw_log(driver: Any, site: Path) -> None:
    from selenium.webdriver.common.by import By

    _open(driver, site / "index.html")
    links = driver.find_elements(By.CSS_SELECTOR, "#lb-tiny-singlestream a")
    next(a for a in links if "-trials-" in a.text).click()
    assert driver.current_url.endswith("/report/report.html")
    assert driver.find_elements(By.TAG_NAME, "h1")
    assert _broken_images(driver) == []
    assert _console_errors(driver) == []
    _shoot(driver, "report")
    driver.find_element(By.LINK_TEXT, "this result's files").click()
    summary = driver.find_elements(By.LINK_TEXT, "mlperf_log_summary.txt")[0]
    summary.click()
    assert driver.current_url.endswith("/mlperf_log_summary.txt")
    assert "MLPerf Results Summary" in driver.find_element(By.TAG_NAME, "body").text


def test_every_page_loads_its_images_without_console_errors_and_reflows(
    driver: Any, site: Path
) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 10
    problems = []
    driver.set_window_size(REFLOW_WIDTH_PX, HEIGHT_PX)
    try:
        for page in pages:
            _open(driver, page)
            name = page.relative_to(site).as_posix()
            problems += [f"{name}: image not loaded: {i}" for i in _broken_images(driver)]
            problems += [f"{name}: console: {m}" for m in _console_errors(driver)]
            if _overflow_px(driver) > 0:
                problems.append(f"{name}: scrolls sideways at {REFLOW_WIDTH_PX} px")
        _open(
            driver, next(p for p in pages if p.parts[-3:-1] == ("compare", "resnet50-singlestream"))
        )
        _shoot(driver, "compare-800px")
    finally:
        driver.set_window_size(WIDTH_PX, HEIGHT_PX)
    assert problems == [], "\n".join(problems)


@pytest.mark.skipif(
    os.environ.get("BT_UPDATE_SCREENSHOTS") != "1", reason="set BT_UPDATE_SCREENSHOTS=1"
)
def test_the_readme_screenshots(driver: Any, site: Path) -> None:
    """The README's pictures of the index and of one report, small PNGs."""
    from selenium.webdriver.common.by import By

    driver.set_window_size(1100, 760)
    README_SHOTS.mkdir(parents=True, exist_ok=True)
    _open(driver, site / "index.html")
    driver.execute_script("document.getElementById('leaderboards').scrollIntoView();")
    _small_png(driver.get_screenshot_as_png(), README_SHOTS / "site-index.png")
    link = driver.find_element(By.CSS_SELECTOR, "#lb-tiny-singlestream tbody a")
    link.click()
    _small_png(driver.get_screenshot_as_png(), README_SHOTS / "site-report.png")
    driver.set_window_size(WIDTH_PX, HEIGHT_PX)


def _small_png(png: bytes, path: Path) -> None:
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=64)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    assert len(buffer.getvalue()) < README_MAX_BYTES
    path.write_bytes(buffer.getvalue())
