"""survey(): the fingerprint always, the preflight only where its warnings are used."""

from __future__ import annotations

import pytest

from harness.errors import PreflightError
from harness.fingerprint import survey as survey_mod
from harness.fingerprint.preflight import PreflightWarning

SWAP = PreflightWarning(code="swap", message="swap in use")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    def fake_preflight(fingerprint: object, *, profile: str) -> list[PreflightWarning]:
        seen.append(profile)
        return [SWAP]

    monkeypatch.setattr(survey_mod, "preflight", fake_preflight)
    return seen


def test_the_preflight_runs_and_reports_by_default(calls: list[str]) -> None:
    found = survey_mod.survey(gpus=[], gpu_missing=[], profile="quick")
    assert found.warnings == (SWAP,) and calls == ["quick"]
    assert found.fingerprint.to_dict()["cpu"]


def test_without_checks_the_preflight_is_skipped(calls: list[str]) -> None:
    found = survey_mod.survey(gpus=[], gpu_missing=[], profile="quick", checks=False)
    assert found.warnings == () and calls == []


def test_strict_runs_the_preflight_even_without_checks(calls: list[str]) -> None:
    with pytest.raises(PreflightError, match="swap in use"):
        survey_mod.survey(gpus=[], gpu_missing=[], profile="quick", strict=True, checks=False)
    assert calls == ["quick"]
