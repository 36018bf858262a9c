"""What the installed onnxruntime offers: execution providers, newest opset.

Its version, like every package's, is harness.packages.package_version("onnxruntime").
"""

from __future__ import annotations

from functools import cache

# onnxruntime is imported inside each function: importing this module has no side effects
# and works where onnxruntime is absent (the fingerprint records that instead).


def available_providers() -> list[str]:
    """The execution providers this onnxruntime build offers here."""
    import onnxruntime

    return [str(name) for name in onnxruntime.get_available_providers()]


@cache
def max_opset() -> int:
    """The newest ai.onnx opset the installed onnxruntime knows."""
    from onnxruntime.capi import onnxruntime_pybind11_state as ort_c

    schemas = ort_c.get_all_operator_schema()
    return max(int(s.since_version) for s in schemas if s.domain in ("", "ai.onnx"))
