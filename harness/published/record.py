"""published.json: a published record's versioned JSON form, written by the importer, read by all.

History of PUBLISHED_SCHEMA_VERSION: 1, the first; 2, the metric follows the result's round
(harness.records.metrics.round_headline), so it may name an early-stopping percentile; 3,
the compliance verdicts (TEST01, TEST04) the tree states; 4, an LLM's token figures
(generation: tokens/s, TTFT, TPOT), by which it is ranked. A version-1 file reads as it is:
its metric is what that import chose; a version-1 or 2 file reads with no compliance tests
(it was imported before they were read: import it again to see them); one before 4 with
no generation block (import it again to rank an LLM by tokens/s).
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import ResultError
from harness.files import atomic_write_text
from harness.records.codec import from_data, to_object
from harness.records.layout import PUBLISHED_FILE
from harness.records.published import PublishedResult
from harness.results.schema import schema_problem
from harness.strictjson import Format, read_versioned

PUBLISHED_SCHEMA_VERSION = 4
SCHEMA_FILE = "published.schema.json"
PUBLISHED = Format(
    what="a beyond-tops published record",
    newest=PUBLISHED_SCHEMA_VERSION,
    oldest=1,
    older_fix="import it again",
)


def is_published(path: Path) -> bool:
    """Whether a path is a published record: its published.json or the directory holding it."""
    return path.name == PUBLISHED_FILE if path.is_file() else (path / PUBLISHED_FILE).is_file()


def to_json(record: PublishedResult) -> str:
    """The record as indented JSON, schema_version first."""
    data = {"schema_version": PUBLISHED_SCHEMA_VERSION, **to_object(record)}
    try:
        return json.dumps(data, indent=2, allow_nan=False) + "\n"
    except ValueError:
        raise ResultError(f"{record.label}: a value is not a finite number; not written") from None


def write_published(record: PublishedResult, directory: Path) -> Path:
    """Write published.json into `directory`, atomically."""
    path = directory / PUBLISHED_FILE
    atomic_write_text(path, to_json(record))
    return path


def load_published(path: Path) -> PublishedResult:
    """Read a published record (its directory or published.json); one line for any problem."""
    file = path / PUBLISHED_FILE if path.is_dir() else path
    # strict: no NaN or Infinity (issue #23), each refused by its key
    versioned = read_versioned(
        file,
        PUBLISHED,
        ResultError,
        missing="no such published record; import one with `harness import mlperf`",
    )
    data = versioned.data
    if versioned.version < 3:  # imported before compliance verdicts were read
        data = {**data, "compliance": []}
    if versioned.version < 4:  # imported before token figures were read
        data = {**data, "generation": None}
    problem = schema_problem(data, SCHEMA_FILE)
    body = {k: v for k, v in data.items() if k != "schema_version"}
    if problem is None:
        try:
            return from_data(PublishedResult, body)
        except ResultError as exc:
            problem = str(exc)
    raise ResultError(f"{file}: not a published record ({problem}); import it again")
