"""Cheating SUTs through the real pipeline, each caught by a named check; an honest SUT is not.

The cheats (tests/cheats/sitecustomize.py) wrap the executor in every worker process, on in
every mode: a cache by sample index and an SUT that answers once. The model depends on its
input (tests/cheats/matmul.py), as the caught checks need: a model that answers one class for
every input makes an answer-once SUT look right.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.errors import ERROR_CODES, ImplausibleError
from tests.cheats.matmul import write_matmul_model
from tests.conftest import REPO, write_scenario

pytestmark = pytest.mark.slow

SCENARIO = """
name: matmul-ss-cheats
scenario: SingleStream
model: {{path: {model}}}
batch_size: 1
trials: 1
runtime: {{intra_op_threads: 1}}
data: {{total_sample_count: 64}}
warmup: {{min_queries: 20, min_duration_ms: 300}}
quick: {{min_duration_ms: 1500, min_query_count: 200, performance_sample_count: 32}}
"""
OFFLINE = (
    SCENARIO.replace("name: matmul-ss-cheats", "name: matmul-offline-cheats")
    .replace("scenario: SingleStream\n", "scenario: Offline\n")
    .replace("batch_size: 1", "batch_size: 8")
)
CHEATS_PATH = REPO / "tests" / "cheats"


def _run(
    tmp: Path, cache: Path, cheat: str | None, text: str = SCENARIO
) -> tuple[Path, dict[str, Any], int, str]:
    """`harness run` then `harness compliance SWAP` with the cheat on in every worker."""
    model = write_matmul_model(tmp / "matmul.onnx")
    scenario = write_scenario(tmp / "s.yaml", text.format(model=model))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(cache))
        if cheat is not None:
            patch.setenv("BT_CHEAT", cheat)
            patch.setenv("PYTHONPATH", f"{CHEATS_PATH}:{REPO}")
        code = main(["run", str(scenario), "--out", str(tmp / "runs")])
        # a cheat's run exits 1 (IMPLAUSIBLE); an honest one 0, or 1 if LoadGen found it INVALID
        assert code == 1 if cheat is not None else code in (0, 1)
        (run,) = (tmp / "runs").iterdir()
        swap_code = main(["compliance", "SWAP", str(run)])
    result = json.loads((run / "result.json").read_text())
    swap = (run / "compliance" / "SWAP" / "verify_swap.txt").read_text()
    return run, result, swap_code, swap


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[Any]:
    yield _run(tmp_path_factory.mktemp("honest"), model_cache, None)


@pytest.fixture(scope="module")
def caching(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[Any]:
    yield _run(tmp_path_factory.mktemp("caching"), model_cache, "caching")


@pytest.fixture(scope="module")
def answer_once(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[Any]:
    yield _run(tmp_path_factory.mktemp("answer-once"), model_cache, "answer-once")


def _ratio(result: dict[str, Any]) -> float:
    plausibility = result["plausibility"]
    print(f"\n{result['run_id']}: {plausibility['figure']} -> {plausibility['verdict']}")
    return float(plausibility["ratio"])


def test_an_honest_sut_is_plausible_accurate_and_passes_the_swap_audit(honest: Any) -> None:
    _, result, swap_code, swap = honest
    assert result["valid"] is True and result["accuracy"]["passed"] is True
    assert result["plausibility"]["verdict"] == "plausible", result["plausibility"]
    assert _ratio(result) < 1.0  # batch-1 GEMMs of 64 x 256: below the probe's 1024^2 GEMM
    assert swap_code == 0, swap
    assert swap.endswith("TEST PASS\n") and "answered the index's earlier data (stale" in swap
    assert "answered the index's earlier data (stale: a cache) = 0" in swap


def test_a_cache_on_in_every_mode_is_implausible_and_fails_the_swap_audit(
    caching: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, result, swap_code, swap = caching
    # what LoadGen and the accuracy check see: VALID, and right answers (each sample once)
    assert result["valid"] is True and result["accuracy"]["passed"] is True
    # the physics check: far more FLOP/s than the GEMM probe measured
    assert result["plausibility"]["verdict"] == "IMPLAUSIBLE", result["plausibility"]
    assert _ratio(result) > result["plausibility"]["limit"] == 3.0
    assert result["submission_valid"] is False
    capsys.readouterr()
    assert main(["show", str(run)]) == 0
    assert "  physics     IMPLAUSIBLE: achieved " in capsys.readouterr().out
    # the SWAP audit: the cache answers the data each index held before
    assert swap_code == 1 and swap.endswith("TEST FAIL\n"), swap
    stale = int(swap.split("(stale: a cache) = ")[1].split()[0])
    informative = int(swap.split("changes the answer = ")[1].split()[0])
    assert informative >= 8 and stale >= 0.9 * informative, swap
    # and what may not travel: a bundle or an MLPerf tree of it
    assert main(["keygen", "--out", str(tmp_path / "key")]) == 0
    code = main(["bundle", str(run), "--key", str(tmp_path / "key"), "--out", str(tmp_path / "b")])
    assert code == ERROR_CODES[ImplausibleError].code == 29
    assert "IMPLAUSIBLE (achieved" in capsys.readouterr().err and not (tmp_path / "b").exists()
    args = ["submission", str(run), "--org", "o", "--system", "s", "--division", "open"]
    assert main([*args, "--force-quick", "--out", str(tmp_path / "tree")]) == 29


def test_an_sut_answering_once_fails_accuracy_and_the_swap_audit(answer_once: Any) -> None:
    _, result, swap_code, swap = answer_once
    accuracy = result["accuracy"]
    assert accuracy["passed"] is False, accuracy
    assert accuracy["against_fp32"]["top1_agreement"] < 0.2  # one class for 64 inputs
    assert result["submission_valid"] is False
    assert swap_code == 1 and swap.endswith("TEST FAIL\n"), swap
    current = int(swap.split("behind the index = ")[1].split()[0])
    informative = int(swap.split("changes the answer = ")[1].split()[0])
    assert current < 0.5 * informative, swap
    assert result["plausibility"]["verdict"] == "IMPLAUSIBLE"  # it infers nothing either
    _ratio(result)


def test_a_cache_in_offline_batches_is_caught_the_same_way(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path
) -> None:
    _, result, swap_code, swap = _run(
        tmp_path_factory.mktemp("offline"), model_cache, "caching", OFFLINE
    )
    assert result["scenario"] == "Offline" and result["accuracy"]["passed"] is True
    assert result["plausibility"]["verdict"] == "IMPLAUSIBLE", result["plausibility"]
    _ratio(result)
    assert swap_code == 1 and swap.endswith("TEST FAIL\n"), swap
