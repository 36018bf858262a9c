"""Scenario and suite YAML loading: real files, and one-line ConfigErrors for every mistake."""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.config import (
    DEFAULT_TRIALS,
    PRECISIONS,
    PROFILES,
    DataConfig,
    ModelConfig,
    Precision,
    ProfileName,
    QuickConfig,
    RuntimeConfig,
    Scenario,
    Suite,
    TelemetryConfig,
    WarmupConfig,
    as_precision,
    as_profile,
    is_suite_file,
    load_scenario,
    load_suite,
    scenario_from_dict,
    scenario_to_dict,
)
from harness.errors import ConfigError
from harness.models.recipes import ISA_FOR_PRECISION, METHODS

SCENARIOS_DIR = Path(__file__).resolve().parents[2] / "scenarios"
SCENARIO_KEYS = (
    "batch_size, data, generation, model, name, peak_tflops, quick, runtime, scenario, "
    "schema_version, server, telemetry, trials, warmup"
)
MODEL_KEYS = "conversion, dims, generator, loadgen_name, path, precision, zoo"


def _base() -> dict[str, Any]:
    """A minimal valid Offline scenario, as the YAML mapping a user would write."""
    return {"name": "t", "scenario": "Offline", "model": {"zoo": "tiny"}, "batch_size": 4}


def _write(tmp_path: Path, data: Any, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _write_text(tmp_path: Path, text: str, name: str = "scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _with(**changes: Any) -> dict[str, Any]:
    """The base scenario with top-level keys replaced (None removes the key)."""
    data = _base()
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def _scenario_error(path: Path) -> str:
    """Load `path`, expect a ConfigError and return its (checked one-line) message."""
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    message = str(info.value)
    assert info.value.exit_code == 2
    assert "\n" not in message
    assert message.startswith(f"{path}: "), message
    return message


# --- the real scenario and suite files ------------------------------------------------------

# *.example.yaml files are templates of other formats (the submission's system description).
ALL_FILES = sorted(p for p in SCENARIOS_DIR.glob("*.yaml") if not p.name.endswith(".example.yaml"))


def test_scenarios_directory_has_scenarios_and_suites() -> None:
    suites = [p for p in ALL_FILES if is_suite_file(p)]
    scenarios = [p for p in ALL_FILES if not is_suite_file(p)]
    assert len(suites) >= 1
    assert len(scenarios) >= 1
    assert SCENARIOS_DIR / "smoke.yaml" in suites
    assert SCENARIOS_DIR / "tiny-singlestream.yaml" in scenarios


@pytest.mark.parametrize("path", ALL_FILES, ids=[p.name for p in ALL_FILES])
def test_every_real_file_loads(path: Path) -> None:
    if is_suite_file(path):
        suite = load_suite(path)
        assert isinstance(suite, Suite)
        assert suite.name == path.stem
        for name in suite.scenarios:
            member = path.parent / name
            assert member.is_file(), f"{path} lists missing {name}"
            assert not is_suite_file(member)
            assert isinstance(load_scenario(member), Scenario)
    else:
        scenario = load_scenario(path)
        assert isinstance(scenario, Scenario)
        assert scenario.name == path.stem
        assert scenario.schema_version == 1
        if scenario.scenario == "SingleStream":
            assert scenario.batch_size == 1


def test_resnet50_offline_loads_every_field() -> None:
    expected = Scenario(
        name="resnet50-offline",
        scenario="Offline",
        model=ModelConfig(
            zoo="resnet50",
            loadgen_name="resnet50",
            precision="fp32",
            dims={"height": 224, "width": 224},
        ),
        batch_size=8,
        data=DataConfig(source="synthetic", seed=0, total_sample_count=1024),
        warmup=WarmupConfig(min_queries=3, min_duration_ms=2000),
        quick=QuickConfig(min_duration_ms=20000, min_query_count=100, performance_sample_count=64),
    )
    assert load_scenario(SCENARIOS_DIR / "resnet50-offline.yaml") == expected


def test_tiny_singlestream_gets_defaults_for_omitted_sections() -> None:
    scenario = load_scenario(SCENARIOS_DIR / "tiny-singlestream.yaml")
    assert scenario.runtime == RuntimeConfig()
    assert scenario.data == DataConfig(
        source="synthetic", dir=None, seed=0, total_sample_count=1024
    )
    assert scenario.model == ModelConfig(zoo="tiny")
    assert scenario.model.name == "tiny"
    assert scenario.model.dims == {}


def test_the_cpu_sampler_interval_is_written_only_where_set() -> None:
    # Unset, no key: job files and exported READMEs read as before the key existed
    # (tests/integration/test_published_shipped.py re-exports the shipped result byte for byte).
    unset = load_scenario(SCENARIOS_DIR / "tiny-singlestream.yaml")
    assert "cpu_interval_ms" not in scenario_to_dict(unset)["telemetry"]
    chosen = dataclasses.replace(unset, telemetry=TelemetryConfig(cpu_interval_ms=250))
    assert scenario_to_dict(chosen)["telemetry"]["cpu_interval_ms"] == 250
    for scenario in (unset, chosen):  # through JSON, as job.json holds it
        text = json.dumps(scenario_to_dict(scenario))
        assert scenario_from_dict(json.loads(text), "job.json") == scenario


def test_smoke_suite_loads_exactly() -> None:
    suite = load_suite(SCENARIOS_DIR / "smoke.yaml")
    assert suite == Suite(
        name="smoke", profile="quick", scenarios=("tiny-singlestream.yaml", "tiny-offline.yaml")
    )


def test_is_suite_file_distinguishes(tmp_path: Path) -> None:
    assert is_suite_file(_write(tmp_path, {"name": "s", "scenarios": ["a.yaml"]}, "s.yaml"))
    assert not is_suite_file(_write(tmp_path, _base()))
    assert not is_suite_file(_write_text(tmp_path, "- scenarios\n", "list.yaml"))
    with pytest.raises(ConfigError, match=re.escape(f"{tmp_path / 'nope.yaml'}: no such file")):
        is_suite_file(tmp_path / "nope.yaml")


def test_minimal_scenario_loads_with_defaults(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, _base()))
    assert scenario == Scenario(
        name="t", scenario="Offline", model=ModelConfig(zoo="tiny"), batch_size=4
    )
    assert scenario.warmup == WarmupConfig(min_queries=10, min_duration_ms=1000)
    assert scenario.quick == QuickConfig(
        min_duration_ms=15000, min_query_count=100, performance_sample_count=256
    )


def test_model_path_and_name(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, _with(model={"path": "models/my-net.onnx"})))
    assert scenario.model.zoo is None
    assert scenario.model.path == "models/my-net.onnx"
    assert scenario.model.name == "my-net"


def test_npy_source_with_dir_loads(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, _with(data={"source": "npy", "dir": "data/x"})))
    assert scenario.data == DataConfig(source="npy", dir="data/x")


def test_explicit_null_for_optional_key_is_none(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, _with(model={"zoo": "tiny", "path": None})))
    assert scenario.model.path is None


# --- unknown keys -----------------------------------------------------------------------------


def test_unknown_top_level_key(tmp_path: Path) -> None:
    path = _write(tmp_path, _with(batchsize=8))
    message = _scenario_error(path)
    assert message == f"{path}: unknown key 'batchsize' (allowed: {SCENARIO_KEYS})"


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            {"path": "m.onnx", "generator": 1},
            "generator: only a zoo model has a generator version",
        ),
        ({"zoo": "tiny", "generator": 0}, "generator: must be >= 1, got 0"),
    ],
)
def test_a_generator_version_belongs_to_a_zoo_model(
    tmp_path: Path, model: dict[str, Any], message: str
) -> None:
    assert message in _scenario_error(_write(tmp_path, _with(model=model)))


def test_a_zoo_model_may_name_an_older_generator(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, _with(model={"zoo": "resnet50", "generator": 1})))
    assert scenario.model.generator == 1
    assert load_scenario(_write(tmp_path, _base())).model.generator is None  # today's


def test_unknown_nested_key_is_dotted(tmp_path: Path) -> None:
    path = _write(tmp_path, _with(model={"zooo": "tiny"}))
    message = _scenario_error(path)
    assert message == f"{path}: unknown key 'model.zooo' (allowed: {MODEL_KEYS})"


@pytest.mark.parametrize(
    ("section", "allowed"),
    [
        (
            "runtime",
            "allow_cpu_fallback, allow_spinning, execution_mode, graph_optimization_level, "
            "include_host_copies, inter_op_threads, intra_op_threads, io_binding, "
            "provider_options, providers",
        ),
        ("data", "dir, labels, seed, source, total_sample_count"),
        ("warmup", "min_duration_ms, min_queries"),
        (
            "quick",
            "accuracy_sample_count, min_duration_ms, min_query_count, performance_sample_count",
        ),
    ],
)
def test_unknown_key_in_each_section(tmp_path: Path, section: str, allowed: str) -> None:
    path = _write(tmp_path, _with(**{section: {"bogus": 1}}))
    with pytest.raises(ConfigError, match=re.escape(f"'{section}.bogus' (allowed: {allowed})")):
        load_scenario(path)


def test_unknown_suite_key(tmp_path: Path) -> None:
    path = _write(tmp_path, {"name": "s", "scenarios": ["a.yaml"], "profiles": "quick"})
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert str(info.value) == (
        f"{path}: unknown key 'profiles' (allowed: name, profile, scenarios)"
    )
    assert info.value.exit_code == 2


def test_a_non_string_key_is_a_config_error_naming_its_line(tmp_path: Path) -> None:
    path = _write_text(tmp_path, "name: t\nscenario: Offline\nmodel: {zoo: tiny}\n1: a\nfoo: b\n")
    message = _scenario_error(path)
    assert message == f"{path}: line 4: key 1 is not a string; quote it"


# --- wrong types ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (_with(batch_size="8"), "batch_size: expected int, got str '8'"),
        (_with(batch_size=True), "batch_size: expected int, got bool True"),
        (_with(batch_size=8.0), "batch_size: expected int, got float 8.0"),
        (_with(name=None), "missing required key 'name'"),
        (_with(name=3), "name: expected str, got int 3"),
        (
            _with(runtime={"allow_spinning": "yes"}),
            "runtime.allow_spinning: expected bool, got str 'yes'",
        ),
        (
            _with(runtime={"intra_op_threads": 1.5}),
            "runtime.intra_op_threads: expected int, got float 1.5",
        ),
        (
            _with(model={"zoo": "tiny", "dims": {"height": 1.5}}),
            "model.dims.height: expected int, got float 1.5",
        ),
        (
            _with(model={"zoo": "tiny", "dims": [224, 224]}),
            "model.dims: expected a mapping, got list",
        ),
        (_with(model="tiny"), "model: expected a mapping, got str"),
        (_with(runtime=[1]), "runtime: expected a mapping, got list"),
        (_with(data={"seed": None}), "data.seed: expected int, got null None"),
    ],
    ids=[
        "batch-str",
        "batch-bool",
        "batch-float",
        "name-missing",
        "name-int",
        "spinning-str",
        "threads-float",
        "dims-float",
        "dims-list",
        "model-str",
        "runtime-list",
        "seed-null",
    ],
)
def test_wrong_types(tmp_path: Path, data: dict[str, Any], expected: str) -> None:
    path = _write(tmp_path, data)
    assert _scenario_error(path) == f"{path}: {expected}"


def test_suite_scenarios_must_be_a_list_of_strings(tmp_path: Path) -> None:
    path = _write(tmp_path, {"name": "s", "scenarios": "a.yaml"})
    expected = f"{path}: scenarios: expected a list, got str"
    with pytest.raises(ConfigError, match=re.escape(expected)):
        load_suite(path)
    path = _write(tmp_path, {"name": "s", "scenarios": ["a.yaml", 7]})
    expected = f"{path}: scenarios[1]: expected str, got int 7"
    with pytest.raises(ConfigError, match=re.escape(expected)):
        load_suite(path)


def test_loadgen_name_must_be_a_plain_key(tmp_path: Path) -> None:
    path = _write(tmp_path, _with(model={"zoo": "tiny", "loadgen_name": "res net"}))
    message = _scenario_error(path)
    assert message.startswith(f"{path}: model.loadgen_name: 'res net' ")
    scenario = load_scenario(_write(tmp_path, _with(model={"zoo": "tiny", "loadgen_name": "bert"})))
    assert scenario.model.loadgen_name == "bert"


# --- values out of range ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (_with(batch_size=-1), "batch_size: must be >= 1, got -1"),
        (_with(batch_size=0), "batch_size: must be >= 1, got 0"),
        (
            _with(scenario="SingleStream", batch_size=8),
            "batch_size: SingleStream issues one sample per query, so it must be 1 (got 8); "
            "use the Offline scenario for batching",
        ),
        (
            _with(data={"total_sample_count": 0}),
            "data.total_sample_count: must be >= 1, got 0",
        ),
        (_with(warmup={"min_queries": 0}), "warmup.min_queries: must be >= 1, got 0"),
        (_with(warmup={"min_duration_ms": -1}), "warmup.min_duration_ms: must be >= 0, got -1"),
        (_with(quick={"min_duration_ms": 0}), "quick.min_duration_ms: must be >= 1, got 0"),
        (_with(quick={"min_query_count": 0}), "quick.min_query_count: must be >= 1, got 0"),
        (
            _with(quick={"performance_sample_count": 0}),
            "quick.performance_sample_count: must be >= 1, got 0",
        ),
        (
            _with(model={"zoo": "tiny", "dims": {"height": 0}}),
            "model.dims.height: must be >= 1, got 0",
        ),
        (
            _with(runtime={"inter_op_threads": -1}),
            "runtime.intra_op_threads/inter_op_threads: must be >= 0 (0 = default)",
        ),
    ],
    ids=[
        "batch-negative",
        "batch-zero",
        "singlestream-batch",
        "total-samples-zero",
        "warmup-queries-zero",
        "warmup-duration-negative",
        "quick-duration-zero",
        "quick-queries-zero",
        "quick-samples-zero",
        "dims-zero",
        "threads-negative",
    ],
)
def test_out_of_range(tmp_path: Path, data: dict[str, Any], expected: str) -> None:
    path = _write(tmp_path, data)
    assert _scenario_error(path) == f"{path}: {expected}"


def test_warmup_duration_zero_is_allowed(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, _with(warmup={"min_duration_ms": 0})))
    assert scenario.warmup.min_duration_ms == 0


@pytest.mark.parametrize(
    "model",
    [{"zoo": "tiny", "path": "m.onnx"}, {"precision": "fp16"}, {}],
    ids=["both", "neither", "empty"],
)
def test_model_needs_exactly_one_of_zoo_and_path(tmp_path: Path, model: dict[str, Any]) -> None:
    path = _write(tmp_path, _with(model=model))
    assert _scenario_error(path) == (
        f"{path}: model.zoo: give exactly one of 'zoo' (a generated model) or 'path' (an ONNX file)"
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            _with(scenario="Batch"),
            "scenario: 'Batch' is not allowed "
            "(allowed: SingleStream, MultiStream, Server, Offline)",
        ),
        (
            _with(model={"zoo": "tiny", "precision": "fp64"}),
            "model.precision: 'fp64' is not allowed (allowed: fp32, fp16, bf16, int8, int4)",
        ),
        (
            _with(runtime={"graph_optimization_level": "max"}),
            "runtime.graph_optimization_level: 'max' is not allowed "
            "(allowed: disable, basic, extended, all)",
        ),
        (
            _with(runtime={"execution_mode": "async"}),
            "runtime.execution_mode: 'async' is not allowed (allowed: sequential, parallel)",
        ),
        (
            _with(data={"source": "coco"}),
            "data.source: 'coco' is not allowed (allowed: synthetic, npy, imagenet, photos)",
        ),
    ],
    ids=["scenario", "precision", "opt-level", "execution-mode", "data-source"],
)
def test_literal_values(tmp_path: Path, data: dict[str, Any], expected: str) -> None:
    path = _write(tmp_path, data)
    assert _scenario_error(path) == f"{path}: {expected}"


def test_suite_profile_literal(tmp_path: Path) -> None:
    path = _write(tmp_path, {"name": "s", "profile": "fast", "scenarios": ["a.yaml"]})
    with pytest.raises(
        ConfigError,
        match=re.escape(f"{path}: profile: 'fast' is not allowed (allowed: quick, submission)"),
    ):
        load_suite(path)


def test_suite_needs_a_scenario(tmp_path: Path) -> None:
    path = _write(tmp_path, {"name": "s", "scenarios": []})
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert str(info.value) == f"{path}: scenarios: list at least one scenario file"


@pytest.mark.parametrize(
    "data",
    [
        {"source": "npy"},
        {"source": "synthetic", "dir": "some/dir"},
        {"source": "photos", "dir": "some/dir"},
    ],
    ids=["npy-without-dir", "dir-without-npy", "dir-with-photos"],
)
def test_data_dir_only_with_npy(tmp_path: Path, data: dict[str, Any]) -> None:
    path = _write(tmp_path, _with(data=data))
    assert _scenario_error(path) == (
        f"{path}: data.dir: required when source is 'npy' or 'imagenet', and only then"
    )


@pytest.mark.parametrize("key", ["name", "scenario", "model"])
def test_missing_required_key(tmp_path: Path, key: str) -> None:
    path = _write(tmp_path, _with(**{key: None}))
    assert _scenario_error(path) == f"{path}: missing required key '{key}'"


def test_missing_required_suite_key(tmp_path: Path) -> None:
    path = _write(tmp_path, {"name": "s"})
    with pytest.raises(ConfigError, match=re.escape(f"{path}: missing required key 'scenarios'")):
        load_suite(path)


def test_schema_version_2_says_upgrade(tmp_path: Path) -> None:
    path = _write(tmp_path, {"schema_version": 2, **_base()})
    message = _scenario_error(path)
    assert message == (
        f"{path}: schema_version: this beyond-tops reads version 1, got 2; upgrade beyond-tops"
    )


def test_schema_version_1_explicit_is_fine(tmp_path: Path) -> None:
    assert load_scenario(_write(tmp_path, {"schema_version": 1, **_base()})).schema_version == 1


# --- unreadable files -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("name: t\nscenario: Offline\nmodel: {zoo: tiny\nbatch_size: 1\n", 4, "expected ','"),
        ("name: t\nscenario: Offline\n  bad: indent\n", 3, "mapping values are not allowed"),
        ("name: t\n\tscenario: Offline\n", 2, "found character '\\t'"),
    ],
    ids=["unclosed-flow", "bad-indent", "tab"],
)
def test_malformed_yaml_names_the_line(tmp_path: Path, text: str, line: int, problem: str) -> None:
    path = _write_text(tmp_path, text)
    message = _scenario_error(path)
    assert message.startswith(f"{path}: line {line}: {problem}"), message


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    assert _scenario_error(path) == f"{path}: no such file; list them with `ls scenarios/`"


def test_directory_instead_of_file(tmp_path: Path) -> None:
    path = tmp_path / "dir.yaml"
    path.mkdir()
    message = _scenario_error(path)
    assert message.startswith(f"{path}: cannot read (")


@pytest.mark.parametrize(
    "text",
    ["- name: t\n- scenario: Offline\n", "", "just a string\n", "42\n"],
    ids=["list", "empty", "string", "number"],
)
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str) -> None:
    path = _write_text(tmp_path, text)
    assert _scenario_error(path) == f"{path}: expected a mapping of keys at the top level"


def test_suite_top_level_list(tmp_path: Path) -> None:
    path = _write_text(tmp_path, "- a.yaml\n- b.yaml\n")
    with pytest.raises(ConfigError, match=re.escape(f"{path}: expected a mapping")):
        load_suite(path)


def test_non_utf8_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("# caf\xe9\nname: t\n".encode("latin-1"))
    message = _scenario_error(path)
    assert "UTF-8" in message or "utf-8" in message


# --- immutability -----------------------------------------------------------------------------


def test_loaded_dataclasses_are_frozen(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, _base()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        scenario.batch_size = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        scenario.model.zoo = "resnet50"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        scenario.runtime.allow_spinning = False  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        scenario.data.seed = 1  # type: ignore[misc]
    suite = load_suite(SCENARIOS_DIR / "smoke.yaml")
    with pytest.raises(dataclasses.FrozenInstanceError):
        suite.profile = "submission"  # type: ignore[misc]
    assert scenario.batch_size == 4
    assert scenario.model.zoo == "tiny"


def test_runtime_providers_named_twice(tmp_path: Path) -> None:
    path = _write(tmp_path, _with(runtime={"providers": ["CUDAExecutionProvider"] * 2}))
    with pytest.raises(ConfigError, match=r"runtime\.providers: names a provider twice"):
        load_scenario(path)


# --- profiles and precisions: declared once, in config.py -----------------------------------


def test_the_profile_and_precision_tuples_are_their_literals() -> None:
    assert PROFILES == typing.get_args(ProfileName) == ("quick", "submission")
    assert PRECISIONS == typing.get_args(Precision) == ("fp32", "fp16", "bf16", "int8", "int4")
    assert tuple(DEFAULT_TRIALS) == PROFILES


def test_every_precision_has_a_recipe_and_its_isa() -> None:
    assert tuple(METHODS) == PRECISIONS
    assert tuple(ISA_FOR_PRECISION) == PRECISIONS


def test_the_result_schema_enumerates_the_same_names(result_schema: dict[str, Any]) -> None:
    enums = _enums(result_schema)
    assert enums["profile"] == [list(PROFILES)]
    assert enums["precision"] and all(e == list(PRECISIONS) for e in enums["precision"])


def _enums(node: Any, found: dict[str, list[Any]] | None = None) -> dict[str, list[Any]]:
    found = {} if found is None else found
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, dict) and "enum" in value:
                found.setdefault(key, []).append(value["enum"])
            _enums(value, found)
    elif isinstance(node, list):
        for value in node:
            _enums(value, found)
    return found


def test_names_are_checked_against_the_tuples() -> None:
    assert as_profile("submission") == "submission"
    assert as_precision("bf16") == "bf16"
    with pytest.raises(ConfigError, match=r"^profile: 'fast' is not allowed \(allowed: quick, "):
        as_profile("fast")
    with pytest.raises(
        ConfigError,
        match=r"^--precision: 'fp8' is not allowed \(allowed: fp32, fp16, bf16, int8, int4\)$",
    ):
        as_precision("fp8", "--precision")


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("name", "evil\x1b]0;pwned\x07", r"\x1b"),  # a terminal's window title
        ("name", "clear\x1b[2J", r"\x1b"),
        ("name", "bell\x07", r"\x07"),
        ("name", "tiny\u202eevil", r"\u202e"),  # right-to-left override (Trojan Source)
        ("name", "two\nlines", r"\x0a"),  # a newline ends a line of a generated script
        ("name", "nul\x00", r"\x00"),
        ("model.loadgen_name", "csi\x9b", r"\x9b"),
    ],
)
def test_strings_with_control_or_bidi_characters_are_refused(
    tmp_path: Path, key: str, value: str, shown: str
) -> None:
    data = _base()
    if key == "name":
        data["name"] = value
    else:
        data["model"]["loadgen_name"] = value
    message = _scenario_error(_write(tmp_path, data))
    assert f"{key}: holds the control character {shown}" in message
    assert not any(ch in message for ch in "\x1b\x07\u202e\x00\x9b")  # shown, never obeyed
