"""show, report and compare accept every directory the harness prints, from real tiny-model runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main
from tests.conftest import TINY_OFFLINE, TINY_SS, fleet_run_by_hand, harness_dir, write_scenario

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def printed(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path
) -> Iterator[dict[str, Path]]:
    """The directory each verb printed last: a run, a trials group, a sweep and a fleet."""
    root = tmp_path_factory.mktemp("every-dir")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        ss = write_scenario(root / "ss.yaml", TINY_SS)
        offline = write_scenario(root / "offline.yaml", TINY_OFFLINE)
        dirs = {
            "run": harness_dir(["run", str(ss), "--out", str(root / "runs")]),
            "trials": harness_dir(["run", str(ss), "--trials", "2", "--out", str(root / "t")]),
            "sweep": harness_dir(
                ["sweep", str(offline), "--batches", "1,2", "--trials", "1", "--out", str(root)]
            ),
            "fleet": fleet_run_by_hand(root, root / "f", trials=1),
        }
        yield dirs


@pytest.mark.parametrize("kind", ["run", "trials", "sweep", "fleet"])
def test_show_accepts_every_printed_directory(
    printed: dict[str, Path], kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(printed[kind])]) == 0
    out = capsys.readouterr().out
    assert "tiny-" in out and "VALID" in out


def test_show_of_a_trials_group_prints_its_statistics_then_each_run(
    printed: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(printed["trials"])]) == 0
    out = capsys.readouterr().out
    # the group's headline, as the catalogue names it: SingleStream's early-stopping p90
    assert "2 trials of early-stopping p90 latency (ms), lower is better" in out
    for word in ("median", "best", "mean", "stdev", "CoV"):
        assert word in out
    assert out.index("median") < out.index("trial-1") < out.index("trial-2")


def test_show_of_a_sweep_prints_a_row_per_batch(
    printed: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(printed["sweep"])]) == 0
    out = capsys.readouterr().out
    assert "saturation at batch" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith(("1 ", "2 "))]
    assert [row[0] for row in rows][:2] == ["1", "2"]


@pytest.mark.parametrize("kind", ["run", "trials", "sweep", "fleet"])
def test_report_accepts_every_printed_directory(
    printed: dict[str, Path], kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(printed[kind]), "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "report.html").is_file()


def test_compare_accepts_a_fleet_beside_a_trials_group(
    printed: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(printed["trials"]), str(printed["fleet"])]) == 0
    out = capsys.readouterr().out
    assert "fleet task 000" in out and "early-stopping p90" in out


def test_compare_accepts_a_sweep_and_a_run(
    printed: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(printed["run"]), str(printed["sweep"])]) == 33
    assert "NOT COMPARABLE" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["run", "trials", "sweep", "fleet"])
def test_show_json_of_every_printed_directory_fits_its_schema(
    printed: dict[str, Path], kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    import jsonschema

    from tests.conftest import REPO

    assert main(["show", str(printed[kind]), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    schema = json.loads((REPO / "harness" / "schemas" / "show.schema.json").read_text())
    jsonschema.validate(document, schema)
    (entry,) = document["results"]
    assert entry["runs"] and entry["metrics"][0]["headline"]
    if kind == "sweep":
        assert [p["batch_size"] for p in entry["sweep"]["points"]] == [1, 2]
        assert {r["batch_size"] for r in entry["runs"]} == {1, 2}
    if kind == "fleet":
        assert entry["origin"].startswith("fleet task ")
