"""The grammar of fleet values, typed task records, and plans that are whole or not at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import ConfigError, ResultError
from harness.fleet.grammar import (
    check_image,
    check_name,
    check_sbatch_option,
    expand_nodelist,
    sbatch_quote,
)
from harness.fleet.records import parse_task_record, read_task_record
from harness.fleet.staging import final_path, planned
from tests.conftest import TINY_SS


def test_node_lists_expand_slurm_ranges() -> None:
    assert expand_nodelist("--nodelist", "a, gpu[01-03,07],b") == [
        "a",
        "gpu01",
        "gpu02",
        "gpu03",
        "gpu07",
        "b",
    ]
    assert expand_nodelist("--nodelist", "n[8-10]-ib") == ["n8-ib", "n9-ib", "n10-ib"]
    with pytest.raises(ConfigError, match="more than 4096 nodes"):
        expand_nodelist("--nodelist", "n[0-4095],x[0-9]")


@pytest.mark.parametrize(
    "image",
    [
        "bt:cpu",
        "registry.example.com:5000/beyond-tops/nvidia:0.9-cuda12",
        "ghcr.io/org/name@sha256:" + "a" * 64,
        "localhost/x__y.z-w:TAG_1",
        "[::1]:5000/a:1",
        "3f2a9b0c",
    ],
)
def test_image_references_docker_accepts_are_accepted(image: str) -> None:
    assert check_image("--image", image) == image


@pytest.mark.parametrize(
    "image",
    ["", "Upper/case:1", "a:b:c", "repo:tag; rm -rf x", "repo:-tag", "a" * 256, "x@sha256:ab"],
)
def test_other_image_strings_are_refused(image: str) -> None:
    with pytest.raises(ConfigError, match=r"^--image: .* is not an image reference"):
        check_image("--image", image)


def test_names_quotes_and_options() -> None:
    assert check_name("--partition", "gpu.h200_a-1") == "gpu.h200_a-1"
    with pytest.raises(ConfigError, match="-debug"):
        check_name("--partition", "-debug")  # would read as an option
    with pytest.raises(ConfigError, match="at most 63"):
        check_name("--partition", "p" * 65)
    assert sbatch_quote("/plain/path_1.out") == "/plain/path_1.out"
    assert sbatch_quote('/a b/"c"') == '"/a b/\\"c\\""'
    assert check_sbatch_option("--gpus=2") == "--gpus=2"  # an exact name, not --gpus-per-node
    assert check_sbatch_option("--constraint=h200&ib") == "--constraint=h200&ib"
    with pytest.raises(ConfigError, match="would set --exclusive"):
        check_sbatch_option("--exclusive=user")


def _record(**fields: object) -> dict[str, object]:
    data: dict[str, object] = {
        "placement": {"scheduler": "slurm", "node": "n1", "job_id": 12, "array_job_id": "11"},
        "started_utc": "2026-12-01T10:00:00Z",
        "finished_utc": None,
        "exit_code": None,
        "cause": None,
        "entries": [{"name": "x", "run": "20260101T000000Z-tiny-Offline-abc", "exit_code": 0}],
    }
    return {**data, **fields}


def test_a_task_record_is_read_typed() -> None:
    record = parse_task_record(_record(), "r.json")
    assert record.job == "11" and record.job_id == "12" and record.node == "n1"
    assert record.entries[0].run == "20260101T000000Z-tiny-Offline-abc"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"placement": "n1"}, "r.json: placement: expected a mapping, got a string 'n1'"),
        ({"entries": [3]}, r"r.json: entries\[0\]: expected a mapping, got a whole number 3"),
        ({"exit_code": True}, "r.json: exit_code: expected a whole number, got true or false"),
        ({"exit_code": 1.5}, "r.json: exit_code: expected a whole number, got float 1.5"),
        ({"entries": [{"name": "x", "run": "../up"}]}, "'../up' leads out of the attempt"),
        ({"entries": [{"name": "x", "run": "/abs"}]}, "'/abs' leads out of the attempt"),
        ({"placement": {"scheduler": "slurm", "job_id": "1,2"}}, "'1,2' is not a Slurm job"),
        ({"started_utc": None}, "r.json: started_utc: expected a string, got null"),
    ],
)
def test_a_record_of_the_wrong_types_is_refused_by_key(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ResultError, match=message):
        parse_task_record(_record(**fields), "r.json")


def test_non_finite_numbers_are_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "task-result.json"
    path.write_text(json.dumps(_record(exit_code=float("-inf"))))
    with pytest.raises(ResultError, match="-Infinity is not a JSON number"):
        read_task_record(path)
    path.write_text(json.dumps(_record()).replace('"exit_code": null', '"exit_code": -1e400'))
    with pytest.raises(ResultError, match="-1e400 overflows to -inf"):
        read_task_record(path)


def test_a_plan_that_fails_midway_leaves_nothing(tmp_path: Path) -> None:
    final = final_path(tmp_path / "deep" / "out", "s")
    with pytest.raises(ConfigError, match="stop here"), planned(final) as staging:
        (staging.work / "tasks" / "000").mkdir()
        raise ConfigError("stop here")
    assert not (tmp_path / "deep").exists()  # --out and its parents made for it, gone too
    with planned(final) as staging:
        (staging.work / "fleet.json").write_text("{}")
    assert sorted(p.name for p in final.parent.iterdir()) == [final.name]


@pytest.mark.parametrize("kind", ["slurm", "k8s"])
def test_a_model_missing_midway_leaves_no_fleet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"bytes")
    (tmp_path / "a.yaml").write_text(TINY_SS.replace("{zoo: tiny}", f"{{path: {model}}}"))
    (tmp_path / "b.yaml").write_text(TINY_SS.replace("{zoo: tiny}", "{path: /no/such.onnx}"))
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\nprofile: quick\nscenarios: [a.yaml, b.yaml]\n")
    where = ["--partition", "p"] if kind == "slurm" else ["--image", "bt:cpu", "--claim", "c"]
    out = tmp_path / "o"
    assert main(["fleet", kind, str(suite), *where, "--out", str(out), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "/no/such.onnx is not a file" in err
    assert not out.exists()  # the first model was copied into the staging dir, now gone


def test_an_error_message_in_a_record_is_kept_but_cannot_drive_the_terminal() -> None:
    entry = {"name": "x", "error": "bad model\n\x1b]0;owned\x07\x1b[2J"}
    (read,) = parse_task_record(_record(entries=[entry]), "r.json").entries
    assert read.error == "bad model\\n\\x1b]0;owned\\x07\\x1b[2J"
    with pytest.raises(ResultError, match=r"entries\[0\]: name: .* control character"):
        parse_task_record(_record(entries=[{"name": "x\x1b[2J"}]), "r.json")
