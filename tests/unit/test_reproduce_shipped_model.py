"""reproduce of the shipped bundles finds their model: the zoo's generator 1, built again (#25).

Their job.json files predate generator versions, so they read as version 1, whose ResNet-50
is byte-identical to the one they measured (sha256 385c5a0a2886...). Nothing is measured here:
only the model is resolved, as `harness reproduce` resolves it before its first trial.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.bundle.open import open_bundle
from harness.models.zoo import ZOO
from harness.reproduce.rerun import checked_model, load_recorded

PUBLISHED = Path(__file__).resolve().parents[2] / "results" / "published"
BUNDLE = PUBLISHED / "2026-12-01-resnet50-open-2core-epyc-kvm-Offline.bundle.tar"
KEY = PUBLISHED / "beyond-tops-founders.pub"
SHIPPED_SHA256 = "385c5a0a2886089029c0c557d25f5d5811fdb11a471b02aadf6c65d862c4cb7b"


def test_the_shipped_offline_bundle_finds_its_generator_1_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BEYOND_TOPS_CACHE", str(tmp_path / "cache"))  # built, not found cached
    opened = open_bundle(BUNDLE, tmp_path / "bundle", [KEY])
    (run_dir,) = opened.run_dirs
    recorded = load_recorded(run_dir)
    assert recorded.results[0].precision.source_sha256 == SHIPPED_SHA256
    model = recorded.run_request.scenario.model
    assert (model.zoo, model.generator) == ("resnet50", 1)  # its job.json names none
    assert ZOO["resnet50"].generator_version > 1  # today's generator is another
    request = checked_model(recorded, None)
    assert request.model_override is None  # the job's own model: built again, sha256 equal
    (built,) = (tmp_path / "cache" / "models").glob("resnet50-*.onnx")
    assert built.name == f"resnet50-{SHIPPED_SHA256[:16]}.onnx"
