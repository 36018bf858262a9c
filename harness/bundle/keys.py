"""Ed25519 keys for bundles: made by keygen, read from PEM or OpenSSH files, fingerprinted."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from harness.errors import ConfigError
from harness.files import atomic_create

OPENSSH_PRIVATE = b"-----BEGIN OPENSSH PRIVATE KEY-----"
PEM_PUBLIC = "-----BEGIN PUBLIC KEY-----"
PUBLIC_SUFFIX = ".pub"
PUBLIC_COMMENT = "beyond-tops"
KEYGEN_HINT = "`harness keygen --out PATH` makes one"
PRIVATE_MODE = 0o600
# Key types other than Ed25519, named for the message that refuses them.
_KINDS: tuple[tuple[str, tuple[type[object], ...]], ...] = (
    ("RSA", (rsa.RSAPrivateKey, rsa.RSAPublicKey)),
    ("ECDSA", (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)),
    ("DSA", (dsa.DSAPrivateKey, dsa.DSAPublicKey)),
    ("Ed448", (ed448.Ed448PrivateKey, ed448.Ed448PublicKey)),
)


def fingerprint(key: Ed25519PublicKey) -> str:
    """The key's fingerprint exactly as `ssh-keygen -lf KEY.pub` prints it: `SHA256:…`.

    OpenSSH hashes the key's wire blob (the length-prefixed string "ssh-ed25519", then the
    length-prefixed 32-byte key), not the raw key, and writes the digest in base64 without
    padding. We do the same, so a signer's fingerprint reads the same here, in ssh-keygen
    and in a key list on a code host.
    """
    blob = base64.b64decode(openssh_public(key).split()[1])
    digest = hashlib.sha256(blob).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def openssh_public(key: Ed25519PublicKey) -> str:
    """The public key as one OpenSSH line without a comment: `ssh-ed25519 AAAA…`."""
    raw = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return raw.decode("ascii")


def public_path(private: Path) -> Path:
    """Where keygen puts the public half of the key at `private`: PATH.pub."""
    return private.with_name(private.name + PUBLIC_SUFFIX)


def write_new_key(path: Path) -> Ed25519PrivateKey:
    """Make a key: PATH (PKCS8 PEM, unencrypted, mode 0600) and PATH.pub (an OpenSSH line).

    Neither file is ever overwritten: ConfigError names the one that exists.
    """
    pub = public_path(path)
    for target in (path, pub):
        if target.exists() or target.is_symlink():
            raise ConfigError(_exists(target))
    if not path.parent.is_dir():
        raise ConfigError(f"{path.parent}: no such directory; create it or pass another --out")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    line = f"{openssh_public(key.public_key())} {PUBLIC_COMMENT}\n".encode("ascii")
    try:
        atomic_create(path, lambda handle: handle.write(pem), mode=PRIVATE_MODE)
        atomic_create(pub, lambda handle: handle.write(line))
    except FileExistsError as exc:  # made by someone else since the check above
        raise ConfigError(_exists(Path(exc.filename or path))) from None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot write the key ({exc.strerror}); pass another --out"
        ) from None
    return key


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """An unencrypted Ed25519 private key from a PEM (PKCS8) or an OpenSSH key file."""
    data = _read(path, "--key")
    key: object
    try:
        if data.lstrip().startswith(OPENSSH_PRIVATE):
            key = serialization.load_ssh_private_key(data, password=None)
        else:
            key = serialization.load_pem_private_key(data, password=None)
    except (TypeError, ValueError, UnsupportedAlgorithm) as exc:
        # cryptography says "encrypted, and no password given" with a TypeError
        if isinstance(exc, TypeError) or "password-protected" in str(exc):
            raise ConfigError(
                f"{path}: the key is encrypted, and bundles are signed without prompting: use "
                f"an unencrypted copy (`ssh-keygen -p -N '' -f COPY`), or {KEYGEN_HINT}"
            ) from None
        raise ConfigError(
            f"{path}: not a PEM or OpenSSH private key ({_first_line(exc)}); {KEYGEN_HINT}"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError(
            f"{path}: {_kind(key)} key, not Ed25519; bundles are signed with Ed25519: {KEYGEN_HINT}"
        )
    return key


def load_public_keys(path: Path) -> tuple[Ed25519PublicKey, ...]:
    """The Ed25519 keys of a --trust file: a PEM public key, or OpenSSH lines (one or more).

    OpenSSH lines are `ssh-ed25519 AAAA… comment`, as a .pub file or ssh-keygen -y prints
    them; blank lines and lines starting with `#` are skipped.
    """
    text = _read(path, "--trust").decode("utf-8", errors="replace")
    if PEM_PUBLIC in text:
        return (_pem_public(path, text),)
    if "PRIVATE KEY-----" in text:
        raise ConfigError(
            f"{path}: a private key; --trust takes a public key (PATH.pub, or what "
            f"`ssh-keygen -y -f {path}` prints)"
        )
    keys = tuple(
        _ssh_public(path, number, line.strip())
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    )
    if not keys:
        raise ConfigError(f"{path}: no public key in it; pass an OpenSSH .pub file or a PEM key")
    return keys


def load_trusted(paths: Sequence[Path]) -> dict[str, Path]:
    """The trusted keys' fingerprints, each with the file it came from."""
    return {fingerprint(key): path for path in paths for key in load_public_keys(path)}


def parse_openssh_public(line: str) -> Ed25519PublicKey | None:
    """An Ed25519 key from an OpenSSH line, or None when the line holds no such key."""
    try:
        key = serialization.load_ssh_public_key(line.encode("ascii"))
    except (ValueError, UnicodeEncodeError, UnsupportedAlgorithm):
        return None
    return key if isinstance(key, Ed25519PublicKey) else None


def _pem_public(path: Path, text: str) -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(text.encode("utf-8"))
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ConfigError(f"{path}: not a PEM public key ({_first_line(exc)})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ConfigError(f"{path}: {_kind(key)} key, not Ed25519; bundles use Ed25519 keys only")
    return key


def _ssh_public(path: Path, number: int, line: str) -> Ed25519PublicKey:
    key = parse_openssh_public(line)
    if key is None:
        raise ConfigError(
            f"{path}:{number}: not an OpenSSH Ed25519 public key line (`ssh-ed25519 AAAA… "
            "comment`); pass the .pub file of the signer's key"
        )
    return key


def _read(path: Path, option: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the key ({exc.strerror}); check {option}") from None


def _exists(path: Path) -> str:
    return f"{path}: already exists; a key is never overwritten: pass another --out"


def _kind(key: object) -> str:
    for name, types in _KINDS:
        if isinstance(key, types):
            return name
    return type(key).__name__


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
