"""Software versions, performance environment variables and the harness's git commit."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

import harness
from harness.fingerprint.probe import Probe
from harness.fingerprint.provenance import collect_harness, default_repo_dir
from harness.fingerprint.software import collect_env, collect_software, onnxruntime_providers
from harness.records.fingerprint_sections import section_json
from tests.conftest import git

VERSIONS = {
    "onnxruntime": "1.32.0",
    "mlcommons-loadgen": "6.0.17",
    "numpy": "2.4.6",
    "onnx": "1.23.2",
    "beyond-tops": "0.1.0",
}


def _version(name: str) -> str:
    if name not in VERSIONS:
        raise metadata.PackageNotFoundError(name)
    return VERSIONS[name]


def test_software_with_injected_lookups(tmp_path: Path) -> None:
    probe = Probe(tmp_path)
    data = section_json(
        collect_software(probe, version=_version, providers=lambda: ["CPUExecutionProvider"])
    )
    assert data["packages"] == VERSIONS
    assert data["providers"] == ["CPUExecutionProvider"]
    assert set(data["python"]) == {"implementation", "version"}
    assert probe.missing == []


def test_missing_package_and_onnxruntime_are_recorded(tmp_path: Path) -> None:
    def no_onnx(name: str) -> str:
        if name == "onnx":
            raise metadata.PackageNotFoundError(name)
        return _version(name)

    def no_ort() -> list[str]:
        raise ImportError("No module named 'onnxruntime'")

    probe = Probe(tmp_path)
    data = section_json(collect_software(probe, version=no_onnx, providers=no_ort))
    assert (data["packages"]["onnx"], data["providers"]) == (None, None)
    assert [m.to_dict() for m in probe.missing] == [
        {"field": "software.packages.onnx", "reason": "onnx is not installed"},
        {
            "field": "software.providers",
            "reason": "onnxruntime cannot be imported: No module named 'onnxruntime'",
        },
    ]


def test_real_versions_and_providers(tmp_path: Path) -> None:
    data = section_json(collect_software(Probe(tmp_path)))
    assert data["packages"]["beyond-tops"] == metadata.version("beyond-tops")
    assert data["providers"] == onnxruntime_providers()
    assert "CPUExecutionProvider" in data["providers"]


def test_env_keeps_only_performance_variables() -> None:
    environ = {
        "OMP_NUM_THREADS": "4",
        "MKL_DEBUG_CPU_TYPE": "5",
        "ORT_TENSORRT_FP16_ENABLE": "1",
        "CUDA_VISIBLE_DEVICES": "0",
        "KMP_AFFINITY": "compact",
        "LD_PRELOAD": "/usr/lib/libtcmalloc.so",
        "HOME": "/root",
        "PATH": "/usr/bin",
        "SECRET_TOKEN": "x",
    }
    assert collect_env(environ) == {
        "CUDA_VISIBLE_DEVICES": "0",
        "KMP_AFFINITY": "compact",
        "LD_PRELOAD": "/usr/lib/libtcmalloc.so",
        "MKL_DEBUG_CPU_TYPE": "5",
        "OMP_NUM_THREADS": "4",
        "ORT_TENSORRT_FP16_ENABLE": "1",
    }


def test_env_never_records_secrets_under_a_performance_prefix() -> None:
    environ = {
        "NVIDIA_API_KEY": "nvapi-SECRET",
        "ORT_TOKEN": "tok",
        "CUDA_PASSWORD": "pw",
        "MKL_CREDENTIALS": "c",
        "OMP_UNKNOWN_SETTING": "1",
        "OMP_NUM_THREADS": "4",
    }
    assert collect_env(environ) == {"OMP_NUM_THREADS": "4"}


def test_env_redacts_an_allowlisted_name_that_looks_like_a_secret() -> None:
    names = frozenset({"OMP_NUM_THREADS", "ORT_TENSORRT_API_KEY", "hf_token"})
    environ = {"OMP_NUM_THREADS": "4", "ORT_TENSORRT_API_KEY": "k", "hf_token": "t"}
    assert collect_env(environ, names=names) == {
        "OMP_NUM_THREADS": "4",
        "ORT_TENSORRT_API_KEY": "<redacted>",
        "hf_token": "<redacted>",
    }


@pytest.fixture
def repo(git_repo: Path) -> Path:
    return git_repo


def test_clean_repo_commit(repo: Path) -> None:
    probe = Probe(repo)
    assert section_json(collect_harness(probe, repo)) == {
        "version": harness.__version__,
        "git_commit": git(repo, "rev-parse", "HEAD"),
        "git_dirty": False,
    }
    assert probe.missing == []


def test_dirty_follows_the_gitstate_rule(repo: Path) -> None:
    """The rule itself is tested in tests/unit/test_gitstate.py; here, that it is the one used."""
    (repo / "new.txt").write_text("untracked\n")
    assert section_json(collect_harness(Probe(repo), repo))["git_dirty"] is True


def test_not_a_repository_is_recorded(tmp_path: Path) -> None:
    probe = Probe(tmp_path)
    data = section_json(collect_harness(probe, tmp_path))
    assert (data["git_commit"], data["git_dirty"]) == (None, None)
    assert probe.missing[0].field == "harness.git_commit"
    assert probe.missing[0].reason.startswith(
        f"git rev-parse failed in {tmp_path}: fatal: not a git"
    )
    assert probe.missing[1].to_dict() == {
        "field": "harness.git_dirty",
        "reason": "no git commit to compare against",
    }


def test_missing_git_is_recorded(repo: Path) -> None:
    probe = Probe(repo)
    assert (
        section_json(collect_harness(probe, repo, git=str(repo / "no-git")))["git_commit"] is None
    )
    assert probe.missing[0].to_dict() == {
        "field": "harness.git_commit",
        "reason": f"{repo / 'no-git'} not found: install git to record the harness's commit",
    }


def test_default_repo_dir_is_the_checkout_of_the_package() -> None:
    assert (default_repo_dir() / "harness" / "__init__.py").is_file()
