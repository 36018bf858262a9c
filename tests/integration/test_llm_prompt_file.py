"""A user's JSONL prompt file (generation.prompts: file): read strictly, then run under LoadGen.

The reader is fed llm-tiny's real tokenizer; each hostile line is refused with one error
naming file:line and the key. A real `harness run` of llm-tiny Offline from a prompt file is
VALID and makes exactly each line's max_new_tokens (hold_eos), batched 4 at a time.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.datasets.prompt_file import file_prompts
from harness.errors import ConfigError
from harness.generation import GenerationConfig, TokenRange
from harness.models.llm.store import generative_model_dir
from tests.conftest import write_scenario

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")

from harness.runtime.genai import GenaiModel

CONFIG = GenerationConfig(prompts="file", path="p.jsonl", output_tokens=TokenRange(min=5, max=9))


@pytest.fixture(scope="module")
def tiny(model_cache: Path) -> GenaiModel:
    return GenaiModel(generative_model_dir("llm-tiny", root=model_cache))


Read = tuple[tuple[np.ndarray, ...], tuple[int, ...], str]


def _read(tmp_path: Path, tiny: GenaiModel, text: str, count: int = 4) -> Read:
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    return file_prompts(CONFIG, path, encode=tiny.encode, vocab=512, count=count, seed=0)


def test_text_and_ids_lines_are_read_and_cycled(tmp_path: Path, tiny: GenaiModel) -> None:
    lines = '{"prompt": "Hello there", "max_new_tokens": 3}\n\n{"input_ids": [5, 6, 7]}\n'
    ids, budgets, described = _read(tmp_path, tiny, lines, count=5)
    assert [list(i) for i in ids[:2]] == [list(tiny.encode("Hello there")), [5, 6, 7]]
    assert [list(i) for i in ids[2:]] == [list(i) for i in (ids[0], ids[1], ids[0])]
    assert budgets[0] == budgets[2] == budgets[4] == 3
    assert 5 <= budgets[1] <= 9 and budgets[1] == budgets[3]
    assert "2 prompts from" in described and all(i.dtype == np.int32 for i in ids)


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ('{"prompt": "a"', ":1: not readable JSON"),
        ('["a"]', ":1: expected a JSON object"),
        ('{"prompt": "a", "temperature": 2}', ":1: temperature: unknown key"),
        ('{"prompt": "a", "input_ids": [5]}', ":1: give exactly one of"),
        ("{}", ":1: give exactly one of"),
        ('{"prompt": ""}', ":1: prompt: must be a non-empty string"),
        ('{"prompt": 5}', ":1: prompt: must be a non-empty string"),
        ('{"input_ids": []}', ":1: input_ids: must be a non-empty list"),
        ('{"input_ids": [5, 512]}', ":1: input_ids: 512 is not a token id"),
        ('{"input_ids": [5, -1]}', ":1: input_ids: -1 is not a token id"),
        ('{"input_ids": [5, true]}', ":1: input_ids: True is not a token id"),
        ('{"input_ids": [5, 1.5]}', ":1: input_ids: 1.5 is not a token id"),
        ('{"prompt": "a", "max_new_tokens": 1}', ":1: max_new_tokens: must be an integer 2.."),
        ('{"prompt": "a", "max_new_tokens": "9"}', ":1: max_new_tokens: must be an integer"),
        ('{"prompt": "a", "max_new_tokens": NaN}', ":1: "),
    ],
)
def test_a_bad_line_is_one_error_naming_file_line_and_key(
    tmp_path: Path, tiny: GenaiModel, line: str, named: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _read(tmp_path, tiny, line + "\n")
    message = str(caught.value)
    assert message.startswith(str(tmp_path / "p.jsonl") + named) and "\n" not in message


def test_the_line_number_counts_blank_lines(tmp_path: Path, tiny: GenaiModel) -> None:
    with pytest.raises(ConfigError, match=r"p\.jsonl:3: input_ids"):
        _read(tmp_path, tiny, '{"input_ids": [5]}\n\n{"input_ids": "5"}\n')


def test_an_empty_an_oversized_or_a_non_utf8_file_is_refused(
    tmp_path: Path, tiny: GenaiModel
) -> None:
    with pytest.raises(ConfigError, match="no prompts"):
        _read(tmp_path, tiny, "\n \n")
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"prompt": "\xff"}\n')
    with pytest.raises(ConfigError, match="not UTF-8"):
        file_prompts(CONFIG, path, encode=tiny.encode, vocab=512, count=1, seed=0)
    path.write_text('{"prompt": "' + "a" * (2 * 1024 * 1024) + '"}\n')
    with pytest.raises(ConfigError, match="a line of"):
        file_prompts(CONFIG, path, encode=tiny.encode, vocab=512, count=1, seed=0)
    absent = tmp_path / "absent.jsonl"
    with pytest.raises(ConfigError, match=r"absent\.jsonl"):
        file_prompts(CONFIG, absent, encode=tiny.encode, vocab=512, count=1, seed=0)


def test_path_goes_with_prompts_file_only() -> None:
    with pytest.raises(ValueError, match="path: give a JSONL prompt file"):
        GenerationConfig(prompts="file")
    with pytest.raises(ValueError, match="path: give a JSONL prompt file"):
        GenerationConfig(prompts="text", path="p.jsonl")


SCENARIO = """
name: llm-tiny-file
scenario: Offline
model: {{zoo: llm-tiny}}
trials: 1
generation:
  prompts: file
  path: {path}
  output_tokens: {{min: 6, max: 20}}
  hold_eos: true
  max_active: 4
data: {{total_sample_count: 12}}
warmup: {{min_queries: 2, min_duration_ms: 0}}
quick: {{min_duration_ms: 500, min_query_count: 12, performance_sample_count: 12}}
"""


@pytest.mark.slow
def test_a_prompt_file_runs_offline_batched_and_valid(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.jsonl"
    lines = [{"prompt": "The benchmark measures", "max_new_tokens": 7}, {"input_ids": [9, 8]}]
    lines += [{"input_ids": list(range(3, 3 + n)), "max_new_tokens": n} for n in (4, 11, 30)]
    prompts.write_text("".join(json.dumps(line) + "\n" for line in lines))
    path = write_scenario(tmp_path / "s.yaml", SCENARIO.format(path=prompts))
    assert main(["run", str(path), "--out", str(tmp_path / "runs")]) == 0
    (result,) = (tmp_path / "runs").rglob("result.json")
    data = json.loads(result.read_text())
    assert data["valid"] is True, data["invalid_reasons"]
    assert data["generation"]["prompts"].startswith("file: 5 prompts from")
    assert data["generation"]["max_active"] == 4
    with np.load(result.parent / "token_times.npz") as times:
        made = sorted(int(t) for t in times["tokens"])
    # 12 samples cycle the 5 lines (each 2 or 3 times); equal issue repeats the 12 whole
    assert len(made) % 12 == 0 and made.count(30) == made.count(4) == len(made) // 6
    assert all(t in (7, 4, 11, 30) or 6 <= t <= 20 for t in made)
