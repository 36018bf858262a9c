"""Bundles for the verbs that read results (show, compare, report, reproduce): check, then open.

A bundle is opened only whole and only once verified: it is unpacked into a hidden directory
inside `dest`, checked as `harness verify` checks it, and only then moved into place.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from harness.bundle.keys import load_trusted
from harness.bundle.tarball import unpack
from harness.bundle.verify import check_unpacked
from harness.errors import ResultError
from harness.records.layout import MANIFEST_FILE, SIGNATURE_FILE
from harness.strictjson import Json


@dataclass(frozen=True, kw_only=True)
class OpenedBundle:
    """An opened bundle: its top-level run and group directories under `dest`, and its signer.

    ``verified`` is always True: a bundle that fails a check raises instead (the errors of
    `harness verify`). ``trusted`` says whether the signer is one of the trusted keys given;
    with none given it is False, and callers should say the signer was not checked.
    ``checks`` are verify's lines of what the bundle passed (`check trials passed: ...`).
    """

    run_dirs: tuple[Path, ...]
    verified: bool
    signer_fingerprint: str
    trusted: bool
    manifest: Mapping[str, Json]
    checks: tuple[str, ...] = ()


def is_bundle(path: Path) -> bool:
    """Whether `path` is a tar whose first member is MANIFEST.json, as `harness bundle` writes."""
    if not path.is_file():
        return False
    try:
        with tarfile.open(path, mode="r:") as tar:
            first = tar.next()
    except (OSError, tarfile.TarError):
        return False
    return first is not None and first.name == MANIFEST_FILE


def open_bundle(bundle: Path, dest: Path, trusted: Sequence[Path] = ()) -> OpenedBundle:
    """Verify a bundle and extract it into `dest`, a new or empty directory.

    `dest` then holds MANIFEST.json, MANIFEST.sig and runs/ as the bundle does. With trusted
    keys given, a signer outside them is refused (UntrustedKeyError); with none, any valid
    signer is accepted and `trusted` is False.

    Raises:
        BundleError and its subclasses: as `harness verify` (nothing is left in `dest`).
        ResultError: `dest` is not empty, or cannot be written.
        ConfigError: a trusted key file cannot be read.
    """
    keys = load_trusted(trusted)
    created = _prepare(dest)
    staging = Path(tempfile.mkdtemp(dir=dest, prefix=".unpacking-"))
    opened = False
    try:
        unpacked = unpack(bundle, staging, keep=(MANIFEST_FILE, SIGNATURE_FILE))
        verdict = check_unpacked(bundle, unpacked, staging, keys)
        for entry in sorted(staging.iterdir()):
            os.replace(entry, dest / entry.name)
        opened = True
    finally:  # on any exit: staging goes (empty once opened), and a dest made here if it failed
        shutil.rmtree(staging, ignore_errors=True)
        if created and not opened:
            with contextlib.suppress(OSError):
                dest.rmdir()
    return OpenedBundle(
        run_dirs=tuple(dest.joinpath(*root.split("/")) for root in verdict.roots),
        verified=True,
        signer_fingerprint=verdict.signer_fingerprint,
        trusted=verdict.trusted,
        manifest=MappingProxyType(dict(verdict.manifest)),
        checks=tuple(passed.line for passed in verdict.checks),
    )


def _prepare(dest: Path) -> bool:
    """Make `dest` if it is absent (True when made); refuse one that holds anything."""
    if dest.is_dir():
        if any(dest.iterdir()):
            raise ResultError(f"{dest}: not empty; a bundle opens into a new or empty directory")
        return False
    try:
        dest.mkdir(parents=True)
    except OSError as exc:
        raise ResultError(
            f"{dest}: cannot create it ({exc.strerror}); pass another directory"
        ) from None
    return True
