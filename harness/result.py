"""Compatibility re-exports of harness.results: import from harness.results.* in new code.

Kept while code written against the single-module form is migrated (the run worker imports
``write_result`` from here); remove once nothing imports ``harness.result``.
"""

from harness.results.records import RunResult
from harness.results.runfile import (
    INCOMPLETE_FILE,
    RESULT_FILE,
    SCHEMA_VERSION,
    load_result,
    to_json,
    write_result,
)

__all__ = [
    "INCOMPLETE_FILE",
    "RESULT_FILE",
    "SCHEMA_VERSION",
    "RunResult",
    "load_result",
    "to_json",
    "write_result",
]
