"""Environment fingerprint and preflight checks, from small collectors over an injectable root."""

from harness.errors import PreflightError
from harness.fingerprint.fingerprint import (
    CPU_ID_KEYS,
    FINGERPRINT_VERSION,
    GPU_ID_KEYS,
    Fingerprint,
    build_fingerprint,
    collect_fingerprint,
    comparability_fields,
    compare_fingerprints,
    fingerprint_id_of,
)
from harness.fingerprint.format import format_fingerprint
from harness.fingerprint.preflight import (
    DEFAULT_LOAD_THRESHOLD,
    PreflightWarning,
    enforce_strict,
    preflight,
)
from harness.fingerprint.probe import Missing

__all__ = [
    "CPU_ID_KEYS",
    "DEFAULT_LOAD_THRESHOLD",
    "FINGERPRINT_VERSION",
    "GPU_ID_KEYS",
    "Fingerprint",
    "Missing",
    "PreflightError",
    "PreflightWarning",
    "build_fingerprint",
    "collect_fingerprint",
    "comparability_fields",
    "compare_fingerprints",
    "enforce_strict",
    "fingerprint_id_of",
    "format_fingerprint",
    "preflight",
]
