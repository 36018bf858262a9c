"""MANIFEST.json: every bundled file's sha256 and size, and where the bundled runs came from.

History of MANIFEST_VERSION: 1, the first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.bundle.tarball import unsafe_reason
from harness.errors import BundleError

MANIFEST_NAME = "MANIFEST.json"
SIGNATURE_NAME = "MANIFEST.sig"
RUNS_DIR = "runs"  # the bundle's top folder: one entry per run or group given
MANIFEST_VERSION = 1
FORMAT = "beyond-tops bundle"
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True, kw_only=True)
class FileEntry:
    """One bundled file: its path from the bundle's top, sha256 (hex) and size in bytes."""

    path: str
    sha256: str
    size_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """The harness that made a bundle: its version, git commit and dirty flag (None: unknown)."""

    harness_version: str
    git_commit: str | None
    git_dirty: bool | None


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """A manifest as read back: its data, its files by path, its top-level runs and groups."""

    data: Mapping[str, Any]
    files: Mapping[str, FileEntry]
    roots: tuple[str, ...]


def canonical_json(data: object) -> bytes:
    """JSON with sorted keys, two-space indents, ASCII only and a final newline: one spelling."""
    return (
        json.dumps(data, indent=2, sort_keys=True, ensure_ascii=True, allow_nan=False) + "\n"
    ).encode("ascii")


def manifest_bytes(
    *,
    files: Sequence[FileEntry],
    roots: Mapping[str, str],
    runs: Sequence[Mapping[str, Any]],
    made_by: Provenance,
) -> bytes:
    """MANIFEST.json's exact bytes (what the signature covers); `roots` maps a path to its kind."""
    data = {
        "schema_version": MANIFEST_VERSION,
        "format": FORMAT,
        "made_by": {
            "harness_version": made_by.harness_version,
            "git_commit": made_by.git_commit,
            "git_dirty": made_by.git_dirty,
        },
        "roots": [{"path": path, "kind": kind} for path, kind in sorted(roots.items())],
        "runs": sorted(runs, key=lambda run: str(run["path"])),
        "files": [
            {"path": f.path, "sha256": f.sha256, "size": f.size_bytes}
            for f in sorted(files, key=lambda f: f.path)
        ],
    }
    return canonical_json(data)


def run_record(path: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """Where one run came from, as its result.json records it (None where it records nothing).

    The image is result.json's `image` block when the run was in a harness container, else
    the fingerprint's container block; no version of result.json records a registry digest
    yet, so `image_digest` is read where a later one may put it, and is None until then.
    """
    image = _get(result, "image") or _get(result, "fingerprint", "container") or {}
    return {
        "path": path,
        "run_id": _get(result, "run_id"),
        "scenario": _get(result, "scenario"),
        "harness_version": _get(result, "versions", "harness"),
        "git_commit": _get(result, "fingerprint", "harness", "git_commit"),
        "git_dirty": _get(result, "fingerprint", "harness", "git_dirty"),
        "image_id": _get(image, "id") or _get(image, "image_id"),
        "image_tag": _get(image, "tag") or _get(image, "image_tag"),
        "image_digest": _get(image, "digest") or _get(image, "image_digest"),
        "model_sha256": _get(result, "model", "sha256"),
        "precision": _get(result, "precision", "precision"),
        "precision_recipe": _get(result, "precision", "recipe"),
    }


def parse_manifest(bundle: Path, raw: bytes) -> Manifest:
    """Read MANIFEST.json's bytes (already signature-checked); BundleError for what it cannot be."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _bad(bundle, f"not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _bad(bundle, f"its format is not {FORMAT!r}")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _bad(bundle, "no schema_version")
    if version > MANIFEST_VERSION:
        raise BundleError(
            f"{bundle}: {MANIFEST_NAME} schema_version {version} was written by a newer "
            f"beyond-tops (this one reads {MANIFEST_VERSION}); upgrade beyond-tops"
        )
    files = _files(bundle, data.get("files"))
    roots = data.get("roots")
    if not isinstance(roots, list) or not all(
        isinstance(r, dict)
        and isinstance(r.get("path"), str)
        and unsafe_reason(r["path"]) is None
        and r["path"].startswith(f"{RUNS_DIR}/")
        for r in roots
    ):
        raise _bad(bundle, "`roots` is not a list of {path, kind} under runs/")
    return Manifest(data=data, files=files, roots=tuple(r["path"] for r in roots))


def _files(bundle: Path, entries: object) -> dict[str, FileEntry]:
    if not isinstance(entries, list):
        raise _bad(bundle, "`files` is not a list")
    files: dict[str, FileEntry] = {}
    for entry in entries:
        fields = entry if isinstance(entry, dict) else {}
        path, sha, size = fields.get("path"), fields.get("sha256"), fields.get("size")
        if not (
            isinstance(path, str)
            and isinstance(sha, str)
            and _SHA256.fullmatch(sha)
            and isinstance(size, int)
            and not isinstance(size, bool)
            and size >= 0
        ):
            raise _bad(bundle, f"a `files` entry is not {{path, sha256, size}}: {entry!r:.80}")
        reason = unsafe_reason(path)
        if reason is not None or not path.startswith(f"{RUNS_DIR}/") or path in files:
            raise _bad(bundle, f"file {path!r} {reason or 'is outside runs/ or listed twice'}")
        files[path] = FileEntry(path=path, sha256=sha, size_bytes=size)
    return files


def _get(data: object, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _bad(bundle: Path, problem: str) -> BundleError:
    return BundleError(
        f"{bundle}: {MANIFEST_NAME} is signed but unreadable: {problem}; remake the bundle"
    )
