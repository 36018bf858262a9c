"""Resolve a scenario's model to a file: generated zoo models (cached) or official downloads."""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

from harness.errors import ModelError
from harness.files import atomic_write_bytes
from harness.models.validate import file_sha256
from harness.paths import cache_root as cache_root  # its home is harness.paths

DEFAULT_SEED = 0


MIB = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class OfficialModel:
    """A published model file: where it lives and how to verify it."""

    name: str
    url: str
    md5: str  # the publisher's; a file that does not match is never used
    max_bytes: int  # a download larger than this is refused before it fills the disk
    equivalent: str
    note: str


OFFICIAL: dict[str, OfficialModel] = {
    "resnet50-mlperf": OfficialModel(
        name="resnet50-mlperf",
        url="https://zenodo.org/record/4735647/files/resnet50_v1.onnx",
        # Zenodo record 4735647's published md5 of resnet50_v1.onnx (opset 11), the file
        # MLPerf's automation downloads; the file is about 98 MiB.
        md5="f6a4da60cd5f084d97efc2c1ddb10beb",
        max_bytes=200 * MIB,
        equivalent="resnet50",
        note="MLPerf Inference ResNet-50 v1.5, opset 11, NCHW, input_tensor:0",
    ),
}


def cache_dir() -> Path:
    """Where generated and downloaded models live."""
    return cache_root() / "models"


def zoo_model_path(
    name: str, *, seed: int = DEFAULT_SEED, root: Path | None = None, generator: int | None = None
) -> Path:
    """Path of a generated zoo model, building it only when no valid cached copy exists.

    A manifest per (model, generator version, seed) names the file by its content hash;
    a missing or altered file is rebuilt. ``generator``: the version (None: the current).
    """
    from harness.models.zoo import ZOO

    if name not in ZOO:
        raise ModelError(f"model.zoo: unknown zoo model '{name}' (known: {', '.join(sorted(ZOO))})")
    entry = ZOO[name]
    root = root or cache_dir()
    version = entry.generator_version if generator is None else generator
    manifest = root / f"{name}-g{version}-s{seed}.json"
    cached = _cached(manifest)
    if cached is not None:
        return cached
    data = entry.build(seed, version).SerializeToString()
    digest = hashlib.sha256(data).hexdigest()
    path = root / f"{name}-{digest[:16]}.onnx"
    atomic_write_bytes(path, data)
    atomic_write_bytes(manifest, json.dumps({"file": path.name, "sha256": digest}).encode())
    return path


def official_model_path(name: str, *, root: Path | None = None, timeout_s: float = 60.0) -> Path:
    """Download (once) and verify an official model file; offline, say what to use instead.

    The file is checked against the published md5 before it is written, and its sha256 is
    recorded beside it (``<name>.json``), so a later run trusts an unchanged file only.
    """
    if name not in OFFICIAL:
        raise ModelError(f"unknown official model '{name}' (known: {', '.join(OFFICIAL)})")
    entry = OFFICIAL[name]
    path = (root or cache_dir()) / f"{name}.onnx"
    manifest = path.with_suffix(".json")
    if path.is_file():
        if _cached(manifest) != path:
            _check_md5(entry, path, path.read_bytes(), "the file")
            _record(entry, path, manifest)
        return path
    data = _download(entry, path, timeout_s)
    _check_md5(entry, path, data, "the download")
    atomic_write_bytes(path, data)
    _record(entry, path, manifest)
    return path


def _download(entry: OfficialModel, path: Path, timeout_s: float) -> bytes:
    try:
        with urllib.request.urlopen(entry.url, timeout=timeout_s) as response:
            _refuse_size(entry, getattr(response, "headers", None))
            data: bytes = response.read(entry.max_bytes + 1)
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ModelError(
            f"{entry.url}: cannot download ({reason}); without network access use the generated "
            f"equivalent 'zoo: {entry.equivalent}', or place the file at {path}"
        ) from None
    if len(data) > entry.max_bytes:
        raise ModelError(
            f"{entry.url}: larger than {_size(entry.max_bytes)}; not the published file, "
            "nothing was written"
        )
    return data


def _refuse_size(entry: OfficialModel, headers: object) -> None:
    length = headers.get("Content-Length") if isinstance(headers, Message) else None
    if length is not None and length.isdigit() and int(length) > entry.max_bytes:
        raise ModelError(
            f"{entry.url}: announces {int(length)} bytes, more than {_size(entry.max_bytes)}; "
            "not the published file, nothing was written"
        )


def _size(count: int) -> str:
    return f"{count // MIB} MiB" if count % MIB == 0 else f"{count} bytes"


def _check_md5(entry: OfficialModel, path: Path, data: bytes, what: str) -> None:
    digest = hashlib.md5(data, usedforsecurity=False).hexdigest()
    if digest == entry.md5:
        return
    if what == "the file":
        raise ModelError(
            f"{path}: md5 {digest} does not match the published {entry.md5}; replace or remove it"
        )
    raise ModelError(
        f"{path}: md5 {digest} does not match the published {entry.md5}; the download was "
        "removed, run again"
    )


def _record(entry: OfficialModel, path: Path, manifest: Path) -> None:
    meta = {"file": path.name, "url": entry.url, "md5": entry.md5, "sha256": file_sha256(path)}
    atomic_write_bytes(manifest, json.dumps(meta).encode())


def _cached(manifest: Path) -> Path | None:
    try:
        meta = json.loads(manifest.read_text())
        path, digest = manifest.parent / str(meta["file"]), str(meta["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if path.is_file() and file_sha256(path) == digest:
        return path
    return None
