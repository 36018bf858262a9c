"""`harness fingerprint` and `harness doctor` on this real machine."""

from __future__ import annotations

import json

import pytest

from harness.cli import main


def test_fingerprint_json_is_complete_or_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fingerprint", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["fingerprint_id"]) == 16
    assert data["cpu"]["usable_cpus"] >= 1
    assert data["complete"] == (data["missing"] == [])
    assert all(item["reason"] for item in data["missing"])


def test_fingerprint_text_names_the_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fingerprint"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fingerprint ") and "\ncpu " in out and "usable cpus" in out


def test_doctor_lists_warnings_and_strict_fails_on_them(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.errors import PreflightError
    from harness.fingerprint import PreflightWarning
    from harness.fingerprint.survey import Survey, survey

    real = survey(gpus=[], gpu_missing=[], profile=None)
    forced = Survey(
        fingerprint=real.fingerprint,
        warnings=(PreflightWarning(code="swap", message="swap in use: 1.0 GiB; turn swap off"),),
    )
    monkeypatch.setattr("harness.fingerprint.survey.survey", lambda *a, **k: forced)
    assert main(["doctor"]) == 0
    assert "warning: swap in use" in capsys.readouterr().out
    assert main(["doctor", "--strict"]) == PreflightError.exit_code == 7
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: preflight failed under --strict (1): swap in use")
