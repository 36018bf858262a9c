"""Short real llm-tiny runs through `harness run`, for the tests of what reads their results."""

from __future__ import annotations

from pathlib import Path

from harness.cli import main
from harness.errors import INVALID
from tests.conftest import write_scenario

SCENARIO = """
name: llm-tiny-{name}
scenario: {scenario}
model: {{zoo: llm-tiny}}
trials: {trials}
generation:
  input_tokens: {{min: 8, max: 24}}
  output_tokens: {{min: 4, max: 12}}
  hold_eos: true
  {extra}
{server}
data: {{total_sample_count: 16}}
warmup: {{min_queries: 4, min_duration_ms: 0}}
quick: {{min_duration_ms: 1000, min_query_count: {queries}, performance_sample_count: 16}}
"""
SERVER_LIMITS = "limits: {ttft_ms: 500, tpot_ms: 100}\n  max_active: 3"


def llm_run(tmp: Path, kind: str, *, trials: int = 1, name: str | None = None) -> Path:
    """A quick real llm-tiny run (Offline, SingleStream, Server): its run (or group) directory."""
    # Server: enough queries for LoadGen's early stopping at p99 (459 or more within the limits)
    server = "server: {target_qps: 200}" if kind == "Server" else ""
    queries = 500 if kind == "Server" else 16
    extra = SERVER_LIMITS if kind == "Server" else ""
    label = name or kind.lower()
    text = SCENARIO.format(
        name=label, scenario=kind, extra=extra, server=server, trials=trials, queries=queries
    )
    tmp.mkdir(parents=True, exist_ok=True)
    path = write_scenario(tmp / f"{label}.yaml", text)
    out = tmp / f"runs-{label}"
    # INVALID (1) is a finished run too: Server's p99 limits can miss on a loaded machine
    assert main(["run", str(path), "--out", str(out)]) in (0, INVALID.code)
    (made,) = out.iterdir()
    if trials > 1:
        return made
    (run,) = [p.parent for p in made.rglob("result.json")]
    return run
