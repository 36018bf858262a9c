"""MANIFEST.sig: an Ed25519 signature over MANIFEST.json's exact bytes, with the signing key.

History of SIGNATURE_VERSION: 1, the first.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.bundle.keys import fingerprint, openssh_public, parse_openssh_public
from harness.bundle.manifest import canonical_json
from harness.errors import BadSignatureError, BundleError
from harness.records.layout import MANIFEST_FILE, SIGNATURE_FILE
from harness.strictjson import Format, JsonObject, check_versioned

SIGNATURE_VERSION = 1
SIGNATURE = Format(
    what="a beyond-tops bundle signature",
    newest=SIGNATURE_VERSION,
    oldest=1,
    older_fix="get the bundle again from its signer",
)
ALGORITHM = "ed25519"


@dataclass(frozen=True, kw_only=True)
class Signer:
    """The key a valid signature was made with: its OpenSSH line and its fingerprint."""

    public_key: str
    fingerprint: str


def signature_bytes(key: Ed25519PrivateKey, manifest: bytes) -> bytes:
    """MANIFEST.sig's bytes: the algorithm, the public key, its fingerprint, the signature."""
    public = key.public_key()
    return canonical_json(
        {
            "schema_version": SIGNATURE_VERSION,
            "algorithm": ALGORITHM,
            "signed_file": MANIFEST_FILE,
            "public_key": openssh_public(public),
            "fingerprint": fingerprint(public),
            "signature": base64.b64encode(key.sign(manifest)).decode("ascii"),
        }
    )


def check_signature(bundle: Path, raw: bytes, manifest: bytes) -> Signer:
    """The signer, once MANIFEST.sig verifies the manifest's bytes with the key it names.

    Raises:
        BadSignatureError: the signature file is altered or does not verify the manifest.
    """
    data = _fields(bundle, raw)
    key = parse_openssh_public(str(data.get("public_key")))
    if key is None:
        raise _bad(bundle, "its public_key is not an OpenSSH Ed25519 key")
    if data.get("fingerprint") != fingerprint(key):
        raise _bad(bundle, "its fingerprint is not its public key's")
    try:
        signature = base64.b64decode(str(data.get("signature")), validate=True)
        key.verify(signature, manifest)
    except (binascii.Error, InvalidSignature):
        raise _bad(bundle, f"its signature does not verify {MANIFEST_FILE}") from None
    return Signer(public_key=openssh_public(key), fingerprint=fingerprint(key))


def _fields(bundle: Path, raw: bytes) -> JsonObject:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _bad(bundle, "it is not JSON") from None
    if not isinstance(data, dict):
        raise _bad(bundle, "it is not a JSON object")
    data = check_versioned(data, f"{bundle}: {SIGNATURE_FILE}", SIGNATURE, BundleError).data
    if data.get("algorithm") != ALGORITHM or data.get("signed_file") != MANIFEST_FILE:
        raise _bad(bundle, f"it is not an {ALGORITHM} signature of {MANIFEST_FILE}")
    return data


def _bad(bundle: Path, problem: str) -> BadSignatureError:
    return BadSignatureError(
        f"{bundle}: {SIGNATURE_FILE}: {problem}: the manifest or its signature was altered after "
        "signing; do not use this bundle, get it again from its signer"
    )
