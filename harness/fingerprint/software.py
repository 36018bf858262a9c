"""Python and package versions, onnxruntime's providers and performance environment variables."""

from __future__ import annotations

import platform
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import Any

from harness.fingerprint.probe import Probe
from harness.packages import PACKAGES, VersionOf, package_versions
from harness.runtime.info import available_providers

# Variables read by OpenMP, BLAS/oneDNN, onnxruntime, allocators and GPU runtimes.
ENV_PREFIXES = (
    "OMP_",
    "KMP_",
    "GOMP_",
    "MKL_",
    "OPENBLAS_",
    "DNNL_",
    "ONEDNN_",
    "ORT_",
    "ONNXRUNTIME_",
    "CUDA_",
    "CUDNN_",
    "NVIDIA_",
    "HIP_",
    "ROCR_",
    "HSA_",
    "MIOPEN_",
    "MALLOC_",
    "TCMALLOC_",
)
ENV_NAMES = ("GLIBC_TUNABLES", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONMALLOC")
ProviderList = Callable[[], list[str]]


def onnxruntime_providers() -> list[str]:
    """The execution providers onnxruntime offers here, importing it only when asked."""
    return available_providers()


def collect_software(
    probe: Probe,
    *,
    version: VersionOf = metadata.version,
    providers: ProviderList = onnxruntime_providers,
) -> dict[str, Any]:
    """The interpreter, the versions of the packages that run the benchmark, and ORT providers."""
    packages = package_versions(PACKAGES, version=version)
    for name, found in packages.items():
        if found is None:
            probe.note(f"software.packages.{name}", f"{name} is not installed")
    try:
        available: list[str] | None = providers()
    except (ImportError, OSError) as exc:
        available = None
        probe.note("software.providers", f"onnxruntime cannot be imported: {exc}")
    return {
        "python": {
            "implementation": platform.python_implementation(),
            "version": platform.python_version(),
        },
        "packages": packages,
        "providers": available,
    }


def collect_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment variables that change performance, sorted by name."""
    return {
        name: environ[name]
        for name in sorted(environ)
        if name.startswith(ENV_PREFIXES) or name in ENV_NAMES
    }
