"""MANIFEST.json: every bundled file's sha256 and size, and where the bundled runs came from.

History of MANIFEST_VERSION: 1, the first.

Grammar of a manifest read back (issue #23): a JSON object of finite numbers; `format` is
FORMAT; `schema_version` an integer; `made_by` an object whose harness_version and
git_commit are text or null and git_dirty true, false or null; `roots` a list of
{path: a plain relative path under runs/, kind: text}; `runs` a list of objects; `files` a
list of {path: a plain relative path under runs/, listed once; sha256: 64 lower-case hex
digits; size: a whole number of bytes, 0..MAX_MEMBER_BYTES}. A refusal names the key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.bundle.tarball import MAX_MEMBER_BYTES, unsafe_reason
from harness.errors import BundleError
from harness.strictjson import bad_number

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
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _bad(bundle, f"not JSON ({type(exc).__name__})") from None
    found = bad_number(data)
    if found is not None:
        raise _bad(bundle, f"{found[0]} {found[1]}")
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
    _check_made_by(bundle, data.get("made_by"))
    _check_list(bundle, data, "runs")
    files = _files(bundle, _check_list(bundle, data, "files"))
    roots = [_root(bundle, i, r) for i, r in enumerate(_check_list(bundle, data, "roots"))]
    return Manifest(data=data, files=files, roots=tuple(roots))


def _check_made_by(bundle: Path, made_by: object) -> None:
    if not isinstance(made_by, dict):
        raise _bad(bundle, f"made_by is {_kind(made_by)}, not an object")
    for key, types in (("harness_version", str), ("git_commit", str), ("git_dirty", bool)):
        value = made_by.get(key)
        if value is not None and not isinstance(value, types):
            raise _bad(bundle, f"made_by.{key} is {_kind(value)}, not {types.__name__} or null")


def _check_list(bundle: Path, data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise _bad(bundle, f"`{key}` is {_kind(value)}, not a list of objects")
    return value


def _root(bundle: Path, index: int, root: Mapping[str, Any]) -> str:
    path, kind = root.get("path"), root.get("kind")
    if not isinstance(kind, str):
        raise _bad(bundle, f"roots[{index}].kind is {_kind(kind)}, not text")
    return _path(bundle, f"roots[{index}].path", path)


def _path(bundle: Path, key: str, path: object) -> str:
    if not isinstance(path, str):
        raise _bad(bundle, f"{key} is {_kind(path)}, not a path")
    reason = unsafe_reason(path) or (
        None if path.startswith(f"{RUNS_DIR}/") else f"is not under {RUNS_DIR}/"
    )
    if reason is not None:
        raise _bad(bundle, f"{key} {path!r:.80} {reason}")
    return path


def _files(bundle: Path, entries: list[dict[str, Any]]) -> dict[str, FileEntry]:
    files: dict[str, FileEntry] = {}
    for index, entry in enumerate(entries):
        key = f"files[{index}]"
        path = _path(bundle, f"{key}.path", entry.get("path"))
        sha, size = entry.get("sha256"), entry.get("size")
        if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
            raise _bad(bundle, f"{key}.sha256 is {sha!r:.80}, not 64 lower-case hex digits")
        if type(size) is not int or not 0 <= size <= MAX_MEMBER_BYTES:
            raise _bad(
                bundle, f"{key}.size is {size!r:.40}, not a whole number 0..{MAX_MEMBER_BYTES:,}"
            )
        if path in files:
            raise _bad(bundle, f"{key}.path {path!r:.80} is listed twice")
        files[path] = FileEntry(path=path, sha256=sha, size_bytes=size)
    return files


def _kind(value: object) -> str:
    """How a JSON value is described in a message: its JSON type, with a short value."""
    names = {dict: "an object", list: "a list", str: "text", bool: "true/false"}
    if value is None:
        return "missing or null"
    name = names.get(type(value), "a number")
    return f"{name} ({json.dumps(value)[:40]})" if name != "an object" else name


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
