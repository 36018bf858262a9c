"""harness.packages: every package version read one way, whichever onnxruntime build it is."""

from __future__ import annotations

from importlib import metadata

import pytest

import harness
from harness.errors import DependencyError
from harness.packages import (
    PACKAGES,
    VersionOf,
    onnxruntime_builds,
    package_version,
    package_versions,
    required_version,
)


def _installed(versions: dict[str, str]) -> VersionOf:
    def version(name: str) -> str:
        if name not in versions:
            raise metadata.PackageNotFoundError(name)
        return versions[name]

    return version


def test_onnxruntime_is_whichever_build_is_installed() -> None:
    gpu = _installed({"onnxruntime-gpu": "1.32.0", "numpy": "2.4.6"})
    assert package_version("onnxruntime", version=gpu) == "1.32.0"
    assert package_version("numpy", version=gpu) == "2.4.6"
    assert package_version("onnx", version=gpu) is None
    assert onnxruntime_builds(version=gpu) == ["onnxruntime-gpu==1.32.0"]


def test_versions_of_the_recorded_packages() -> None:
    found = package_versions()
    assert list(found) == list(PACKAGES)
    assert found["beyond-tops"] == metadata.version("beyond-tops")
    assert found["numpy"] == metadata.version("numpy")


def test_the_harness_version_has_one_home() -> None:
    """pyproject.toml reads harness.__version__; the installed metadata says the same."""
    assert metadata.version("beyond-tops") == harness.__version__


def test_a_missing_required_package_is_a_dependency_error() -> None:
    with pytest.raises(DependencyError, match=r"^no-such-package is not installed"):
        required_version("no-such-package")
    assert required_version("onnxruntime") == package_version("onnxruntime")
