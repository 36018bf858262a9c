"""reproduction.json (schema-checked, never overwritten, read back) and the printed verdict."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import jsonschema
import pytest

from harness.cli import main
from harness.errors import ResultError
from harness.records.layout import REPRODUCTION_FILE
from harness.reproduce.codes import verdict_code_table
from harness.reproduce.record import (
    REPRODUCTION_SCHEMA_VERSION,
    read_reproduction,
    render_reproduction,
    to_dict,
    write_reproduction,
)
from harness.reproduce.tolerance import Tolerance
from harness.reproduce.verdict import BundleRecord, Reproduction, judge
from tests.unit.test_reproduce_verdict import side, ss, trials

SCHEMA = Path(__file__).resolve().parents[2] / "harness" / "schemas" / "reproduction.schema.json"


def _verdicts() -> list[Reproduction]:
    near = judge(side(ss(500_000)), trials([510_000, 490_000]), Tolerance())
    far = judge(trials([600_000, 610_000]), trials([500_000, 505_000]), Tolerance())
    changed = ss(500_000, batch_size=2)
    other = judge(side(ss(500_000)), side(changed), Tolerance())
    bundled = dataclasses.replace(
        near,
        bundle=BundleRecord(
            path="b.tar", signer_fingerprint="SHA256:abc", verified=True, trusted=False
        ),
    )
    return [near, far, other, bundled]


@pytest.mark.parametrize("index", range(4), ids=["reproduced", "not", "incomparable", "bundle"])
def test_every_verdict_is_schema_valid_and_reads_back_whole(index: int, tmp_path: Path) -> None:
    rep = _verdicts()[index]
    path = write_reproduction(rep, tmp_path / REPRODUCTION_FILE)
    data = json.loads(path.read_text())
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    assert data["schema_version"] == 1 and data["verdict"] == rep.verdict
    assert read_reproduction(path) == rep


def test_a_verdict_is_never_overwritten(tmp_path: Path) -> None:
    rep = _verdicts()[0]
    path = write_reproduction(rep, tmp_path / REPRODUCTION_FILE)
    before = path.read_text()
    with pytest.raises(ResultError, match="already exists; a verdict is never overwritten"):
        write_reproduction(_verdicts()[1], path)
    assert path.read_text() == before


def test_the_schema_refuses_a_reproduced_verdict_with_reasons(tmp_path: Path) -> None:
    data = to_dict(_verdicts()[0])
    data["reasons"] = ["made up"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    path = tmp_path / REPRODUCTION_FILE
    path.write_text(json.dumps(data))
    with pytest.raises(ResultError, match="not a reproduction file"):
        read_reproduction(path)


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (2, "schema_version 2 was written by a newer beyond-tops (this one reads 1); upgrade"),
        (0, "schema_version 0 is older than this beyond-tops reads (1); run `harness reproduce`"),
        (None, "no schema_version; not a beyond-tops reproduction file"),
    ],
)
def test_other_versions_are_refused_with_what_to_do(
    version: int | None, message: str, tmp_path: Path
) -> None:
    data = {**to_dict(_verdicts()[0]), "schema_version": version}
    path = tmp_path / REPRODUCTION_FILE
    path.write_text(json.dumps(data))
    with pytest.raises(ResultError, match=re.escape(f"{path}: {message}")):
        read_reproduction(path)


def test_the_printed_verdict_shows_the_values_the_spread_and_why() -> None:
    near, far, other, bundled = _verdicts()
    text = render_reproduction(near)
    assert text.splitlines()[0] == (
        "reproduce tiny-ss-test (SingleStream, early-stopping p90 latency): REPRODUCED"
    )
    assert "  recorded     0.5 ms (1 run: results/runs/x)" in text
    assert (
        "  reproduced   median 0.5 ms over 2 of 2 trials: min 0.49 ms, max 0.51 ms, CoV 2.83 %"
        in text
    )
    assert "  ratio        1.0000 recorded / reproduced median (0.00 % apart; tolerance " in text
    assert "  exit code    0 (REPRODUCED)" in text
    text = render_reproduction(far)
    assert "  recorded     0.605 ms (median of 2 trials: results/runs/x)" in text
    assert "  t-test       Welch p = " in text and "significant at 5 %" in text
    assert (
        "  reason       the recorded early-stopping p90 latency is 20.4 % from the reproduction's"
        in text
    )
    assert "  exit code    30 (NOT REPRODUCED)" in text
    text = render_reproduction(other)
    assert "  reason       batch size: 1 != 2" in text
    assert "  exit code    31 (NOT COMPARABLE)" in text
    text = render_reproduction(bundled)
    assert "  bundle       b.tar: signature verified, signer SHA256:abc, not checked" in text


def test_reproduce_help_lists_the_verdict_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["reproduce", "--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert verdict_code_table() in out
    for line in ("  0    REPRODUCED:", "  30   NOT REPRODUCED:", "  31   NOT COMPARABLE:"):
        assert line in out


def test_the_schema_is_the_version_written() -> None:
    schema = json.loads(SCHEMA.read_text())
    assert schema["properties"]["schema_version"] == {"const": REPRODUCTION_SCHEMA_VERSION}
