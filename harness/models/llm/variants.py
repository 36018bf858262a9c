"""A generative model at a precision: FP16 or INT4 weights in a directory genai loads.

model.onnx goes through the same converter as the CNN zoo's models (harness.models.precision,
cached by content hash): FP16 by onnxruntime's float16 converter with float32 inputs and
outputs (so genai_config.json, the logits and the KV cache stay float32), INT4 as onnxruntime's
MatMulNBits (harness.runtime.nbits: every projection with a constant weight; 4-bit blocks along
K with their own float minimum, float32 activations). The variant's directory holds the
converted model.onnx beside a copy of the FP32 directory's genai_config.json and tokenizer; its
name carries a hash over its files' hashes and a manifest per (source, recipe) finds it again,
as store.py does for FP32.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.files import atomic_write_bytes
from harness.models.llm.genai_config import MODEL_FILE
from harness.models.llm.store import cached_dir, generative_model_dir
from harness.models.precision import ConvertedModel, convert
from harness.models.recipes import Recipe, default_recipe
from harness.models.registry import cache_dir, cache_root
from harness.models.validate import file_sha256


@dataclass(frozen=True, slots=True)
class GenerativeVariant:
    """A generative model's directory at one precision, and how its model.onnx was made."""

    directory: Path
    reference: Path  # the FP32 directory the variant is judged against
    converted: ConvertedModel


def generative_recipe(precision: str) -> Recipe:
    """The recipe a generative model is converted by (the transformer zoo's defaults)."""
    return default_recipe(precision, model_kind="transformer")


def generative_variant(
    name: str, precision: str, *, seed: int = 0, root: Path | None = None
) -> GenerativeVariant:
    """The model directory of ``name`` at ``precision``, converted only when none is cached."""
    recipe = generative_recipe(precision)
    reference = generative_model_dir(name, seed=seed, root=root)
    converts = root / "converted" if root else cache_root() / "converted"  # the CNN zoo's too
    root = root or cache_dir()
    converted = convert(reference / MODEL_FILE, recipe, calibration=None, cache=converts)
    if recipe.method == "none":
        return GenerativeVariant(reference, reference, converted)
    manifest = root / f"{reference.name}-{precision}-{converted.sha256[:16]}.json"
    cached = cached_dir(manifest)
    if cached is not None:
        return GenerativeVariant(cached, reference, converted)
    with tempfile.TemporaryDirectory(dir=root, prefix=f".{reference.name}-{precision}-") as tmp:
        work = Path(tmp)
        for item in sorted(reference.iterdir()):
            if item.name != MODEL_FILE:
                shutil.copyfile(item, work / item.name)
        shutil.copyfile(converted.path, work / MODEL_FILE)
        hashes = {p.name: file_sha256(p) for p in sorted(work.iterdir())}
        digest = hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()
        final = root / f"{name}-{precision}-{digest[:16]}"
        if not final.is_dir():
            work.chmod(0o755)  # a cache other users and containers read
            work.rename(final)
            work.mkdir()  # TemporaryDirectory removes what it made
    atomic_write_bytes(manifest, json.dumps({"dir": final.name, "files": hashes}).encode())
    return GenerativeVariant(final, reference, converted)
