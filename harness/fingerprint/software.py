"""Python and package versions, onnxruntime's providers and performance environment variables."""

from __future__ import annotations

import platform
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from importlib import metadata

from harness.fingerprint.probe import Probe
from harness.packages import PACKAGES, VersionOf, package_versions
from harness.records.fingerprint_sections import PythonInfo, SoftwareInfo
from harness.runtime.info import available_providers

# Variables read by OpenMP, BLAS/oneDNN, onnxruntime, allocators and GPU runtimes, by exact
# name: a prefix would also take NVIDIA_API_KEY or ORT_TOKEN into result.json.
ENV_NAMES = frozenset(
    {
        # OpenMP (GNU and Intel runtimes)
        "OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "OMP_WAIT_POLICY", "OMP_DYNAMIC",
        "OMP_SCHEDULE", "OMP_STACKSIZE", "OMP_MAX_ACTIVE_LEVELS", "OMP_THREAD_LIMIT",
        "KMP_AFFINITY", "KMP_BLOCKTIME", "KMP_HW_SUBSET", "KMP_SETTINGS",
        "GOMP_CPU_AFFINITY", "GOMP_SPINCOUNT",
        # BLAS and oneDNN
        "MKL_NUM_THREADS", "MKL_DYNAMIC", "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR",
        "MKL_DEBUG_CPU_TYPE", "MKL_THREADING_LAYER",
        "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
        "DNNL_MAX_CPU_ISA", "DNNL_CPU_ISA_HINTS", "DNNL_DEFAULT_FPMATH_MODE", "DNNL_VERBOSE",
        "ONEDNN_MAX_CPU_ISA", "ONEDNN_CPU_ISA_HINTS", "ONEDNN_DEFAULT_FPMATH_MODE",
        "ONEDNN_VERBOSE", "ONEDNN_PRIMITIVE_CACHE_CAPACITY",
        # onnxruntime's TensorRT and MIGraphX providers
        "ORT_TENSORRT_FP16_ENABLE", "ORT_TENSORRT_INT8_ENABLE", "ORT_TENSORRT_DLA_ENABLE",
        "ORT_TENSORRT_ENGINE_CACHE_ENABLE", "ORT_TENSORRT_MAX_WORKSPACE_SIZE",
        "ORT_TENSORRT_MAX_PARTITION_ITERATIONS", "ORT_TENSORRT_MIN_SUBGRAPH_SIZE",
        "ORT_TENSORRT_BUILDER_OPTIMIZATION_LEVEL",
        "ORT_MIGRAPHX_FP16_ENABLE", "ORT_MIGRAPHX_INT8_ENABLE",
        # CUDA, cuDNN and the NVIDIA container runtime
        "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING",
        "CUDA_MODULE_LOADING", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_CACHE_DISABLE",
        "CUDA_CACHE_MAXSIZE", "CUDA_FORCE_PTX_JIT", "CUDA_AUTO_BOOST",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "CUDNN_CONV_WSCAP_DBG",
        "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_TF32_OVERRIDE",
        # ROCm
        "HIP_VISIBLE_DEVICES", "HIP_LAUNCH_BLOCKING", "ROCR_VISIBLE_DEVICES",
        "HSA_OVERRIDE_GFX_VERSION", "HSA_ENABLE_SDMA", "HSA_XNACK", "GPU_MAX_HW_QUEUES",
        "MIOPEN_FIND_MODE", "MIOPEN_FIND_ENFORCE",
        # Allocators and the loader
        "MALLOC_ARENA_MAX", "MALLOC_CONF", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
        "MALLOC_TRIM_THRESHOLD_", "TCMALLOC_RELEASE_RATE",
        "TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES", "GLIBC_TUNABLES", "LD_PRELOAD",
        "LD_LIBRARY_PATH", "PYTHONMALLOC",
    }
)  # fmt: skip
# A name with one of these in it holds a secret: its value is never recorded.
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
REDACTED = "<redacted>"
ProviderList = Callable[[], list[str]]


def onnxruntime_providers() -> list[str]:
    """The execution providers onnxruntime offers here, importing it only when asked."""
    return available_providers()


def collect_software(
    probe: Probe,
    *,
    version: VersionOf = metadata.version,
    providers: ProviderList = onnxruntime_providers,
) -> SoftwareInfo:
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
    return SoftwareInfo(
        python=PythonInfo(
            implementation=platform.python_implementation(), version=platform.python_version()
        ),
        packages=packages,
        providers=None if available is None else tuple(available),
    )


def collect_env(
    environ: Mapping[str, str], *, names: AbstractSet[str] = ENV_NAMES
) -> dict[str, str]:
    """The allowlisted environment variables that change performance, sorted by name.

    A value under a name that looks like a secret's is recorded as "<redacted>".
    """
    return {
        name: REDACTED if is_secret_name(name) else environ[name]
        for name in sorted(environ)
        if name in names
    }


def is_secret_name(name: str) -> bool:
    """Whether a variable's name says that its value is a secret (API_KEY, ORT_TOKEN, ...)."""
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)
