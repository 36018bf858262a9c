"""A stand-in for onnxruntime.InferenceSession that behaves as the real one does.

test_ort_contract.py runs the same assertions against this fake and the real CPU build, so
the fake cannot drift from onnxruntime (it once returned only the requested providers, and
hid that every GPU session was refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

CPU = "CPUExecutionProvider"


@dataclass
class Arg:
    name: str
    shape: list[Any]
    type: str = "tensor(float)"


class FakeSession:
    """Stands in for onnxruntime.InferenceSession; records how it was built."""

    built: ClassVar[list[FakeSession]] = []
    fail_with: Exception | None = None
    uses: list[str] | None = None
    profile: Path | None = None

    def __init__(self, path: str, sess_options: Any, providers: Any, enable_fallback: int) -> None:
        self.path, self.options, self.chain = path, sess_options, list(providers)
        self.enable_fallback = enable_fallback
        FakeSession.built.append(self)
        if FakeSession.fail_with is not None:
            raise FakeSession.fail_with

    def get_providers(self) -> list[str]:
        # Like onnxruntime: the CPU provider is always appended (contract-tested below).
        names = FakeSession.uses or [name for name, _ in self.chain]
        return names if CPU in names else [*names, CPU]

    def get_provider_options(self) -> dict[str, dict[str, str]]:
        return {CPU: {}, **{name: dict(options) for name, options in self.chain}}

    def get_inputs(self) -> list[Arg]:
        return [Arg("input", [1, 3, 32, 32])]

    def get_outputs(self) -> list[Arg]:
        return [Arg("logits", [1, 10])]

    def run(self, names: Any, feeds: Any) -> list[np.ndarray]:
        return [np.zeros((1, 10), np.float32)]

    def end_profiling(self) -> str:
        return str(FakeSession.profile)
