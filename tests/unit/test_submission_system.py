"""The system description JSON: every field MLPerf requires, filled from fingerprint and YAML."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from harness.errors import ConfigError
from harness.records.fingerprint import Fingerprint
from harness.records.result import RunResult
from harness.results.runfile import load_result
from harness.submission.system import (
    MEANINGFUL,
    SYSTEM_FIELDS,
    check_name,
    load_description,
    system_json,
    unknown_fields,
)

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "results" / "tiny-singlestream-v3"
EXAMPLE = REPO / "scenarios" / "system-description.example.yaml"
CHECKER_CONSTANTS = REPO.parent / "shared" / "mlperf-tools" / "submission_checker" / "constants.py"
H100 = {
    "vendor": "nvidia",
    "name": "NVIDIA H100 80GB HBM3",
    "memory_total_mib": 81559,
    "clock_sm_max_mhz": 1980,
    "pcie_gen_max": 5,
    "pcie_width_max": 16,
    "driver_version": "570.86.15",
}


def _checker() -> Any:
    if not CHECKER_CONSTANTS.is_file():
        return None
    spec = importlib.util.spec_from_file_location("mlperf_checker_constants", CHECKER_CONSTANTS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cpu_result() -> RunResult:
    return load_result(FIXTURE)


def _on_gpus(result: RunResult, count: int) -> RunResult:
    data = {**result.fingerprint.to_dict(), "gpus": [dict(H100, index=i) for i in range(count)]}
    hardware = dataclasses.replace(
        result.hardware, target="nvidia", gpus=tuple(H100["name"] for _ in range(count))
    )
    return dataclasses.replace(result, fingerprint=Fingerprint(data=data), hardware=hardware)


def _system(result: RunResult, described: dict[str, str] | None = None) -> dict[str, str]:
    return system_json(
        [result], division="open", submitter="Beyond", system="vm1", described=described or {}
    )


def test_every_required_field_is_there_in_the_checkers_order(cpu_result: RunResult) -> None:
    data = _system(cpu_result)
    checker = _checker()
    required = SYSTEM_FIELDS if checker is None else tuple(checker.SYSTEM_DESC_REQUIRED_FIELDS)
    assert len(required) == 35 and required == SYSTEM_FIELDS
    assert list(data) == list(SYSTEM_FIELDS)
    assert all(isinstance(v, str) for v in data.values())


def test_meaningful_fields_are_not_empty_and_counts_are_integers(cpu_result: RunResult) -> None:
    data = _system(cpu_result)
    checker = _checker()
    if checker is not None:
        assert set(checker.SYSTEM_DESC_MEANINGFUL_RESPONSE_REQUIRED_FIELDS) == MEANINGFUL
        for key in checker.SYSTEM_DESC_MEANINGFUL_RESPONSE_REQUIRED_FIELDS:
            assert data[key], key  # the checker's test: `not system_json[k]`
        assert data["status"].lower() in checker.VALID_AVAILABILITIES
    assert data["accelerators_per_node"] == "0"  # a CPU run; "0" is not empty, 0 would be
    assert int(data["number_of_nodes"]) * int(data["accelerators_per_node"]) == 0  # as its CSV


def test_division_and_submitter_are_the_tree_names(cpu_result: RunResult) -> None:
    data = system_json(
        [cpu_result], division="closed", submitter="Org_1", system="vm1", described={}
    )
    assert (data["division"], data["submitter"]) == ("closed", "Org_1")


def test_what_the_fingerprint_knows(cpu_result: RunResult) -> None:
    data = _system(cpu_result)
    assert data["system_name"] == "vm1"
    assert data["host_processor_model_name"] == "AMD EPYC"
    assert data["host_processors_per_node"] == "1"
    assert data["host_processor_core_count"] == "2"
    assert data["host_memory_capacity"] == "23.5 GiB"
    assert data["host_processor_caches"] == "L1d 32 KiB, L1i 32 KiB, L2 1 MiB, L3 32 MiB"
    assert data["host_processor_frequency"].startswith("2596 MHz")
    assert data["framework"] == "onnxruntime 1.32.0 (CPUExecutionProvider), MLPerf LoadGen 6.0.17"
    assert data["operating_system"].startswith("Debian GNU/Linux 12 (bookworm), kernel ")
    assert "beyond-tops 0.1.0 (git 55597f181825)" in data["other_software_stack"]
    assert data["accelerator_model_name"] == "N/A"
    assert (data["status"], data["system_type"]) == ("rdi", "edge")


def test_what_nobody_said_is_unknown_and_listed(cpu_result: RunResult) -> None:
    data = _system(cpu_result)
    assert data["cooling"] == "unknown"
    assert "cooling" in unknown_fields(data) and "host_storage_type" in unknown_fields(data)
    assert "accelerator_model_name" not in unknown_fields(data)


def test_the_description_fills_and_overrides(cpu_result: RunResult) -> None:
    described = load_description(EXAMPLE)
    data = _system(cpu_result, {**described, "host_processor_model_name": "AMD EPYC 9R14"})
    assert data["cooling"] == "air" and data["host_storage_type"] == "NVMe SSD"
    assert data["host_processor_model_name"] == "AMD EPYC 9R14"
    assert data["host_network_card_count"] == "1"
    assert unknown_fields(data) == []


def test_notes_are_appended_to_sw_notes(cpu_result: RunResult) -> None:
    data = system_json(
        [cpu_result],
        division="open",
        submitter="B",
        system="s",
        described={},
        notes=("Quick-profile results: resnet Offline.",),
    )
    assert (
        data["sw_notes"]
        == "Measured with beyond-tops 0.1.0. Quick-profile results: resnet Offline."
    )


def test_gpus_fill_the_accelerator_fields(cpu_result: RunResult) -> None:
    data = _system(_on_gpus(cpu_result, 2))
    assert data["accelerators_per_node"] == "2"
    assert data["accelerator_model_name"] == "NVIDIA H100 80GB HBM3"
    assert data["accelerator_memory_capacity"] == "80 GiB"
    assert data["accelerator_frequency"] == "1980 MHz"
    assert data["accelerator_host_interconnect"] == "PCIe Gen5 x16"
    assert data["accelerator_interconnect"] == "unknown"  # NVLink is not in the fingerprint
    assert "GPU driver 570.86.15" in data["other_software_stack"]


def _yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "system.yaml"
    path.write_text(text)
    return path


def test_the_example_description_loads_as_text() -> None:
    described = load_description(EXAMPLE)
    assert described["status"] == "rdi" and described["system_type"] == "edge"
    assert all(isinstance(v, str) for v in described.values())


def test_an_empty_description_describes_nothing(tmp_path: Path) -> None:
    assert load_description(_yaml(tmp_path, "# cooling: air\n")) == {}


def test_empty_notes_are_allowed(tmp_path: Path) -> None:
    assert load_description(_yaml(tmp_path, 'hw_notes: ""\n')) == {"hw_notes": ""}


def test_numbers_become_text(tmp_path: Path) -> None:
    described = load_description(_yaml(tmp_path, "accelerators_per_node: 0\ncooling: air\n"))
    assert described == {"accelerators_per_node": "0", "cooling": "air"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("colling: air\n", "unknown key 'colling' (allowed: accelerator_frequency, "),
        ("division: closed\n", "division: set by --division (it names the tree's directory)"),
        ("submitter: x\n", "submitter: set by --org (it names the tree's directory)"),
        ("status: sold\n", "status: 'sold' is not allowed (allowed: rdi, available, preview)"),
        ("system_type: cloud\n", "system_type: 'cloud' is not allowed (allowed: edge, "),
        ("accelerators_per_node: one\n", "accelerators_per_node: must be a whole number"),
        ("cooling: [air]\n", "cooling: expected text or a number, got list"),
        ("cooling: yes\n", "cooling: expected text or a number, got bool"),
        ("cooling: air\ncooling: water\n", "line 2: duplicate key 'cooling'; give it once"),
        ("- a\n", "expected a mapping of system JSON fields at the top level"),
        ("cooling: [\n", "line "),
        ('cooling: ""\n', "cooling: empty; MLPerf's checker needs a value (write unknown or N/A)"),
    ],
)
def test_bad_descriptions_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = _yaml(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_description(path)
    assert str(info.value).startswith(f"{path}:")
    assert message in str(info.value) and "\n" not in str(info.value)
    assert info.value.exit_code == 2


def test_a_missing_description_points_at_the_example(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape("scenarios/system-description.example.yaml")):
        load_description(tmp_path / "nope.yaml")


@pytest.mark.parametrize("name", ["", "../up", "a/b", ".hidden", "two words", "x" * 101])
def test_names_that_cannot_be_directories_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=r"^--org: .* names a directory of the submission tree"):
        check_name(name, "--org")


def test_ordinary_names_pass() -> None:
    assert check_name("Beyond-Tops_1.0+cpu", "--system") == "Beyond-Tops_1.0+cpu"


def test_a_gpu_target_whose_gpus_could_not_be_read_is_not_said_to_have_none(
    cpu_result: RunResult,
) -> None:
    hardware = dataclasses.replace(cpu_result.hardware, target="rocm", gpus=())
    data = _system(dataclasses.replace(cpu_result, hardware=hardware))
    assert (
        data["accelerators_per_node"] == "unknown" and data["accelerator_model_name"] == "unknown"
    )
    assert "accelerators_per_node" in unknown_fields(data)
