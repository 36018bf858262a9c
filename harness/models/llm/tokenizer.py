"""Byte-level BPE tokenizers as Hugging Face's tokenizer.json, the form genai's tokenizer reads.

Two sources: a small seeded vocabulary for the synthetic decoders (byte tokens, merges learnt
from a fixed English paragraph, then seeded merges up to the model's vocabulary size), and a
GGUF file's own tokens and merges (llama.cpp's ``gpt2`` tokenizer model).
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

MAX_FILL_TOKEN_CHARS: Final = 12
FILL_BATCH: Final = 4096
# The GPT-2 pre-tokenizer's split, ASCII letters and digits only: enough for CORPUS.
_WORDS: Final = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+")
CORPUS: Final = (
    "The benchmark measures what a machine really does when it serves a language model. "
    "It sends prompts at a steady rate and records when the first token comes back, then "
    "the time between the tokens that follow. A fast machine answers quickly and keeps "
    "answering; a slow one makes the user wait. The numbers are percentiles of thousands "
    "of requests, so one lucky answer does not count for much. We write every result to "
    "its own directory, with the logs that LoadGen wrote, so that anyone can check them "
    "again later and see whether the same machine gives the same answer on another day."
)


def byte_alphabet() -> list[str]:
    """GPT-2's byte-level alphabet: byte b is shown as ``byte_alphabet()[b]``.

    Printable Latin-1 bytes stand for themselves; the others are moved to 256 and above, so
    every byte is one visible character and a space is 'Ġ'.
    """
    kept = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    shown: dict[int, int] = {b: b for b in kept}
    extra = 0
    for b in range(256):
        if b not in shown:
            shown[b] = 256 + extra
            extra += 1
    return [chr(shown[b]) for b in range(256)]


@dataclass(frozen=True, kw_only=True)
class SpecialToken:
    """An added token matched whole in text (chat markers, end of text)."""

    id: int
    content: str


@dataclass(frozen=True, kw_only=True)
class BpeTokenizer:
    """A byte-level BPE vocabulary and what genai needs to know about it."""

    tokens: Sequence[str]  # by id
    merges: Sequence[str]  # "left right", by rank
    specials: Sequence[SpecialToken]
    bos: str
    eos: str
    unk: str
    split_digits: bool = False
    chat_template: str = ""
    extra_config: dict[str, Any] = field(default_factory=dict)

    def tokenizer_json(self) -> str:
        """Hugging Face's tokenizer.json for this vocabulary."""
        byte_level = {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": True,
        }
        pre: dict[str, Any] = byte_level
        if self.split_digits:
            digits = {"type": "Digits", "individual_digits": True}
            pre = {"type": "Sequence", "pretokenizers": [digits, byte_level]}
        added = [
            {
                "id": s.id,
                "content": s.content,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for s in self.specials
        ]
        document = {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": added,
            "normalizer": None,
            "pre_tokenizer": pre,
            "post_processor": {**byte_level, "trim_offsets": False},
            "decoder": byte_level,
            "model": {
                "type": "BPE",
                "dropout": None,
                "unk_token": None,
                "continuing_subword_prefix": None,
                "end_of_word_suffix": None,
                "fuse_unk": False,
                "byte_fallback": False,
                "vocab": {token: i for i, token in enumerate(self.tokens)},
                "merges": list(self.merges),
            },
        }
        return json.dumps(document, ensure_ascii=False, separators=(",", ":"))

    def tokenizer_config_json(self) -> str:
        """tokenizer_config.json: the class genai's tokenizer dispatches on, special tokens."""
        config: dict[str, Any] = {
            "tokenizer_class": "GPT2Tokenizer",
            "add_bos_token": False,
            "add_prefix_space": False,
            "bos_token": self.bos,
            "eos_token": self.eos,
            "unk_token": self.unk,
            "clean_up_tokenization_spaces": False,
            **self.extra_config,
        }
        if self.chat_template:
            config["chat_template"] = self.chat_template
        return json.dumps(config, ensure_ascii=False, indent=1, sort_keys=True)


SYNTHETIC_SPECIALS: Final = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
PRINTABLE: Final = range(0x20, 0x7F)


def unprintable_ids() -> list[int]:
    """Ids of the synthetic vocabulary's specials and of its bytes outside printable ASCII."""
    offset = len(SYNTHETIC_SPECIALS)
    return [*range(offset), *(offset + b for b in range(256) if b not in PRINTABLE)]


def synthetic_tokenizer(vocab: int, seed: int) -> BpeTokenizer:
    """A byte-level BPE tokenizer of exactly ``vocab`` tokens, the same for the same seed."""
    alphabet = byte_alphabet()
    tokens = [*SYNTHETIC_SPECIALS, *alphabet]
    if vocab < len(tokens) + 1:
        raise ValueError(
            f"a byte-level vocabulary needs more than {len(tokens)} tokens, not {vocab}"
        )
    merges = _learn_merges(CORPUS, alphabet, vocab - len(tokens))
    tokens += [left + right for left, right in merges]
    _fill(tokens, merges, vocab, np.random.default_rng(seed))
    specials = [SpecialToken(id=i, content=t) for i, t in enumerate(SYNTHETIC_SPECIALS)]
    return BpeTokenizer(
        tokens=tokens,
        merges=[f"{a} {b}" for a, b in merges],
        specials=specials,
        bos=SYNTHETIC_SPECIALS[1],
        eos=SYNTHETIC_SPECIALS[2],
        unk=SYNTHETIC_SPECIALS[0],
    )


def _fill(
    tokens: list[str], merges: list[tuple[str, str]], vocab: int, rng: np.random.Generator
) -> None:
    """Seeded merges up to ``vocab``: a printable token, then one printable character.

    Tokens grow like words (a few characters, at most MAX_FILL_TOKEN_CHARS), every merge's
    halves are already in the vocabulary, and a draw is rarely refused, so 128k tokens take
    a second or two.
    """
    alphabet = byte_alphabet()
    chars = [alphabet[b] for b in PRINTABLE]
    printable = set(chars)
    known = set(tokens)
    pool = [
        t
        for t in tokens[len(SYNTHETIC_SPECIALS) :]
        if set(t) <= printable and len(t) < MAX_FILL_TOKEN_CHARS
    ]
    while len(tokens) < vocab:
        lefts = rng.integers(0, len(pool), FILL_BATCH)
        rights = rng.integers(0, len(chars), FILL_BATCH)
        for left_index, right_index in zip(lefts, rights, strict=True):
            left, right = pool[int(left_index)], chars[int(right_index)]
            joined = left + right
            if joined in known:
                continue
            merges.append((left, right))
            tokens.append(joined)
            known.add(joined)
            if len(joined) < MAX_FILL_TOKEN_CHARS:
                pool.append(joined)
            if len(tokens) == vocab:
                return


def _learn_merges(text: str, alphabet: list[str], limit: int) -> list[tuple[str, str]]:
    """BPE training on ``text``: the most frequent pair first, ties by the pair's text."""
    words: Counter[tuple[str, ...]] = Counter(
        tuple(alphabet[b] for b in word.encode()) for word in _WORDS.findall(text)
    )
    merges: list[tuple[str, str]] = []
    while len(merges) < limit:
        pairs: Counter[tuple[str, str]] = Counter()
        for word, count in words.items():
            for pair in itertools.pairwise(word):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        if pairs[best] < 2:
            break
        merges.append(best)
        words = Counter({_merge(word, best): count for word, count in words.items()})
    return merges


def _merge(word: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    out: list[str] = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)
