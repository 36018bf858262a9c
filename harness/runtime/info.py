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


# Names an onnxruntime Python API would carry allocator statistics under, were it to expose them.
_STATS_WORDS = ("alloc", "arena", "stats", "memory_usage")


def arena_bytes(session: object) -> tuple[int | None, str | None]:
    """Onnxruntime's arena in use by ``session``: (bytes, None), or (None, why not).

    The C API has allocator statistics (OrtApi::AllocatorGetStats); the Python API of the
    onnxruntime versions this harness knows (up to 1.32) offers no call that returns them for a
    session's allocator, so the answer is "not exposed" with the version installed, not a
    number made up from elsewhere.
    """
    import onnxruntime

    exposed = sorted(
        name
        for name in dir(session)
        if not name.startswith("_") and any(word in name.lower() for word in _STATS_WORDS)
    )
    reason = (
        f"not exposed by onnxruntime {onnxruntime.__version__}: its Python API has no allocator "
        "statistics (the C API's AllocatorGetStats)"
    )
    if exposed:
        reason += f"; this build names {', '.join(exposed)}, which the harness does not read yet"
    return None, reason
