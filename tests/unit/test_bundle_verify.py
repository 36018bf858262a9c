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

from harness.bundle.keys import fingerprint
from harness.bundle.make import BundleRequest, make_bundle
from harness.bundle.manifest import Provenance, canonical_json
from harness.bundle.open import is_bundle, open_bundle
from harness.bundle.signature import signature_bytes
from harness.bundle.verify import verify_bundle
from harness.errors import (
    BadSignatureError,
    BundleError,
    ConfigError,
    EditedResultError,
    ResultError,
    TamperedFileError,
    UntrustedKeyError,
)
from tests.conftest import REPO

LOG_DIR = REPO / "tests" / "fixtures" / "loadgen" / "singlestream-valid"
MADE_BY = Provenance(harness_version="0.1.0", git_commit="c0ffee", git_dirty=False)
SIGNER = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
Members = dict[str, bytes | None]  # tar name: data, or None for a directory


def _result(run_id: str) -> dict[str, Any]:
    """A result.json whose log-derived numbers are the fixture log's (copied by hand)."""
    return {
        "schema_version": 4,
        "run_id": run_id,
        "scenario": "SingleStream",
        "valid": True,
        "submission_valid": False,
        "loadgen_errors": [],
        "samples_per_second": 2798.92,
        "qps_with_loadgen_overhead": 2798.92,
        "latency_ns": {"p50": 352503, "p90": 394596, "p99": 453773},
        "settings": {"min_duration_ms": 2000, "performance_sample_count": 128},
        "model": {"name": "tiny", "sha256": "ab" * 32},
        "versions": {"harness": "0.1.0"},
        "fingerprint": {"harness": {"git_commit": "d00d", "git_dirty": False}},
        "image": {"id": "sha256:" + "cd" * 32, "tag": "beyond-tops/cpu:0.1.0-d00d"},
        "precision": {"precision": "int8", "recipe": {"method": "static", "params": {}}},
        "telemetry": {"avg_power_w": 100.0},
        "server": None,
    }


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
    path.mkdir()
    (path / "trials.json").write_text('{"kind": "trials"}\n')
    for n in (1, 2):
        _run(path / f"trial-{n}")
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
    assert run["precision_recipe"] == {"method": "static", "params": {}}
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
        result["telemetry"]["avg_power_w"] = 1.0
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
