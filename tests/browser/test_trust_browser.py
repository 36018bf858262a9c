"""Trust on the site, in a real browser: each status of a mixed tree of real runs, from the DOM.

The tree (tests/trust_tree.py): quick and submission-marked runs, a group stopped by Ctrl-C,
an IMPLAUSIBLE run, the shipped bundle whose TEST01 and TEST04 failed, a reproduced bundle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.site.build import build_site
from tests.browser.conftest import HEIGHT_PX, WIDTH_PX
from tests.trust_tree import Tree, build_tree

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SCREENSHOTS = Path(__file__).parent / "screenshots"  # git-ignored


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Tree:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        return build_tree(tmp_path_factory.mktemp("trust-browser"))


@pytest.fixture(scope="module")
def site(tree: Tree, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trust-browser-site") / "site"
    build_site([tree.root], out, trust=tree.trusted, judge=tree.judge)
    return out


def _board(driver: Any, board: str) -> list[dict[str, Any]]:
    """Each shown row of a leaderboard: its tier, its result's label, its badges by key."""
    rows: list[dict[str, Any]] = driver.execute_script(
        """
        return Array.from(document.querySelectorAll('#' + arguments[0] + ' tbody tr'))
          .filter(tr => !tr.hidden)
          .map(tr => ({
            tier: tr.querySelector('[data-tier]').getAttribute('data-tier'),
            label: tr.cells[1].innerText.trim(),
            badges: Object.fromEntries(Array.from(tr.querySelectorAll('span[data-trust]'))
              .map(s => [s.dataset.trust, [s.innerText.trim(), s.dataset.level,
                                           s.getAttribute('title') || '']])),
            colour: getComputedStyle(tr.querySelector('[data-tier]')).color,
          }));
        """,
        board,
    )
    return rows


def test_the_leaderboard_shows_every_status_from_the_dom(
    driver: Any, tree: Tree, site: Path
) -> None:
    driver.set_window_size(WIDTH_PX, HEIGHT_PX)
    driver.get((site / "index.html").as_uri())
    rows = _board(driver, "lb-tiny-singlestream")
    assert [r["tier"] for r in rows] == [
        "submission-valid",
        "quick profile",
        "failed a check",
        "incomplete",
    ]
    by_name = {
        name: next(r for r in rows if name in r["label"])
        for name in (tree.submission.name, tree.quick.name, tree.cheat.name, tree.interrupted.name)
    }
    assert by_name[tree.submission.name]["badges"]["profile"][:2] == ["submission-valid", "good"]
    assert by_name[tree.quick.name]["badges"]["profile"][:2] == ["quick profile", "warn"]
    implausible = by_name[tree.cheat.name]["badges"]["physics"]
    assert implausible[:2] == ["IMPLAUSIBLE", "bad"] and "3153 %" in implausible[2]
    incomplete = by_name[tree.interrupted.name]["badges"]["incomplete"]
    assert incomplete[:2] == ["INCOMPLETE", "bad"]
    assert incomplete[2].startswith("1 of 2 trials; interrupted: trial-2 interrupted (Ctrl-C)")
    # red for what failed, as the stylesheet draws it
    assert by_name[tree.interrupted.name]["colour"] == "rgb(165, 14, 14)"
    (shipped,) = _board(driver, "lb-resnet50-singlestream")
    assert shipped["tier"] == "failed a check"
    assert shipped["badges"]["TEST01"][:2] == ["TEST01 FAIL", "bad"]
    assert shipped["badges"]["TEST04"][:2] == ["TEST04 FAIL", "bad"]
    assert shipped["badges"]["bundle"][:2] == ["verified, trusted signer", "good"]
    verdict = json.loads((tree.reproduction / "reproduction.json").read_text())["verdict"]
    offline = _board(driver, "lb-tiny-offline")
    assert [r["badges"]["reproduction"][0] for r in offline] == [verdict, verdict]
    driver.execute_script("document.getElementById('leaderboards').scrollIntoView();")
    SCREENSHOTS.mkdir(exist_ok=True)
    assert driver.save_screenshot(str(SCREENSHOTS / "trust-index.png"))


def test_an_entry_page_opens_with_its_headline_and_verdicts(
    driver: Any, tree: Tree, site: Path
) -> None:
    from selenium.webdriver.common.by import By

    driver.get((site / "index.html").as_uri())
    link = next(
        a
        for a in driver.find_elements(By.CSS_SELECTOR, "#results-table a")
        if a.text == tree.interrupted.name
    )
    link.click()
    card = driver.find_element(By.CSS_SELECTOR, "section.card")
    headline = card.find_element(By.CSS_SELECTOR, ".headline-value").text
    assert headline.endswith(" ms") and float(headline.split()[0].replace(",", "")) > 0
    tier = card.find_element(By.CSS_SELECTOR, "[data-tier]").get_attribute("data-tier")
    assert tier == "incomplete"
    found = {
        s.get_attribute("data-trust"): s.text
        for s in card.find_elements(By.CSS_SELECTOR, "dl.verdicts span[data-trust]")
    }
    assert found["incomplete"] == "INCOMPLETE" and found["profile"] == "quick profile"
    assert found["reproduction"] == "not reproduced" and found["bundle"] == "not verified"
    reasons = card.find_element(By.CSS_SELECTOR, "dl.verdicts").text
    assert "1 of 2 trials; interrupted" in reasons
