"""Resolve a scenario's model to a file: generated zoo models (cached) or official downloads."""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ModelError
from harness.files import atomic_write_bytes
from harness.models.validate import file_sha256
from harness.paths import cache_root as cache_root  # its home is harness.paths

DEFAULT_SEED = 0


@dataclass(frozen=True, kw_only=True)
class OfficialModel:
    """A published model file: where it lives and how to verify it."""

    name: str
    url: str
    md5: str | None
    equivalent: str
    note: str


OFFICIAL: dict[str, OfficialModel] = {
    "resnet50-mlperf": OfficialModel(
        name="resnet50-mlperf",
        url="https://zenodo.org/record/4735647/files/resnet50_v1.onnx",
        # Zenodo publishes an md5 per file; it could not be read from this network-less
        # workplace, so none is pinned yet and the download records its own sha256 instead.
        md5=None,
        equivalent="resnet50",
        note="MLPerf Inference ResNet-50 v1.5, opset 11, NCHW, input_tensor:0",
    ),
}


def cache_dir() -> Path:
    """Where generated and downloaded models live."""
    return cache_root() / "models"


def zoo_model_path(name: str, *, seed: int = DEFAULT_SEED, root: Path | None = None) -> Path:
    """Path of a generated zoo model, building it only when no valid cached copy exists.

    A manifest per (model, generator version, seed) names the file by its content hash;
    a missing or altered file is rebuilt.
    """
    from harness.models.zoo import ZOO

    if name not in ZOO:
        raise ModelError(f"model.zoo: unknown zoo model '{name}' (known: {', '.join(sorted(ZOO))})")
    entry = ZOO[name]
    root = root or cache_dir()
    manifest = root / f"{name}-g{entry.generator_version}-s{seed}.json"
    cached = _cached(manifest)
    if cached is not None:
        return cached
    data = entry.builder(seed).SerializeToString()
    digest = hashlib.sha256(data).hexdigest()
    path = root / f"{name}-{digest[:16]}.onnx"
    atomic_write_bytes(path, data)
    atomic_write_bytes(manifest, json.dumps({"file": path.name, "sha256": digest}).encode())
    return path


def official_model_path(name: str, *, root: Path | None = None, timeout_s: float = 60.0) -> Path:
    """Download (once) and verify an official model file; offline, say what to use instead."""
    if name not in OFFICIAL:
        raise ModelError(f"unknown official model '{name}' (known: {', '.join(OFFICIAL)})")
    entry = OFFICIAL[name]
    path = (root or cache_dir()) / f"{name}.onnx"
    if path.is_file():
        _verify(entry, path)
        return path
    try:
        with urllib.request.urlopen(entry.url, timeout=timeout_s) as response:
            data = response.read()
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ModelError(
            f"{entry.url}: cannot download ({reason}); without network access use the generated "
            f"equivalent 'zoo: {entry.equivalent}', or place the file at {path}"
        ) from None
    atomic_write_bytes(path, data)
    _verify(entry, path)
    return path


def _cached(manifest: Path) -> Path | None:
    try:
        meta = json.loads(manifest.read_text())
        path, digest = manifest.parent / str(meta["file"]), str(meta["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if path.is_file() and file_sha256(path) == digest:
        return path
    return None


def _verify(entry: OfficialModel, path: Path) -> None:
    if entry.md5 is None:
        return
    digest = hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
    if digest != entry.md5:
        path.unlink(missing_ok=True)
        raise ModelError(
            f"{path}: md5 {digest} does not match the published {entry.md5}; the download was "
            "removed, run again"
        )
