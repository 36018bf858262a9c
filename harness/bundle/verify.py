"""`harness verify`: a bundle's signature, then its signer, then its files, then its results.

The order makes each tampering show as itself. The signature comes first: an edited file
whose new sha256 was written into MANIFEST.json without signing again is a bad signature.
The signer next: a bundle re-signed by someone else's key is an untrusted key. Then the
files against the signed manifest: missing, added, then edited. A result.json whose numbers
differ from its intact LoadGen log is reported as an edited result, before any other
changed file and even when every sha256 matches (a manifest made after the edit and signed
with a trusted key). A bundled file that cannot be read as what it must be (a detail log not
UTF-8, a result.json with an Infinity) is named by its path in the bundle, after the
signature and signer are judged: as tampered where its sha256 is not the signed one, else as
a bundle made broken by its signer.

A valid signature proves only that its signer vouches for these bytes. So once every file is
the signed one, the cross-checks (harness.bundle.crosscheck) read the files against each
other, each named in its refusal (exit 28): a result.json needs its detail log; the
manifest's run records equal the results; a submission claim needs MLPerf's settings in the
log; trials.json and sweep.json equal what their trials give; query_latencies.npz gives the
logged percentiles; a generative run's tokens/s, TTFT, TPOT and token counts equal its log's and
its token_times.npz's. A key holder who edits and signs again is caught wherever they disagree.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from harness.bundle.claims import check_claims
from harness.bundle.crosscheck import Contents, Passed, check_detail_logs
from harness.bundle.groups import check_sweeps, check_trials
from harness.bundle.keys import load_trusted
from harness.bundle.latencies import check_query_latencies
from harness.bundle.manifest import Manifest, parse_manifest
from harness.bundle.numbers import check_run, describe_all
from harness.bundle.provenance import check_provenance
from harness.bundle.signature import check_signature
from harness.bundle.tarball import Unpacked, unpack
from harness.bundle.tokens import check_tokens
from harness.errors import (
    AddedFileError,
    BundleError,
    EditedResultError,
    MissingFileError,
    ResultError,
    TamperedFileError,
    UntrustedKeyError,
)
from harness.records.layout import DETAIL_LOG, MANIFEST_FILE, RESULT_FILE, SIGNATURE_FILE
from harness.strictjson import JsonObject

AGAIN = "do not use this bundle; get it again from its signer"
# In this order: a result's own log first, then what rests on the results.
CROSS_CHECKS = (
    check_detail_logs,
    check_provenance,
    check_claims,
    check_trials,
    check_sweeps,
    check_query_latencies,
    check_tokens,
)


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """A bundle that passed: its signer, whether one of the trusted keys, what was checked.

    ``trusted_by`` is the --trust file that holds the signer's key; None when no trusted
    keys were given (the signature is valid, the signer unchecked).
    """

    manifest: JsonObject
    roots: tuple[str, ...]
    signer_fingerprint: str
    signer_key: str
    trusted_by: Path | None
    files: int
    results_checked: int
    checks: tuple[Passed, ...]

    @property
    def trusted(self) -> bool:
        """Whether the signer's key is one the user trusts."""
        return self.trusted_by is not None


def verify_bundle(bundle: Path, trusted: Sequence[Path] = ()) -> Verdict:
    """Check a bundle, unpacked into a temporary directory (never the working directory)."""
    keys = load_trusted(trusted)
    with tempfile.TemporaryDirectory(prefix="harness-verify-") as tmp:
        unpacked = unpack(bundle, Path(tmp), keep=(MANIFEST_FILE, SIGNATURE_FILE))
        return check_unpacked(bundle, unpacked, Path(tmp), keys)


def check_unpacked(
    bundle: Path, unpacked: Unpacked, root: Path, trusted: Mapping[str, Path]
) -> Verdict:
    """Check a bundle unpacked under `root`; `trusted` maps fingerprints to their key files.

    With no trusted keys the signer is not checked (the verdict says so); with some, a
    signer outside them is refused before any file is looked at.
    """
    manifest_raw, signature_raw = _signed_files(bundle, unpacked)
    signer = check_signature(bundle, signature_raw, manifest_raw)
    if trusted and signer.fingerprint not in trusted:
        raise UntrustedKeyError(
            f"{bundle}: signed by {signer.fingerprint}, which is none of the --trust keys "
            f"({', '.join(sorted(trusted))}); if you trust this signer, pass their public key "
            "with --trust, else do not use the bundle"
        )
    manifest = parse_manifest(bundle, manifest_raw)
    present = {k: v for k, v in unpacked.files.items() if k not in (MANIFEST_FILE, SIGNATURE_FILE)}
    _check_listing(bundle, manifest, present)
    changed = sorted(
        path
        for path, entry in manifest.files.items()
        if present[path] != (entry.sha256, entry.size_bytes)
    )
    checked = _check_results(bundle, manifest, root, set(changed), signer.fingerprint)
    if changed:
        raise TamperedFileError(
            f"{bundle}: {changed[0]} differs from its sha256 in {MANIFEST_FILE}{_more(changed)}; "
            f"it was altered after signing: {AGAIN}"
        )
    contents = Contents(bundle=bundle, root=root, manifest=manifest)
    numbers = Passed(
        check="result-numbers",
        detail=f"{checked} result.json agree with their LoadGen logs (verdict, samples/s, "
        "latencies, effective settings)",
    )
    return Verdict(
        manifest=manifest.data,
        roots=manifest.roots,
        signer_fingerprint=signer.fingerprint,
        signer_key=signer.public_key,
        trusted_by=trusted.get(signer.fingerprint),
        files=len(manifest.files),
        results_checked=checked,
        checks=(numbers, *(check(contents) for check in CROSS_CHECKS)),
    )


def _signed_files(bundle: Path, unpacked: Unpacked) -> tuple[bytes, bytes]:
    manifest = unpacked.kept.get(MANIFEST_FILE)
    signature = unpacked.kept.get(SIGNATURE_FILE)
    if manifest is None:
        raise BundleError(
            f"{bundle}: no {MANIFEST_FILE} at its top; not a bundle: make one with `harness bundle`"
        )
    if signature is None:
        raise BundleError(
            f"{bundle}: no {SIGNATURE_FILE}; an unsigned bundle proves nothing: ask its maker "
            "to sign it (`harness bundle --key`)"
        )
    return manifest, signature


def _check_listing(bundle: Path, manifest: Manifest, present: Mapping[str, object]) -> None:
    missing = sorted(set(manifest.files) - set(present))
    if missing:
        raise MissingFileError(
            f"{bundle}: {missing[0]} is listed in {MANIFEST_FILE} but not in the bundle"
            f"{_more(missing)}; it was removed after signing: {AGAIN}"
        )
    added = sorted(set(present) - set(manifest.files))
    if added:
        raise AddedFileError(
            f"{bundle}: {added[0]} is in the bundle but not in its {MANIFEST_FILE}"
            f"{_more(added)}; it was added after signing: {AGAIN}"
        )


def _check_results(
    bundle: Path, manifest: Manifest, root: Path, changed: set[str], signer: str
) -> int:
    """Compare each result.json with its detail log where the log is intact; how many were."""
    checked = 0
    for path in sorted(manifest.files):
        pure = PurePosixPath(path)
        log = str(pure.with_name(DETAIL_LOG))
        if pure.name != RESULT_FILE or log not in manifest.files or log in changed:
            continue
        try:
            found = check_run(root.joinpath(*pure.parts))
        except ResultError as exc:  # a file that is not what LoadGen or beyond-tops writes
            raise _unreadable(
                bundle, str(exc).replace(f"{root}{os.sep}", ""), path in changed, signer
            ) from None
        if found:
            raise EditedResultError(
                f"{bundle}: {path}: {describe_all(found)}; the result was edited after LoadGen "
                f"wrote its log: {AGAIN}"
            )
        checked += 1
    return checked


def _unreadable(bundle: Path, problem: str, altered: bool, signer: str) -> BundleError:
    """A bundled file that cannot be read: tampered with after signing, or signed broken."""
    if altered:
        return TamperedFileError(
            f"{bundle}: {problem}; its sha256 is not the one in {MANIFEST_FILE}: it was "
            f"altered after signing: {AGAIN}"
        )
    return BundleError(
        f"{bundle}: {problem}; its sha256 is the one signed by {signer}, so it was bundled "
        "so (not altered after): remake the bundle from the run"
    )


def _more(paths: Sequence[str]) -> str:
    return f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
