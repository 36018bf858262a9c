"""Issue #27: `harness compare` of real llm-tiny runs pairs like with like, by model and scenario.

Two runs of different scenarios are "not comparable" (exit 33). A bundle holds a suite's
scenarios: compared with itself, or with a lone run, each scenario is compared on its own
(tokens/s the headline) and a scenario no other input ran is named, unpaired.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import NOT_COMPARABLE, ConfigError
from tests.integration.llm_runs import llm_run

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> dict[str, Path]:
    """Real quick runs: Server, Offline, a second Offline; and a bundle of the first two."""
    tmp = tmp_path_factory.mktemp("compared")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        made = {
            "server": llm_run(tmp, "Server"),
            "offline": llm_run(tmp, "Offline"),
            "offline2": llm_run(tmp, "Offline", name="offline2"),
        }
    bundle, key = tmp / "suite.tar", tmp / "signer"
    assert main(["keygen", "--out", str(key)]) == 0
    args = [str(made["server"]), str(made["offline"]), "--key", str(key), "--out", str(bundle)]
    assert main(["bundle", *args]) == 0
    return {**made, "bundle": bundle}


def _compare(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["compare", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_runs_of_two_scenarios_are_not_comparable(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _compare([str(runs["server"]), str(runs["offline"])], capsys)
    assert code == NOT_COMPARABLE.code == 33
    assert "NOT COMPARABLE" in out and "scenario" in out


def test_two_offline_runs_compare_by_tokens_per_second(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _compare([str(runs["offline"]), str(runs["offline2"])], capsys)
    assert code == 0, out
    assert re.search(r"token throughput.*tokens/s", out), out


def test_a_bundle_with_itself_pairs_each_scenario(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = str(runs["bundle"])
    code, out, _ = _compare([bundle, bundle], capsys)
    assert code == 0, out
    sections = re.findall(r"^== (.+): (\d) results$", out, re.MULTILINE)
    assert sections == [("llm-tiny Server", "2"), ("llm-tiny Offline", "2")]
    assert "NOT COMPARABLE" not in out and "unpaired" not in out
    assert out.count("token throughput") >= 2


def test_a_bundle_beside_a_lone_run_pairs_what_matches_and_names_the_rest(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _compare([str(runs["bundle"]), str(runs["offline2"])], capsys)
    assert code == 0, out
    assert re.findall(r"^== (.+): (\d) results$", out, re.MULTILINE) == [("llm-tiny Offline", "2")]
    (unpaired,) = [line for line in out.splitlines() if line.startswith("unpaired: ")]
    assert "(llm-tiny Server): no other input ran this model in this scenario" in unpaired


def test_json_needs_one_scenario_and_every_like_side_joins_its_pair(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _compare([str(runs["bundle"]), str(runs["offline2"]), "--json"], capsys)
    assert code == ConfigError.exit_code
    code, out, _ = _compare([str(runs["bundle"]), str(runs["server"])], capsys)
    assert code == 0  # the bundle's Server with the lone Server run
    bundle_only = [str(runs["bundle"])]
    code, out, _ = _compare([*bundle_only, str(runs["offline2"]), str(runs["offline"])], capsys)
    assert code == 0 and "== llm-tiny Offline: 3 results" in out
