"""Versions of the installed packages that measure, read one way: from distribution metadata."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import metadata

from harness.errors import DependencyError
from harness.hardware import ONNXRUNTIME_BUILDS

VersionOf = Callable[[str], str]
# The distributions results and fingerprints record, by their pip names.
PACKAGES = ("onnxruntime", "mlcommons-loadgen", "numpy", "onnx", "beyond-tops")


def package_version(name: str, *, version: VersionOf = metadata.version) -> str | None:
    """The installed version of the distribution `name`, or None where it is not installed.

    "onnxruntime" is whichever build installs the onnxruntime module (onnxruntime-gpu,
    onnxruntime-migraphx, ...: harness.hardware.ONNXRUNTIME_BUILDS), the first one found.
    """
    for candidate in ONNXRUNTIME_BUILDS if name == "onnxruntime" else (name,):
        try:
            return version(candidate)
        except metadata.PackageNotFoundError:
            continue
    return None


def package_versions(
    names: Sequence[str] = PACKAGES, *, version: VersionOf = metadata.version
) -> dict[str, str | None]:
    """`package_version` of each name."""
    return {name: package_version(name, version=version) for name in names}


def required_version(name: str) -> str:
    """`package_version`, where a missing package is a DependencyError."""
    found = package_version(name)
    if found is None:
        raise DependencyError(f"{name} is not installed; install beyond-tops with its dependencies")
    return found


def onnxruntime_builds(*, version: VersionOf = metadata.version) -> list[str]:
    """The onnxruntime builds installed here, as name==version (two at once is a broken install)."""
    found = []
    for name in ONNXRUNTIME_BUILDS:
        try:
            found.append(f"{name}=={version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return found
