"""Bundles made from run directories holding real LoadGen logs: made, verified, opened, tampered."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.analysis.spread import metric_spreads
from harness.analysis.sweep import best_batch, saturation_batch, saturation_verdict
from harness.analysis.trials import trial_stats
from harness.analysis.values import headline, metric_values
from harness.bundle.crosscheck import PROVES
from harness.bundle.keys import fingerprint
from harness.bundle.make import BundleRequest, make_bundle
from harness.bundle.manifest import Provenance, canonical_json
from harness.bundle.numbers import logged_values
from harness.bundle.open import is_bundle, open_bundle
from harness.bundle.signature import signature_bytes
from harness.bundle.summary import verdict_lines
from harness.bundle.verify import verify_bundle
from harness.errors import (
    BadSignatureError,
    BundleError,
    ConfigError,
    CrossCheckError,
    EditedResultError,
    ResultError,
    TamperedFileError,
    UntrustedKeyError,
)
from harness.records.loadgen_log import parse_detail_log
from harness.records.sweep import SweepPoint
from harness.results.groupfile import (
    SweepFile,
    SweepFilePoint,
    TrialsFile,
    read_trials,
    write_sweep,
    write_trials,
)
from harness.results.runfile import load_result
from tests.conftest import REPO

LOG_DIR = REPO / "tests" / "fixtures" / "loadgen" / "singlestream-valid"
RESULT_FIXTURE = REPO / "tests" / "fixtures" / "results" / "tiny-singlestream-v3" / "result.json"
MADE_BY = Provenance(harness_version="0.1.0", git_commit="c0ffee", git_dirty=False)
SIGNER = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
Members = dict[str, bytes | None]  # tar name: data, or None for a directory


def _result(run_id: str) -> dict[str, Any]:
    """A real result.json (the v3 fixture) holding the fixture log's numbers, and provenance."""
    data: dict[str, Any] = json.loads(RESULT_FIXTURE.read_text())
    log = parse_detail_log(LOG_DIR / "mlperf_log_detail.txt")
    for key, value in logged_values(data, log).items():
        head, _, rest = key.partition(".")
        if rest and isinstance(data.get(head), dict) and rest in data[head]:
            data[head][rest] = value
        elif not rest and head in data:
            data[head] = value
    data["run_id"] = run_id
    data["model"]["sha256"] = "ab" * 32
    data["fingerprint"]["harness"].update(git_commit="d00d", git_dirty=False)
    data["image"] = {"id": "sha256:" + "cd" * 32, "tag": "beyond-tops/cpu:0.1.0-d00d"}
    data["precision"]["recipe"] = {"method": "static", "params": {}, "precision": "fp32"}
    return data


def _run(path: Path) -> Path:
    path.mkdir(parents=True)
    for name in ("mlperf_log_detail.txt", "mlperf_log_summary.txt"):
        shutil.copy(LOG_DIR / name, path)
    (path / "result.json").write_text(json.dumps(_result(path.name), indent=2))
    (path / "telemetry.csv").write_text("t_s,power_w\n0.0,100.0\n")
    (path / "job.json").write_text('{"schema_version": 1}\n')
    (path / "accuracy").mkdir()
    (path / "accuracy" / "accuracy.txt").write_text("top-1 100 %\n")
    return path


def _group(path: Path) -> Path:
    """A trials group of two runs whose trials.json is what `harness run` writes of them."""
    path.mkdir()
    runs = [_run(path / f"trial-{n}").name for n in (1, 2)]
    results = [load_result(path / name) for name in runs]
    how = headline("SingleStream", results)
    stats = trial_stats(
        metric_values(results, how), requested=2, higher_is_better=how.higher_is_better, shown=how
    )
    trials = TrialsFile(
        scenario_name="tiny-ss-test",
        scenario="SingleStream",
        batch_size=1,
        profile="quick",
        requested=2,
        runs=tuple(runs),
        metric=how.key,
        stats=stats,
        spreads=metric_spreads(results, requested=2),
    )
    write_trials(path / "trials.json", trials)
    return path


def _bundle(sources: list[Path], out: Path, key: Ed25519PrivateKey = SIGNER) -> Path:
    make_bundle(BundleRequest(sources=tuple(sources), key=key, out=out, made_by=MADE_BY))
    return out


def _pub(tmp_path: Path, key: Ed25519PrivateKey, name: str) -> Path:
    path = tmp_path / name
    line = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    path.write_bytes(line + b" someone\n")
    return path


def _members(archive: Path) -> Members:
    with tarfile.open(archive) as tar:
        return {m.name: None if m.isdir() else _read(tar, m) for m in tar.getmembers()}


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    handle = tar.extractfile(member)
    assert handle is not None
    return handle.read()


def _write(archive: Path, members: Members) -> Path:
    with tarfile.open(archive, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return archive


def _tampered(archive: Path, edit: Callable[[Members], None]) -> Path:
    members = _members(archive)
    edit(members)
    return _write(archive.with_name("tampered.tar"), members)


def _rehash(members: Members) -> None:
    """Write each file's new sha256 and size into MANIFEST.json (without signing again)."""
    manifest = json.loads(members["MANIFEST.json"] or b"")
    for entry in manifest["files"]:
        data = members[entry["path"]] or b""
        entry["sha256"], entry["size"] = hashlib.sha256(data).hexdigest(), len(data)
    members["MANIFEST.json"] = canonical_json(manifest)


def _resign(key: Ed25519PrivateKey) -> Callable[[Members], None]:
    def resign(members: Members) -> None:
        members["MANIFEST.sig"] = signature_bytes(key, members["MANIFEST.json"] or b"")

    return resign


def _edit_number(path: str, value: float = 9999.0) -> Callable[[Members], None]:
    def edit(members: Members) -> None:
        result = json.loads(members[path] or b"")
        result["samples_per_second"] = value
        members[path] = json.dumps(result, indent=2).encode()

    return edit


def _then(*edits: Callable[[Members], None]) -> Callable[[Members], None]:
    def edit(members: Members) -> None:
        for step in edits:
            step(members)

    return edit


RESULT = "runs/g/trial-1/result.json"


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return _bundle([_group(tmp_path / "g")], tmp_path / "b.tar")


def test_a_bundle_verifies_against_its_signer(bundle: Path, tmp_path: Path) -> None:
    verdict = verify_bundle(bundle, [_pub(tmp_path, SIGNER, "signer.pub")])
    assert verdict.trusted and verdict.trusted_by == tmp_path / "signer.pub"
    assert verdict.signer_fingerprint == fingerprint(SIGNER.public_key())
    assert verdict.files == 2 * 6 + 1 and verdict.results_checked == 2
    assert verdict.roots == ("runs/g",)
    untrusted = verify_bundle(bundle)
    assert not untrusted.trusted and untrusted.results_checked == 2


def test_the_manifest_records_files_and_where_each_run_came_from(bundle: Path) -> None:
    members = _members(bundle)
    assert list(members)[:3] == ["MANIFEST.json", "MANIFEST.sig", "runs"]
    manifest = json.loads(members["MANIFEST.json"] or b"")
    assert manifest["made_by"] == {
        "harness_version": "0.1.0",
        "git_commit": "c0ffee",
        "git_dirty": False,
    }
    assert manifest["roots"] == [{"path": "runs/g", "kind": "trials"}]
    files = {f["path"]: f for f in manifest["files"]}
    telemetry = files["runs/g/trial-2/telemetry.csv"]
    assert telemetry["size"] == len(b"t_s,power_w\n0.0,100.0\n")
    assert telemetry["sha256"] == hashlib.sha256(b"t_s,power_w\n0.0,100.0\n").hexdigest()
    run = manifest["runs"][0]
    assert run["path"] == "runs/g/trial-1" and run["git_commit"] == "d00d"
    assert run["image_id"] == "sha256:" + "cd" * 32 and run["image_digest"] is None
    assert run["model_sha256"] == "ab" * 32
    assert run["precision_recipe"] == {"method": "static", "params": {}, "precision": "fp32"}
    signature = json.loads(members["MANIFEST.sig"] or b"")
    assert signature["algorithm"] == "ed25519"
    assert signature["public_key"].startswith("ssh-ed25519 ")
    assert signature["fingerprint"] == fingerprint(SIGNER.public_key())


def test_the_same_runs_and_key_give_the_same_bytes(tmp_path: Path) -> None:
    group = _group(tmp_path / "g")
    first = _bundle([group], tmp_path / "1.tar")
    os.utime(group / "trial-1" / "result.json", (1, 1))  # times never reach the bundle
    second = _bundle([group], tmp_path / "2.tar")
    assert first.read_bytes() == second.read_bytes()
    other_key = _bundle([group], tmp_path / "3.tar", OTHER)
    assert other_key.read_bytes() != first.read_bytes()


def test_an_edited_number_with_a_rehashed_manifest_is_a_bad_signature(
    bundle: Path, tmp_path: Path
) -> None:
    tampered = _tampered(bundle, _then(_edit_number(RESULT), _rehash))
    with pytest.raises(BadSignatureError, match=r"signature does not verify MANIFEST\.json"):
        verify_bundle(tampered, [_pub(tmp_path, SIGNER, "signer.pub")])


def test_an_edited_number_re_signed_by_another_key_is_untrusted(
    bundle: Path, tmp_path: Path
) -> None:
    tampered = _tampered(bundle, _then(_edit_number(RESULT), _rehash, _resign(OTHER)))
    with pytest.raises(UntrustedKeyError, match=re.escape(fingerprint(OTHER.public_key()))):
        verify_bundle(tampered, [_pub(tmp_path, SIGNER, "signer.pub")])


def test_an_edited_number_re_signed_by_a_trusted_key_is_still_an_edited_result(
    bundle: Path, tmp_path: Path
) -> None:
    tampered = _tampered(bundle, _then(_edit_number(RESULT), _rehash, _resign(SIGNER)))
    with pytest.raises(
        EditedResultError, match=f"{RESULT}: samples_per_second is 9999.0 but .* logs 2798.92"
    ):
        verify_bundle(tampered, [_pub(tmp_path, SIGNER, "signer.pub")])


def test_an_edited_log_is_a_tampered_file_not_an_edited_result(bundle: Path) -> None:
    log = "runs/g/trial-1/mlperf_log_detail.txt"

    def edit(members: Members) -> None:
        members[log] = (members[log] or b"").replace(b"2798.92", b"9999.99")

    with pytest.raises(TamperedFileError, match=f"{log} differs from its sha256") as caught:
        verify_bundle(_tampered(bundle, edit))
    assert not isinstance(caught.value, EditedResultError)


def test_an_edited_number_the_log_does_not_hold_is_a_tampered_file(bundle: Path) -> None:
    def edit(members: Members) -> None:
        result = json.loads(members[RESULT] or b"")
        result["telemetry"]["interval_s"] = 1.0
        members[RESULT] = json.dumps(result).encode()

    with pytest.raises(TamperedFileError, match=f"{RESULT} differs from its sha256") as caught:
        verify_bundle(_tampered(bundle, edit))
    assert not isinstance(caught.value, EditedResultError)


def test_a_bundle_without_a_signature_or_with_a_garbled_one(bundle: Path) -> None:
    def unsigned(members: Members) -> None:
        del members["MANIFEST.sig"]

    with pytest.raises(BundleError, match=r"no MANIFEST\.sig"):
        verify_bundle(_tampered(bundle, unsigned))

    def garbled(members: Members) -> None:
        members["MANIFEST.sig"] = b"{not json"

    with pytest.raises(BadSignatureError, match=r"MANIFEST\.sig: it is not JSON"):
        verify_bundle(_tampered(bundle, garbled))


def test_bundling_refuses_what_it_cannot_vouch_for(tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    (tmp_path / "exists.tar").write_bytes(b"precious")
    with pytest.raises(ResultError, match=r"exists\.tar: already exists; a bundle is never"):
        _bundle([run], tmp_path / "exists.tar")
    assert (tmp_path / "exists.tar").read_bytes() == b"precious"
    group = _group(tmp_path / "g")
    with pytest.raises(ConfigError, match="lies inside"):
        _bundle([group, group / "trial-1"], tmp_path / "nested.tar")
    with pytest.raises(ResultError, match="not a run or group"):
        _bundle([run / "accuracy"], tmp_path / "acc.tar")
    (run / "INCOMPLETE").write_text("interrupted (Ctrl-C)\nexit_code: 130\n")
    with pytest.raises(ResultError, match=r"incomplete \(interrupted \(Ctrl-C\)\)"):
        _bundle([run], tmp_path / "incomplete.tar")
    assert sorted(p.name for p in tmp_path.glob("*.tar")) == ["exists.tar"]


def test_bundling_refuses_links_and_edited_results(tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    (run / "link").symlink_to(run / "job.json")
    with pytest.raises(ResultError, match="link: a symbolic link"):
        _bundle([run], tmp_path / "l.tar")
    (run / "link").unlink()
    result = json.loads((run / "result.json").read_text())
    (run / "result.json").write_text(json.dumps(result | {"samples_per_second": 31.77}))
    with pytest.raises(EditedResultError, match=r"samples_per_second is 31\.77 but"):
        _bundle([run], tmp_path / "e.tar")
    assert not list(tmp_path.glob("*.tar")) and not list(tmp_path.glob(".*.tmp"))


def test_open_bundle_extracts_a_verified_bundle(bundle: Path, tmp_path: Path) -> None:
    assert is_bundle(bundle)
    dest = tmp_path / "opened"
    opened = open_bundle(bundle, dest, [_pub(tmp_path, SIGNER, "signer.pub")])
    assert opened.run_dirs == (dest / "runs" / "g",)
    assert opened.verified and opened.trusted
    assert opened.signer_fingerprint == fingerprint(SIGNER.public_key())
    assert opened.manifest["roots"] == [{"path": "runs/g", "kind": "trials"}]
    assert len(opened.checks) == 8 and opened.checks[4].startswith("check trials passed: 1 ")
    assert sorted(p.name for p in dest.iterdir()) == ["MANIFEST.json", "MANIFEST.sig", "runs"]
    result = json.loads((dest / "runs" / "g" / "trial-2" / "result.json").read_text())
    assert result["samples_per_second"] == 2798.92
    with pytest.raises(ResultError, match="not empty"):
        open_bundle(bundle, dest)


def test_open_bundle_leaves_nothing_of_a_tampered_bundle(bundle: Path, tmp_path: Path) -> None:
    tampered = _tampered(bundle, _edit_number(RESULT))
    dest = tmp_path / "opened"
    with pytest.raises(EditedResultError):
        open_bundle(tampered, dest)
    assert not dest.exists()
    opened = open_bundle(bundle, dest)  # no trusted keys: opened, the signer unchecked
    assert opened.verified and not opened.trusted


# --- cross-checks: edits signed again by the trusted key, each refused by a named check ----

TRIALS = "runs/g/trials.json"


def _edit_json(path: str, change: Callable[[dict[str, Any]], None]) -> Callable[[Members], None]:
    def edit(members: Members) -> None:
        data = json.loads(members[path] or b"")
        change(data)
        members[path] = json.dumps(data, indent=2).encode()

    return edit


def _drop(path: str) -> Callable[[Members], None]:
    """Leave a file out of the bundle and out of its manifest."""

    def drop(members: Members) -> None:
        del members[path]
        manifest = json.loads(members["MANIFEST.json"] or b"")
        manifest["files"] = [f for f in manifest["files"] if f["path"] != path]
        members["MANIFEST.json"] = canonical_json(manifest)

    return drop


def _edit_manifest(change: Callable[[dict[str, Any]], None]) -> Callable[[Members], None]:
    def edit(members: Members) -> None:
        manifest = json.loads(members["MANIFEST.json"] or b"")
        change(manifest)
        members["MANIFEST.json"] = canonical_json(manifest)

    return edit


def _refused(bundle: Path, tmp_path: Path, edits: list[Callable[[Members], None]]) -> str:
    """The one-line message of the cross-check that refuses the edits signed again by SIGNER."""
    tampered = _tampered(bundle, _then(*edits, _rehash, _resign(SIGNER)))
    with pytest.raises(CrossCheckError) as caught:
        verify_bundle(tampered, [_pub(tmp_path, SIGNER, "signer.pub")])
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{tampered}: check ")
    assert caught.value.exit_code == 28
    return message


def test_a_result_without_its_detail_log_is_refused(bundle: Path, tmp_path: Path) -> None:
    log = "runs/g/trial-1/mlperf_log_detail.txt"
    message = _refused(bundle, tmp_path, [_edit_number(RESULT, 3 * 2798.92), _drop(log)])
    assert f"check detail-log failed: {RESULT} is in MANIFEST.json but {log} is not" in message


def test_an_edited_trials_median_is_refused(bundle: Path, tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["stats"]["median"] *= 3

    message = _refused(bundle, tmp_path, [_edit_json(TRIALS, edit)])
    assert f"check trials failed: {TRIALS}: stats (latency_ns.early_stopping_p90) median is" in (
        message
    )
    assert "recomputed from its 2 trials' result.json: 396889.0" in message


def test_trials_said_complete_with_fewer_than_requested_are_refused(
    bundle: Path, tmp_path: Path
) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["requested"] = 3

    message = _refused(bundle, tmp_path, [_edit_json(TRIALS, edit)])
    assert f"check trials failed: {TRIALS} says complete with 2 of 3 requested trials" in message


def test_a_trial_left_out_of_trials_json_is_refused(bundle: Path, tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["runs"], data["requested"] = ["trial-1"], 1

    message = _refused(bundle, tmp_path, [_edit_json(TRIALS, edit)])
    assert "check trials failed: runs/g/trial-2/result.json is a trial of" in message


def test_a_manifest_model_sha256_not_the_results_is_refused(bundle: Path, tmp_path: Path) -> None:
    def edit(manifest: dict[str, Any]) -> None:
        manifest["runs"][0]["model_sha256"] = "00" * 32

    message = _refused(bundle, tmp_path, [_edit_manifest(edit)])
    assert "check provenance failed: MANIFEST.json's run runs/g/trial-1 has model_sha256" in message
    assert f'"{"00" * 32}" but {RESULT} has "{"ab" * 32}"' in message


def test_a_manifest_dirty_tree_made_clean_is_refused(bundle: Path, tmp_path: Path) -> None:
    def dirty(data: dict[str, Any]) -> None:
        data["fingerprint"]["harness"]["git_dirty"] = True

    message = _refused(bundle, tmp_path, [_edit_json(RESULT, dirty)])
    assert "has git_dirty false but runs/g/trial-1/result.json has true" in message


def test_a_quick_run_relabelled_submission_is_refused(bundle: Path, tmp_path: Path) -> None:
    def relabel(data: dict[str, Any]) -> None:
        data["profile"], data["submission_valid"] = "submission", True

    message = _refused(bundle, tmp_path, [_edit_json(RESULT, relabel)])
    assert (
        f"check submission-claim failed: {RESULT} says profile: submission, submission_valid: "
        "true, but runs/g/trial-1/mlperf_log_detail.txt logs effective_min_duration_ms 2000, "
        "under MLPerf's 600000"
    ) in message


def test_a_passing_bundle_names_every_check(bundle: Path, tmp_path: Path) -> None:
    verdict = verify_bundle(bundle, [_pub(tmp_path, SIGNER, "signer.pub")])
    assert [p.check for p in verdict.checks] == [
        "result-numbers",
        "detail-log",
        "provenance",
        "submission-claim",
        "trials",
        "sweep",
        "query-latencies",
        "tokens",
    ]
    lines = verdict_lines(verdict)
    assert lines[0] == f"  proves   {PROVES}"
    assert "  check trials passed: 1 trials.json, statistics recomputed from their 2 trials'" in (
        "\n".join(lines)
    )
    assert "  commit   made by: beyond-tops 0.1.0 at c0ffee (clean tree)" in lines
    assert "  commit   runs/g/trial-2: beyond-tops 0.1.0 at d00d (clean tree)" in lines
    assert not [line for line in lines if "warning" in line]


def _sweep(path: Path) -> Path:
    """A sweep of two batch sizes, each a trials group, with the sweep.json `run` writes."""
    path.mkdir()
    points = []
    for batch in (1, 2):
        group = _group(path / f"bs-{batch}")
        stats = read_trials(group / "trials.json").stats
        points.append(SweepPoint(batch_size=batch, stats=stats))
    sweep = SweepFile(
        scenario_name="tiny-ss-test",
        profile="quick",
        points=tuple(
            SweepFilePoint(
                batch_size=p.batch_size, dir=f"bs-{p.batch_size}", samples_per_second=p.stats
            )
            for p in points
        ),
        saturation_batch=saturation_batch(points),
        best_batch=best_batch(points),
        stopped="max_batch",
        limit=None,
        requested_batches=(1, 2),
        saturation=saturation_verdict(points),
    )
    write_sweep(path / "sweep.json", sweep)
    return path


def test_a_sweeps_points_and_verdict_are_recomputed(tmp_path: Path) -> None:
    bundle = _bundle([_sweep(tmp_path / "s")], tmp_path / "s.tar")
    verdict = verify_bundle(bundle, [_pub(tmp_path, SIGNER, "signer.pub")])
    assert verdict.checks[5].line.startswith("check sweep passed: 1 sweep.json")

    def best(data: dict[str, Any]) -> None:
        data["best_batch"] = 2

    message = _refused(bundle, tmp_path, [_edit_json("runs/s/sweep.json", best)])
    assert "check sweep failed: runs/s/sweep.json: best_batch is 2 but its points give 1" in message

    def faster(data: dict[str, Any]) -> None:
        data["points"][1]["samples_per_second"]["median"] = 1e9

    message = _refused(bundle, tmp_path, [_edit_json("runs/s/sweep.json", faster)])
    assert "batch 2's samples_per_second median is 1000000000.0, recomputed from " in message


PUBLISHED = REPO / "results" / "published"


def _shipped(scenario: str) -> Path:
    (found,) = PUBLISHED.glob(f"*-{scenario}.bundle.tar")
    return found


def test_a_submission_run_under_another_mlperf_conf_is_refused(tmp_path: Path) -> None:
    members = _members(_shipped("SingleStream"))
    (conf,) = (n for n in members if n.count("/") == 2 and n.endswith("/mlperf.conf"))
    members[conf] = (members[conf] or b"") + b"*.*.schedule_rng_seed = 1\n"
    message = _refused(_write(tmp_path / "shipped.tar", members), tmp_path, [])
    result = conf.replace("mlperf.conf", "result.json")
    assert f"{result} says profile: submission, submission_valid: true, but " in message
    assert "ran under an mlperf.conf whose sha256 (result.json's loadgen_config." in message


# A line added to the shipped run's mlperf.conf (its sha256 written into result.json), and
# the effective setting of its detail log that then contradicts it.
CONF_EDITS = {
    "seed": (
        "SingleStream",
        "*.*.schedule_rng_seed = 1",
        "schedule_rng_seed 16159082839903944936, not",
    ),
    "sample-count": (
        "SingleStream",
        "resnet50.*.performance_sample_count_override = 2048",
        "performance_sample_count 1024, not",
    ),
    "min-duration": (
        "SingleStream",
        "*.SingleStream.min_duration = 700000",
        "min_duration_ms 600000, under",
    ),
    "offline-samples": (
        "Offline",
        "resnet50.Offline.min_query_count = 30000",
        "min_sample_count 24576, under",
    ),
}


@pytest.mark.parametrize("case", CONF_EDITS)
def test_a_submission_run_with_other_settings_than_its_mlperf_conf_is_refused(
    case: str, tmp_path: Path
) -> None:
    scenario, line, logged = CONF_EDITS[case]
    members = _members(_shipped(scenario))
    (conf,) = (n for n in members if n.count("/") == 2 and n.endswith("/mlperf.conf"))
    members[conf] = (members[conf] or b"") + line.encode() + b"\n"
    result = conf.replace("mlperf.conf", "result.json")

    def new_sha(data: dict[str, Any]) -> None:
        sha = hashlib.sha256(members[conf] or b"").hexdigest()
        data["loadgen_config"]["mlperf_conf_sha256"] = sha

    shipped = _write(tmp_path / "shipped.tar", members)
    message = _refused(shipped, tmp_path, [_edit_json(result, new_sha)])
    key = line.split(" = ")[0].rsplit(".", 1)[1]
    assert f"mlperf_log_detail.txt logs effective_{logged} {conf}'s {key} " in message


def test_the_shipped_bundles_pass_every_check() -> None:
    for scenario in ("Offline", "SingleStream"):
        verdict = verify_bundle(_shipped(scenario), [PUBLISHED / "beyond-tops-founders.pub"])
        assert verdict.checks[3].line.startswith("check submission-claim passed: 1 result.json")


def test_bundling_refuses_a_result_without_its_detail_log(tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    (run / "mlperf_log_detail.txt").unlink()
    with pytest.raises(ResultError, match=r"result\.json: no mlperf_log_detail\.txt beside it"):
        _bundle([run], tmp_path / "r.tar")
    assert not (tmp_path / "r.tar").exists()


def test_trials_judged_by_another_metric_are_refused(bundle: Path, tmp_path: Path) -> None:
    def other(data: dict[str, Any]) -> None:
        data["metric"] = "samples_per_second"

    message = _refused(bundle, tmp_path, [_edit_json(TRIALS, other)])
    assert (
        f"check trials failed: {TRIALS}: metric is samples_per_second, but MLPerf's metric of its "
        "2 trials' result.json is latency_ns.early_stopping_p90"
    ) in message
