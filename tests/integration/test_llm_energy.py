"""Energy per output token of a real llm-tiny LoadGen run, over a fake RAPL sysfs tree.

The tree (tests/fixtures/telemetry/rapl-2socket, copied) is the adapter's boundary: the
harness's own RAPL reader finds its zones under the temp root. Each counter holds BEFORE when
the window opens, and AFTER from just after it (the test's stand-in for the hardware drawing
energy while LoadGen runs). So each source's energy over the window is exactly
AFTER - BEFORE µJ (dram-0 wraps at max_energy_range_uj: AFTER + range - BEFORE), and its
energy per token (AFTER - BEFORE) / 1000 / tokens mJ, where tokens is the SUT's own count of
what it generated. A SUT that tells LoadGen twice its tokens gets no better figure; a machine
with no RAPL says "not measured: <reason>" in result.json, show, report and compare.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.analysis.accuracy import write_accuracy_block
from harness.analysis.genaccuracy import generative_accuracy
from harness.cli import main
from harness.config import load_scenario
from harness.execution import genrunner
from harness.loadgen.gensut import GenerativeSUT
from harness.records.job import Job
from harness.records.layout import ACCURACY_DIR
from harness.records.request import Expectation, RunRequest
from harness.records.result import RunResult
from harness.records.telemetry import SourceSummary
from harness.results.runfile import write_result
from harness.stopping import Phases
from harness.telemetry.window import TelemetryWindow
from tests.conftest import REPO, write_scenario

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
pytestmark = pytest.mark.slow

SCENARIO = """
name: llm-tiny-energy
scenario: Offline
model: {zoo: llm-tiny}
generation:
  input_tokens: {min: 8, max: 24}
  output_tokens: {min: 6, max: 14}
  hold_eos: true
  max_active: 4
data: {total_sample_count: 16}
warmup: {min_queries: 2, min_duration_ms: 0}
quick: {min_duration_ms: 300, min_query_count: 16, performance_sample_count: 16}
"""
# The same run in LoadGen's other generative scenarios: each ends in the same window.
OTHER_SCENARIOS = {
    "Offline": SCENARIO,
    "SingleStream": SCENARIO.replace("scenario: Offline", "scenario: SingleStream").replace(
        "  max_active: 4\n", ""
    ),
    "Server": SCENARIO.replace("scenario: Offline", "scenario: Server").replace(
        "  max_active: 4\n",
        "  max_active: 4\n  limits: {ttft_ms: 500, tpot_ms: 100}\nserver: {target_qps: 20}\n",
    ),
}
ZONES = {  # the fixture's zone directory of each source the harness names
    "cpu-package-0": "intel-rapl:0",
    "dram-0": "intel-rapl:0/intel-rapl:0:1",
    "cpu-package-1": "intel-rapl:1",
    "dram-1": "intel-rapl:1/intel-rapl:1:0",
}
MAX_RANGE_UJ = 262_143_328_850
BEFORE = {
    "cpu-package-0": 1_000_000,
    "dram-0": MAX_RANGE_UJ - 1_500_000,  # wraps inside the window
    "cpu-package-1": 50_000_000,
    "dram-1": 7_000,
}
AFTER = {
    "cpu-package-0": 13_345_678,
    "dram-0": 2_500_000,
    "cpu-package-1": 50_000_000,
    "dram-1": 1_007_000,
}
DELTA_UJ = {
    "cpu-package-0": 12_345_678,
    "dram-0": 4_000_000,
    "cpu-package-1": 0,  # idle: no energy, no figure
    "dram-1": 1_000_000,
}


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(REPO / "tests/fixtures/telemetry/rapl-2socket", root)
    _set(root, BEFORE)
    return root


def _set(root: Path, values: dict[str, int]) -> None:
    base = root / "sys/class/powercap"
    for name, value in values.items():
        (base / ZONES[name] / "energy_uj").write_text(f"{value}\n")


def _metered(root: Path, after: dict[str, int] | None) -> Callable[..., TelemetryWindow]:
    """TelemetryWindow over `root`; its counters move to `after` once the window is open."""

    class Metered(TelemetryWindow):
        def __init__(self, hw: str, config: Any) -> None:
            if after is not None:  # each attempt's window starts from BEFORE
                _set(root, BEFORE)
            super().__init__(hw, config, root=root)

        def open(self) -> None:
            super().open()  # reads BEFORE: the window's start
            if after is not None:
                _set(root, after)

    return Metered


def _doubled(source: SourceSummary) -> SourceSummary:
    """A source that spent twice the energy per token."""
    mj, per_joule = source.energy_per_token_mj, source.tokens_per_joule
    if mj is None or per_joule is None:
        return source
    return dataclasses.replace(source, energy_per_token_mj=mj * 2, tokens_per_joule=per_joule / 2)


class InflatingSUT(GenerativeSUT):
    """The cheat: tells LoadGen twice the tokens it generated."""

    def reported_tokens(self, n_tokens: int) -> int:
        return 2 * n_tokens


def _run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    root: Path,
    *,
    after: dict[str, int] | None,
    sut: type[GenerativeSUT] = GenerativeSUT,
    text: str = SCENARIO,
) -> tuple[RunResult, Path]:
    monkeypatch.setattr(genrunner, "TelemetryWindow", _metered(root, after))
    monkeypatch.setattr(genrunner, "GenerativeSUT", sut)
    scenario = load_scenario(write_scenario(tmp_path / "energy.yaml", text))
    request = RunRequest(scenario=scenario, scenario_path=None, profile="quick", hw="cpu")
    run_dir = tmp_path / "run"
    (run_dir / ACCURACY_DIR).mkdir(parents=True)
    write_accuracy_block(generative_accuracy(None), run_dir / ACCURACY_DIR)  # FP32: itself
    job = Job(request=request, test="performance", run_dir=run_dir)
    out = genrunner.run_generative(job, phases=Phases("performance", "start"))
    if isinstance(out, Expectation):  # LoadGen's first attempt was sized too small
        job = dataclasses.replace(job, expected=out, attempt=2)
        out = genrunner.run_generative(job, phases=Phases("performance", "start"))
    assert isinstance(out, RunResult)
    write_result(out, run_dir)
    return out, run_dir


def test_energy_per_token_is_the_counter_delta_over_the_suts_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    result, run_dir = _run(tmp_path, monkeypatch, _tree(tmp_path), after=AFTER)
    assert result.generation is not None and result.generation.output_tokens is not None
    telemetry = result.telemetry
    assert telemetry is not None and telemetry.tokens is not None
    tokens = result.generation.output_tokens.total
    assert telemetry.tokens.output_tokens == tokens > 0
    assert telemetry.tokens.not_measured is None
    for name in ("cpu-package-0", "dram-0", "dram-1"):
        source = telemetry.sources[name]
        assert source.method == "energy counter"
        assert source.energy_j == pytest.approx(DELTA_UJ[name] / 1e6, rel=1e-12)
        assert source.energy_per_token_mj == round(DELTA_UJ[name] / 1000 / tokens, 6)
        assert source.tokens_per_joule == pytest.approx(tokens / (DELTA_UJ[name] / 1e6), 1e-6)
    idle = telemetry.sources["cpu-package-1"]
    assert (idle.energy_per_token_mj, idle.tokens_per_joule) == (None, None)
    assert idle.null_reasons["energy_per_token_mj"].startswith("not measured: ")
    # The window opens at LoadGen's sample load and closes at its unload: the SUT's first
    # issue and last completion lie inside it, within a fraction of a second of its edges.
    assert 0 <= telemetry.tokens.issue_gap_ms < 1000
    assert 0 <= telemetry.tokens.completion_gap_ms < 1000
    window_ms = telemetry.window.duration_s * 1000
    span_ms = (telemetry.tokens.last_completion_ns - telemetry.tokens.first_issue_ns) / 1e6
    gaps = telemetry.tokens.issue_gap_ms + telemetry.tokens.completion_gap_ms
    assert span_ms + gaps == pytest.approx(window_ms, abs=1.0)

    assert main(["show", str(run_dir)]) == 0
    shown = capsys.readouterr().out
    per_token = telemetry.sources["cpu-package-0"].energy_per_token_mj
    assert f"cpu-package-0 {per_token:,.3f} mJ/token" in shown
    assert "ms before LoadGen's first issue" in shown
    assert main(["show", str(run_dir), "--json"]) == 0
    assert '"telemetry.sources.dram-0.tokens_per_joule"' in capsys.readouterr().out
    assert main(["report", str(run_dir), "--out", str(tmp_path / "report")]) == 0
    report = (tmp_path / "report" / "report.md").read_text()
    assert f"cpu-package-0 {per_token:,.3f} mJ/token" in report  # the summary table's energy
    per_joule = telemetry.sources["cpu-package-0"].tokens_per_joule
    assert f"| run | cpu-package-0 | {per_token:,.3f} | {per_joule:,.2f} | {tokens:,} |" in report

    # compare: the catalogue rows, both sides and the ratio (a second run, twice the energy)
    other = tmp_path / "other"
    doubled = {name: _doubled(s) for name, s in telemetry.sources.items()}
    write_result(
        dataclasses.replace(
            result, telemetry=dataclasses.replace(telemetry, sources=doubled), run_id="other"
        ),
        other,
    )
    assert main(["compare", str(run_dir), str(other), "--json"]) == 0
    compared = capsys.readouterr().out
    assert '"telemetry.sources.cpu-package-0.energy_per_token_mj"' in compared
    assert '"telemetry.sources.cpu-package-0.tokens_per_joule"' in compared


@pytest.mark.parametrize("scenario", ["SingleStream", "Server"])
def test_singlestream_and_server_take_the_same_energy_per_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str
) -> None:
    text = OTHER_SCENARIOS[scenario]
    result, _ = _run(tmp_path, monkeypatch, _tree(tmp_path), after=AFTER, text=text)
    assert result.scenario == scenario
    generation, telemetry = result.generation, result.telemetry
    assert generation is not None and generation.output_tokens is not None
    assert telemetry is not None and telemetry.tokens is not None
    tokens = generation.output_tokens.total
    assert telemetry.tokens.output_tokens == tokens > 0
    source = telemetry.sources["cpu-package-0"]
    assert source.energy_per_token_mj == round(DELTA_UJ["cpu-package-0"] / 1000 / tokens, 6)
    assert telemetry.tokens.issue_gap_ms >= 0 and telemetry.tokens.completion_gap_ms >= 0


def test_an_inflated_token_count_gets_no_better_energy_per_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, _ = _run(tmp_path, monkeypatch, _tree(tmp_path), after=AFTER, sut=InflatingSUT)
    generation, telemetry = result.generation, result.telemetry
    assert generation is not None and generation.output_tokens is not None
    assert telemetry is not None and telemetry.tokens is not None
    real = generation.output_tokens.total
    # LoadGen was told twice the tokens (its tokens/s doubled) and the token checks say so...
    told = generation.output_tokens_per_query
    assert told is not None and told == pytest.approx(2 * generation.output_tokens.mean, 0.1)
    assert not result.valid and generation.token_problems  # the token checks' finding
    # ...but the energy per token divides by the tokens the SUT generated.
    assert telemetry.tokens.output_tokens == real
    source = telemetry.sources["cpu-package-0"]
    assert source.energy_per_token_mj == round(DELTA_UJ["cpu-package-0"] / 1000 / real, 6)
    cheat_rate = DELTA_UJ["cpu-package-0"] / 1000 / (2 * real)
    assert source.energy_per_token_mj is not None and source.energy_per_token_mj > cheat_rate


def test_no_rapl_says_not_measured_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = tmp_path / "bare"  # a VM: no /sys/class/powercap
    bare.mkdir()
    result, run_dir = _run(tmp_path, monkeypatch, bare, after=None)
    telemetry = result.telemetry
    assert telemetry is not None and telemetry.tokens is not None
    assert dict(telemetry.sources) == {}
    why = telemetry.tokens.not_measured
    assert why is not None and why.startswith("not measured: rapl: no RAPL: ")
    assert "wall: no external meter given" in why
    assert main(["show", str(run_dir)]) == 0
    shown = capsys.readouterr().out
    assert "energy/tok  not measured: rapl: no RAPL" in shown
    assert main(["report", str(run_dir), "--out", str(tmp_path / "report")]) == 0
    report = (tmp_path / "report" / "report.md").read_text()
    assert "energy per output token not measured: rapl: no RAPL" in report
    html = (tmp_path / "report" / "report.html").read_text()
    assert "Energy per output token" in html and "not measured: rapl: no RAPL" in html
    assert " 0.000 mJ" not in shown and "| 0.000 |" not in report
