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

from harness.bundle.tarball import MAX_MEMBER_BYTES, unsafe_reason
from harness.errors import BundleError
from harness.records.layout import BUNDLE_RUNS_DIR, MANIFEST_FILE
from harness.strictjson import Format, Json, JsonObject, bad_number, check_versioned

MANIFEST_VERSION = 1
FORMAT = "beyond-tops bundle"
MANIFEST = Format(
    what="a beyond-tops bundle manifest",
    newest=MANIFEST_VERSION,
    oldest=1,
    kind=FORMAT,
    kind_key="format",
    older_fix="remake the bundle",
)
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

    data: JsonObject
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
    runs: Sequence[JsonObject],
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


def run_record(path: str, result: JsonObject) -> JsonObject:
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
    if not isinstance(data.get("schema_version"), int):
        raise _bad(bundle, "no schema_version")
    check_versioned(data, f"{bundle}: {MANIFEST_FILE}", MANIFEST, BundleError)
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


def _check_list(bundle: Path, data: JsonObject, key: str) -> list[JsonObject]:
    value = data.get(key)
    items = [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
    if not isinstance(value, list) or len(items) != len(value):
        raise _bad(bundle, f"`{key}` is {_kind(value)}, not a list of objects")
    return items


def _root(bundle: Path, index: int, root: JsonObject) -> str:
    path, kind = root.get("path"), root.get("kind")
    if not isinstance(kind, str):
        raise _bad(bundle, f"roots[{index}].kind is {_kind(kind)}, not text")
    return _path(bundle, f"roots[{index}].path", path)


def _path(bundle: Path, key: str, path: object) -> str:
    if not isinstance(path, str):
        raise _bad(bundle, f"{key} is {_kind(path)}, not a path")
    reason = unsafe_reason(path) or (
        None if path.startswith(f"{BUNDLE_RUNS_DIR}/") else f"is not under {BUNDLE_RUNS_DIR}/"
    )
    if reason is not None:
        raise _bad(bundle, f"{key} {path!r:.80} {reason}")
    return path


def _files(bundle: Path, entries: list[JsonObject]) -> dict[str, FileEntry]:
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


def _get(data: Json, *keys: str) -> Json:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _bad(bundle: Path, problem: str) -> BundleError:
    return BundleError(
        f"{bundle}: {MANIFEST_FILE} is signed but unreadable: {problem}; remake the bundle"
    )
