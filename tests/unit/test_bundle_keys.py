"""Bundle keys: keygen never overwrites, PEM and OpenSSH keys load, fingerprints are OpenSSH's."""

from __future__ import annotations

import base64
import hashlib
import stat
import struct
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.bundle.keys import (
    fingerprint,
    load_private_key,
    load_public_keys,
    load_trusted,
    public_path,
)
from harness.cli import main
from harness.errors import ConfigError


def _ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _openssh_fingerprint(key: Ed25519PrivateKey) -> str:
    """What `ssh-keygen -lf` prints, built from the wire format by hand (RFC 8709)."""
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    blob = _ssh_string(b"ssh-ed25519") + _ssh_string(raw)
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def test_keygen_writes_a_private_key_0600_and_an_openssh_public_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "signing"
    assert main(["keygen", "--out", str(path)]) == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    key = load_private_key(path)
    line = public_path(path).read_text()
    assert line.startswith("ssh-ed25519 AAAA") and line.endswith("\n")
    (public,) = load_public_keys(public_path(path))
    assert fingerprint(public) == fingerprint(key.public_key()) == _openssh_fingerprint(key)
    assert fingerprint(public) in capsys.readouterr().out
    assert not list(tmp_path.glob(".*.tmp"))  # no temp file left behind


@pytest.mark.parametrize("existing", ["signing", "signing.pub"])
def test_keygen_never_overwrites_either_file(
    existing: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / existing).write_text("precious\n")
    assert main(["keygen", "--out", str(tmp_path / "signing")]) == ConfigError.exit_code
    err = capsys.readouterr().err
    assert f"{tmp_path / existing}: already exists; a key is never overwritten" in err
    assert len(err.strip().splitlines()) == 1
    assert (tmp_path / existing).read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [existing]


def test_fingerprint_matches_openssh_for_a_fixed_key() -> None:
    key = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    assert fingerprint(key.public_key()) == _openssh_fingerprint(key)
    assert len(fingerprint(key.public_key())) == len("SHA256:") + 43


def test_openssh_private_keys_are_accepted(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    path = tmp_path / "id_ed25519"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    assert path.read_bytes().startswith(b"-----BEGIN OPENSSH PRIVATE KEY-----")
    assert fingerprint(load_private_key(path).public_key()) == _openssh_fingerprint(key)


def test_an_encrypted_key_is_refused_with_how_to_decrypt(tmp_path: Path) -> None:
    path = tmp_path / "id_ed25519"
    path.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    with pytest.raises(ConfigError, match=r"encrypted.*ssh-keygen -p"):
        load_private_key(path)


def test_a_key_that_is_not_ed25519_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ec.pem"
    path.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    with pytest.raises(ConfigError, match=r"ec\.pem: ECDSA key, not Ed25519"):
        load_private_key(path)


def test_garbage_and_absent_keys_are_config_errors(tmp_path: Path) -> None:
    (tmp_path / "junk").write_text("not a key\n")
    with pytest.raises(ConfigError, match="junk: not a PEM or OpenSSH private key"):
        load_private_key(tmp_path / "junk")
    with pytest.raises(ConfigError, match="absent: cannot read the key"):
        load_private_key(tmp_path / "absent")


def test_trust_files_take_openssh_lines_and_pem(tmp_path: Path) -> None:
    first, second = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    lines = tmp_path / "signers"
    lines.write_text(
        "# our two signers\n\n"
        + "".join(
            k.public_key()
            .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
            .decode()
            + f" person{n}@example\n"
            for n, k in enumerate((first, second))
        )
    )
    pem = tmp_path / "second.pem"
    pem.write_bytes(
        second.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    assert [fingerprint(k) for k in load_public_keys(lines)] == [
        _openssh_fingerprint(first),
        _openssh_fingerprint(second),
    ]
    assert load_trusted([pem]) == {_openssh_fingerprint(second): pem}


def test_trust_files_that_are_not_ed25519_public_keys_are_refused(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    with pytest.raises(ConfigError, match="a private key; --trust takes a public key"):
        load_public_keys(private)
    ecdsa = tmp_path / "ecdsa.pub"
    ecdsa.write_bytes(
        b"\n"
        + ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    )
    with pytest.raises(ConfigError, match=r"ecdsa\.pub:2: not an OpenSSH Ed25519 public key"):
        load_public_keys(ecdsa)
    (tmp_path / "empty.pub").write_text("# nothing\n")
    with pytest.raises(ConfigError, match="no public key in it"):
        load_public_keys(tmp_path / "empty.pub")
