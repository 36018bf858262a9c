"""Environment fingerprint collectors and preflight checks, over an injectable root.

The record they return, and comparing two of them, live in harness.records.fingerprint.
"""

from harness.errors import PreflightError
from harness.fingerprint.fingerprint import collect_fingerprint
from harness.fingerprint.preflight import (
    DEFAULT_LOAD_THRESHOLD,
    PreflightWarning,
    enforce_strict,
    preflight,
)

__all__ = [
    "DEFAULT_LOAD_THRESHOLD",
    "PreflightError",
    "PreflightWarning",
    "collect_fingerprint",
    "enforce_strict",
    "preflight",
]
