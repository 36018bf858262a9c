"""A target's provider chain as a session uses it: options resolved, chain narrowed.

The targets themselves are data in harness.hardware, re-exported here for the runtime's users.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

from harness.errors import ConfigError
from harness.hardware import TARGETS, HardwareTarget, ProviderSpec, get_target

__all__ = [
    "GENAI_PROVIDERS",
    "TARGETS",
    "HardwareTarget",
    "ProviderSpec",
    "get_target",
    "resolve_options",
    "selected_providers",
]


# A target's onnxruntime-genai provider (genai's name for it) and the onnxruntime execution
# provider it runs the model on. onnxruntime-genai-cuda (the nvidia image's lock) brings "cuda";
# there is no genai build for ROCm/MIGraphX on PyPI, so rocm has none.
GENAI_PROVIDERS: Final[Mapping[str, tuple[str, str]]] = MappingProxyType(
    {"cpu": ("cpu", "CPUExecutionProvider"), "nvidia": ("cuda", "CUDAExecutionProvider")}
)


def resolve_options(
    spec: ProviderSpec, overrides: Mapping[str, Mapping[str, str]], cache_dir: str
) -> dict[str, str]:
    """Target defaults, then the scenario's overrides, with the cache path filled in."""
    merged = {**spec.options, **overrides.get(spec.name, {})}
    return {key: value.replace("{cache}", cache_dir) for key, value in merged.items()}


def selected_providers(target: HardwareTarget, names: Sequence[str]) -> tuple[ProviderSpec, ...]:
    """The target's chain, or the part of it that `runtime.providers` names, in chain order."""
    if not names:
        return target.providers
    unknown = [name for name in names if name not in target.provider_names]
    if unknown:
        raise ConfigError(
            f"runtime.providers: {unknown[0]} is not in HW={target.name}'s chain "
            f"(allowed: {', '.join(target.provider_names)})"
        )
    order = [name for name in target.provider_names if name in names]
    if list(names) != order:
        raise ConfigError(
            f"runtime.providers: {list(names)} must keep HW={target.name}'s order (use {order})"
        )
    return tuple(spec for spec in target.providers if spec.name in names)
