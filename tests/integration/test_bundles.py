"""A real run of the tiny model bundled, verified and tampered with, all through the CLI."""

from __future__ import annotations

import hashlib
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.bundle.keys import load_private_key
from harness.bundle.manifest import canonical_json
from harness.bundle.signature import signature_bytes
from harness.cli import main
from harness.errors import (
    AddedFileError,
    BadSignatureError,
    EditedResultError,
    MissingFileError,
    ResultError,
    TamperedFileError,
    UntrustedKeyError,
)
from tests.conftest import TINY_SS, write_scenario
from tests.tar_members import Members, read_members, write_members

pytestmark = pytest.mark.slow
Edit = Callable[[Members], None]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Path:
    """One real SingleStream run, shared by the tests (each bundles or copies, never edits it)."""
    tmp = tmp_path_factory.mktemp("bundled")
    scenario = write_scenario(tmp / "s.yaml", TINY_SS)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        assert main(["run", str(scenario), "--out", str(tmp / "runs")]) == 0
    (run,) = (tmp / "runs").iterdir()
    return run


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """keys/signer (+ .pub) made by `harness keygen`, and keys/attacker."""
    directory = tmp_path_factory.mktemp("keys")
    for name in ("signer", "attacker"):
        assert main(["keygen", "--out", str(directory / name)]) == 0
    return directory


@pytest.fixture(scope="module")
def bundle(run_dir: Path, keys: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "run.tar"
    assert main(["bundle", str(run_dir), "--key", str(keys / "signer"), "--out", str(out)]) == 0
    return out


def test_a_real_run_bundles_and_verifies(
    bundle: Path, keys: Path, run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["verify", str(bundle), "--trust", str(keys / "signer.pub")]) == 0
    out = capsys.readouterr().out
    assert f"{bundle}: signature valid; 8 checks passed" in out
    assert f"trusted ({keys / 'signer.pub'})" in out
    assert "check result-numbers passed: 1 result.json agree with their LoadGen logs" in out
    assert f"bundled  runs/{run_dir.name}" in out
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
    for name in ("result.json", "mlperf_log_detail.txt", "job.json", "user.conf", "accuracy"):
        assert f"runs/{run_dir.name}/{name}" in names


def test_without_trust_the_signer_is_reported_unchecked(
    bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["verify", str(bundle)]) == UntrustedKeyError.exit_code == 22
    out, err = capsys.readouterr()
    assert "NOT trusted: no --trust key given" in out
    assert "was not checked against any trusted key; pass their public key with --trust" in err
    assert main(["verify", str(bundle), "--trust-any"]) == 0
    assert "NOT checked (--trust-any)" in capsys.readouterr().out


def test_the_same_run_and_key_give_a_byte_identical_bundle(
    bundle: Path, run_dir: Path, keys: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again.tar"
    assert main(["bundle", str(run_dir), "--key", str(keys / "signer"), "--out", str(again)]) == 0
    assert again.read_bytes() == bundle.read_bytes()


def test_an_existing_out_is_never_overwritten(
    bundle: Path, run_dir: Path, keys: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = bundle.read_bytes()
    args = ["bundle", str(run_dir), "--key", str(keys / "signer"), "--out", str(bundle)]
    assert main(args) == ResultError.exit_code
    assert "already exists; a bundle is never overwritten" in capsys.readouterr().err
    assert bundle.read_bytes() == before


def test_an_openssh_key_signs_and_its_pub_line_verifies(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = Ed25519PrivateKey.generate()
    (tmp_path / "id_ed25519").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    (tmp_path / "id_ed25519.pub").write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        + b" me@host\n"
    )
    out = tmp_path / "b.tar"
    args = ["bundle", str(run_dir), "--key", str(tmp_path / "id_ed25519"), "--out", str(out)]
    assert main(args) == 0
    assert main(["verify", str(out), "--trust", str(tmp_path / "id_ed25519.pub")]) == 0


def test_an_incomplete_run_is_refused(
    run_dir: Path, keys: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / run_dir.name
    _copy_tree(run_dir, copy)
    (copy / "INCOMPLETE").write_text("failed: boom\nexit_code: 5\n")
    out = tmp_path / "b.tar"
    assert main(["bundle", str(copy), "--key", str(keys / "signer"), "--out", str(out)]) == 6
    assert "incomplete (failed: boom); bundle only finished runs" in capsys.readouterr().err
    assert not out.exists()


def _edit_number(members: Members) -> None:
    (path,) = (n for n in members if n.endswith("/result.json") and "/accuracy/" not in n)
    result = json.loads(members[path] or b"")
    result["samples_per_second"] = 9999.0
    members[path] = json.dumps(result, indent=2).encode()


def _edit_log(members: Members) -> None:
    (path,) = (n for n in members if n.count("/") == 2 and n.endswith("mlperf_log_summary.txt"))
    members[path] = (members[path] or b"") + b"Result is : VALID\n"


def _add_file(members: Members) -> None:
    (root,) = (n for n in members if n.count("/") == 1 and members[n] is None)
    members[f"{root}/extra.txt"] = b"not signed\n"


def _remove_file(members: Members) -> None:
    (path,) = (n for n in members if n.count("/") == 2 and n.endswith("/user.conf"))
    del members[path]


def _rehash(members: Members) -> None:
    manifest = json.loads(members["MANIFEST.json"] or b"")
    for entry in manifest["files"]:
        data = members[entry["path"]] or b""
        entry["sha256"], entry["size"] = hashlib.sha256(data).hexdigest(), len(data)
    members["MANIFEST.json"] = canonical_json(manifest)


def _resign(key_file: str) -> Edit:
    def resign(members: Members) -> None:
        key = load_private_key(Path(key_file))
        members["MANIFEST.sig"] = signature_bytes(key, members["MANIFEST.json"] or b"")

    return resign


# The six tamperings, each with the exit code and the words that must report it as itself.
TAMPERINGS: dict[str, tuple[list[Edit | str], int, str]] = {
    "edited-number": (
        [_edit_number],
        EditedResultError.exit_code,
        "result.json: samples_per_second is 9999.0 but mlperf_log_detail.txt logs ",
    ),
    "edited-log": (
        [_edit_log],
        TamperedFileError.exit_code,
        "mlperf_log_summary.txt differs from its sha256 in MANIFEST.json",
    ),
    "added-file": (
        [_add_file],
        AddedFileError.exit_code,
        "extra.txt is in the bundle but not in its MANIFEST.json",
    ),
    "removed-file": (
        [_remove_file],
        MissingFileError.exit_code,
        "user.conf is listed in MANIFEST.json but not in the bundle",
    ),
    "untrusted-key": (
        [_edit_number, _rehash, "attacker"],
        UntrustedKeyError.exit_code,
        "which is none of the --trust keys",
    ),
    "bad-signature": (
        [_edit_number, _rehash],
        BadSignatureError.exit_code,
        "MANIFEST.sig: its signature does not verify MANIFEST.json",
    ),
    "edited-number-re-signed-by-the-trusted-key": (
        [_edit_number, _rehash, "signer"],
        EditedResultError.exit_code,
        "samples_per_second is 9999.0 but mlperf_log_detail.txt logs ",
    ),
}


@pytest.mark.parametrize("case", TAMPERINGS)
def test_each_tampering_is_reported_as_itself(
    case: str, bundle: Path, keys: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps, code, words = TAMPERINGS[case]
    members = read_members(bundle)
    for step in steps:
        (_resign(str(keys / step)) if isinstance(step, str) else step)(members)
    tampered = write_members(tmp_path / "tampered.tar", members)
    capsys.readouterr()
    assert main(["verify", str(tampered), "--trust", str(keys / "signer.pub")]) == code
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1
    assert err.startswith(f"error: {tampered}: ")
    assert len({c for _, c, _ in TAMPERINGS.values()}) == 6  # six kinds, six exit codes


def test_the_edited_number_message_names_the_logged_value(
    bundle: Path, keys: Path, run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logged = json.loads((run_dir / "result.json").read_text())["samples_per_second"]
    members = read_members(bundle)
    _edit_number(members)
    tampered = write_members(tmp_path / "tampered.tar", members)
    capsys.readouterr()
    assert main(["verify", str(tampered), "--trust", str(keys / "signer.pub")]) == 24
    err = capsys.readouterr().err
    assert f"is 9999.0 but mlperf_log_detail.txt logs {json.dumps(logged)}" in err


def _copy_tree(source: Path, dest: Path) -> None:
    dest.mkdir()
    for path in source.iterdir():
        if path.is_dir():
            _copy_tree(path, dest / path.name)
        else:
            (dest / path.name).write_bytes(path.read_bytes())


def test_show_compare_and_report_read_a_bundle_and_say_it_was_verified(
    bundle: Path, keys: Path, run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trust = ["--trust", str(keys / "signer.pub")]
    capsys.readouterr()
    assert main(["show", str(bundle), *trust]) == 0
    out, err = capsys.readouterr()
    assert f"{run_dir.name} [bundle {bundle.name}: verified, signer trusted]" in out
    assert f"bundle {bundle.name}: verified, signer trusted: SHA256:" in err
    assert main(["show", str(bundle)]) == 0  # no --trust: shown, the signer said unchecked
    out, err = capsys.readouterr()
    assert "verified, signer NOT checked]" in out and "pass --trust KEY.pub" in err
    assert main(["compare", str(run_dir), str(bundle), *trust]) == 0
    assert f"[bundle {bundle.name}: verified, signer trusted]" in capsys.readouterr().out
    out_dir = tmp_path / "report"
    assert main(["report", str(bundle), *trust, "--out", str(out_dir)]) == 0
    assert f"bundle {bundle.name}: verified, signer trusted" in (out_dir / "report.md").read_text()


def test_a_tampered_bundle_is_never_shown(
    bundle: Path, keys: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    members = read_members(bundle)
    _edit_number(members)
    _rehash(members)
    _resign(str(keys / "signer"))(members)
    tampered = write_members(tmp_path / "tampered.tar", members)
    capsys.readouterr()
    code = main(["show", str(tampered), "--trust", str(keys / "signer.pub")])
    assert code == EditedResultError.exit_code
    out, err = capsys.readouterr()
    assert "9999" not in out and "samples_per_second is 9999.0" in err
