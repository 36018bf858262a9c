"""Shared fixtures: an isolated model cache and scenario builders for short real LoadGen runs."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "harness" / "schemas" / "result.schema.json"


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One model cache for the whole session, so the tiny model is generated once."""
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(autouse=True)
def _isolated_cache(model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
    yield


@pytest.fixture(scope="session")
def result_schema() -> dict[str, Any]:
    """The JSON Schema every result.json must satisfy."""
    return json.loads(SCHEMA.read_text())


def write_scenario(path: Path, text: str) -> Path:
    """Write a scenario YAML file and return its path."""
    path.write_text(text)
    return path


def harness_printed(argv: list[str]) -> str:
    """Run the harness CLI in-process, assert it exits 0, and return what it printed.

    For module-scoped fixtures, where pytest's capsys (function-scoped) cannot be used.
    """
    from harness.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    assert code == 0, out.getvalue()
    return out.getvalue()


def harness_dir(argv: list[str]) -> Path:
    """Run the harness CLI as harness_printed does; the directory it printed last."""
    return Path(harness_printed(argv).strip().splitlines()[-1])


def fleet_run_by_hand(root: Path, out: Path, *, trials: int) -> Path:
    """A one-task fleet of root/ss.yaml planned for Slurm (--dry-run), its task run here."""
    suite_yaml = "name: by-hand\nprofile: quick\nscenarios: [ss.yaml]\n"
    suite = write_scenario(root / "fleet-suite.yaml", suite_yaml)
    argv = ["fleet", "slurm", str(suite), "--partition", "p", "--trials", str(trials)]
    fleet = harness_dir([*argv, "--runner", "local", "--out", str(out), "--dry-run"])
    harness_printed(["fleet", "task", str(fleet), "--index", "0"])
    return fleet


TINY_SS = """
name: tiny-ss-test
scenario: SingleStream
model: {zoo: tiny}
batch_size: 1
trials: 1
data: {total_sample_count: 64}
warmup: {min_queries: 20, min_duration_ms: 300}
quick: {min_duration_ms: 1000, min_query_count: 100, performance_sample_count: 32}
"""

TINY_OFFLINE = """
name: tiny-offline-test
scenario: Offline
model: {zoo: tiny}
batch_size: 8
trials: 1
data: {total_sample_count: 64}
warmup: {min_queries: 5, min_duration_ms: 300}
quick: {min_duration_ms: 1000, min_query_count: 200, performance_sample_count: 32}
"""


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` as a throwaway identity; its stdout, stripped."""
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo), *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A one-commit repository that ignores results/runs/ and caches, as the project does."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")
    (path / ".gitignore").write_text("/results/runs/*\n/.cache/\n")
    (path / "a.txt").write_text("1\n")
    git(path, "add", ".gitignore", "a.txt")
    git(path, "commit", "-q", "-m", "first")
    return path


def cpu_has_int8_dot_product() -> bool:
    """Whether this CPU multiplies INT8 with a dot product (VNNI, AMX-INT8).

    Without one, onnxruntime's AVX2 U8S8 kernels add pairs of u8 x s8 products in 16 bits
    (vpmaddubsw), which saturate: INT8 agrees less with FP32 (README, Precision).
    """
    from harness.fingerprint.cpu import collect_cpu
    from harness.fingerprint.probe import Probe
    from harness.models.recipes import isa_for_precision

    isa = collect_cpu(Probe(Path("/"))).isa or ()  # as the runner reads it for result.json
    return bool(isa_for_precision("int8", isa)["offered"])
