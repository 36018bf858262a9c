"""The YAML loader's strictness: repeated and non-string keys, NaN/inf, and upper bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import (
    MAX_BATCH_SIZE,
    MAX_DIM,
    MAX_DURATION_MS,
    MAX_INPUT_ELEMENTS,
    MAX_SAMPLE_COUNT,
    ModelConfig,
    Scenario,
    load_scenario,
    load_suite,
)
from harness.errors import ConfigError

BASE = "name: t\nscenario: Offline\nmodel:\n  zoo: tiny\n"


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: "), message
    return message


def test_a_repeated_key_is_refused_with_its_line(tmp_path: Path) -> None:
    text = "name: t\nscenario: SingleStream\nmodel: {zoo: tiny}\nscenario: Offline\n"
    assert "line 4: duplicate key 'scenario'" in _error(tmp_path, text)


def test_a_repeated_nested_key_is_refused_with_its_line(tmp_path: Path) -> None:
    text = BASE + "  dims:\n    height: 224\n    height: 225\n"
    assert "line 7: duplicate key 'height'" in _error(tmp_path, text)


def test_a_repeated_key_in_a_suite_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text("name: s\nscenarios: [a.yaml]\nname: t\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="line 3: duplicate key 'name'"):
        load_suite(path)


def test_an_integer_key_and_its_string_do_not_collide(tmp_path: Path) -> None:
    text = BASE + "  dims:\n    1: 3\n    '1': 4\n"
    assert "line 6: key 1 is not a string; quote it" in _error(tmp_path, text)


def test_a_boolean_key_is_refused(tmp_path: Path) -> None:
    assert "line 5: key True is not a string" in _error(tmp_path, BASE + "yes: 1\n")


def test_merge_keys_still_work(tmp_path: Path) -> None:
    text = BASE + "warmup: &w {min_queries: 3}\nquick:\n  <<: {min_query_count: 7}\n"
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    assert load_scenario(path).quick.min_query_count == 7


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", ".NaN"])
def test_peak_tflops_must_be_finite(tmp_path: Path, value: str) -> None:
    message = _error(tmp_path, BASE + f"peak_tflops: {value}\n")
    assert "peak_tflops: must be a finite number" in message


def test_a_float_option_must_be_finite(tmp_path: Path) -> None:
    text = BASE + "runtime:\n  provider_options:\n    CUDAExecutionProvider: {x: .nan}\n"
    assert "provider_options.CUDAExecutionProvider.x: must be a finite" in _error(tmp_path, text)


def test_peak_tflops_nan_is_refused_by_the_dataclass_too() -> None:
    with pytest.raises(ValueError, match="peak_tflops"):
        Scenario(
            name="t", scenario="Offline", model=ModelConfig(zoo="tiny"), peak_tflops=float("nan")
        )
    with pytest.raises(ValueError, match="peak_tflops"):
        Scenario(name="t", scenario="Offline", model=ModelConfig(zoo="tiny"), peak_tflops=1e12)


TOO_BIG = 10**12


@pytest.mark.parametrize(
    ("yaml_tail", "key", "limit"),
    [
        (f"batch_size: {TOO_BIG}\n", "batch_size", MAX_BATCH_SIZE),
        (f"batch_size: {MAX_BATCH_SIZE + 1}\n", "batch_size", MAX_BATCH_SIZE),
        (f"data: {{total_sample_count: {TOO_BIG}}}\n", "data.total_sample_count", MAX_SAMPLE_COUNT),
        (f"warmup: {{min_duration_ms: {TOO_BIG}}}\n", "warmup.min_duration_ms", MAX_DURATION_MS),
        (f"warmup: {{min_queries: {TOO_BIG}}}\n", "warmup.min_queries", MAX_SAMPLE_COUNT),
        (f"quick: {{min_duration_ms: {TOO_BIG}}}\n", "quick.min_duration_ms", MAX_DURATION_MS),
        (f"quick: {{min_query_count: {TOO_BIG}}}\n", "quick.min_query_count", MAX_SAMPLE_COUNT),
        (
            f"quick: {{performance_sample_count: {TOO_BIG}}}\n",
            "quick.performance_sample_count",
            MAX_SAMPLE_COUNT,
        ),
        (
            f"quick: {{accuracy_sample_count: {TOO_BIG}}}\n",
            "quick.accuracy_sample_count",
            MAX_SAMPLE_COUNT,
        ),
        (f"data: {{seed: {TOO_BIG * 10**9}}}\n", "data.seed", 2**32 - 1),
        (f"runtime: {{intra_op_threads: {TOO_BIG}}}\n", "runtime.intra_op_threads", 4096),
    ],
)
def test_values_past_their_upper_bound_are_refused(
    tmp_path: Path, yaml_tail: str, key: str, limit: int
) -> None:
    assert f"{key}: must be " in _error(tmp_path, BASE + yaml_tail)
    assert f"..{limit}, got " in _error(tmp_path, BASE + yaml_tail)


def test_a_dim_past_its_upper_bound_is_refused(tmp_path: Path) -> None:
    text = BASE + f"  dims: {{seq: {TOO_BIG}}}\n"
    assert f"model.dims.seq: must be 1..{MAX_DIM}, got {TOO_BIG}" in _error(tmp_path, text)


def test_values_at_their_upper_bound_load(tmp_path: Path) -> None:
    text = (
        BASE
        + f"  dims: {{seq: {MAX_INPUT_ELEMENTS // MAX_BATCH_SIZE}}}\nbatch_size: {MAX_BATCH_SIZE}\n"
        + f"data: {{total_sample_count: {MAX_SAMPLE_COUNT}}}\n"
        + f"warmup: {{min_duration_ms: {MAX_DURATION_MS}}}\n"
    )
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    scenario = load_scenario(path)
    assert scenario.batch_size == MAX_BATCH_SIZE
    assert MAX_DURATION_MS == 7 * 24 * 3600 * 1000


def test_a_dim_at_its_bound_loads_with_a_batch_that_keeps_the_input_in_bounds(
    tmp_path: Path,
) -> None:
    path = tmp_path / "scenario.yaml"
    batch = MAX_INPUT_ELEMENTS // MAX_DIM
    path.write_text(BASE + f"  dims: {{seq: {MAX_DIM}}}\nbatch_size: {batch}\n", encoding="utf-8")
    assert load_scenario(path).model.dims["seq"] == MAX_DIM


def test_an_input_past_its_bound_is_refused_before_the_model_is_read(tmp_path: Path) -> None:
    batch = MAX_INPUT_ELEMENTS // MAX_DIM + 1
    message = _error(tmp_path, BASE + f"  dims: {{seq: {MAX_DIM}}}\nbatch_size: {batch}\n")
    assert f"model.dims.seq: {MAX_DIM} x batch_size {batch} = " in message
    assert message.endswith("; lower batch_size or model.dims.seq")
