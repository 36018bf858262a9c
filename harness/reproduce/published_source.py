"""A published record as `harness reproduce` reads it: hostile input, bounded, inside its directory.

Grammar (issue #26): the source is a record directory `harness import mlperf` wrote (it holds
published.json) or its published.json. published.json is bounded strict JSON of the published
schema (harness.published.record). LoadGen's effective settings are read from the record's own
copy of the detail log (mlperf_log_detail.txt beside published.json), and the model's sha256
from its measurements JSON where one states `model_sha256`; each file the record names must
stay inside the record's directory (a link out, or a name like `../x`, is refused), be a
regular file and be within its size bound (harness.foreign). Any refusal is one ResultError
naming the file, and nothing runs. A published LLM record (a generation block) is one
ModelError: its model is not in the zoo and `--model` runs no generator.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ModelError, ResultError
from harness.foreign import inside
from harness.models.llm.store import GENERATIVE
from harness.published.files import detail_log, json_fields
from harness.published.record import is_published, load_published
from harness.records.layout import DETAIL_LOG, PUBLISHED_FILE
from harness.records.loadgen_log import effective_settings
from harness.records.published import PublishedResult
from harness.records.result import SettingValue

MEASUREMENTS_PREFIX = "measurements/"
SHA256_KEY = "model_sha256"
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, kw_only=True)
class PublishedSource:
    """A published record, its detail log's effective settings, and the model it states."""

    path: Path  # the record's directory
    record: PublishedResult
    settings: Mapping[str, SettingValue]  # LoadGen's effective_* keys, prefix removed
    model_sha256: str | None  # a measurements JSON's model_sha256; None where none states one


def is_published_source(path: Path) -> bool:
    """Whether `path` is a published record (its directory or its published.json)."""
    return is_published(path)


def open_published(path: Path) -> PublishedSource:
    """The record at `path`, read as hostile input; ResultError naming the file otherwise."""
    root = path.parent if path.name == PUBLISHED_FILE and not path.is_dir() else path
    inside(root, Path(PUBLISHED_FILE), ResultError)  # a link out of the record is refused
    record = load_published(root)
    if record.generation is not None:
        raise ModelError(_generative_refusal(root, record))
    log_path = root / DETAIL_LOG
    if DETAIL_LOG not in record.files:
        raise ResultError(
            f"{root}: the record keeps no copy of LoadGen's {DETAIL_LOG}, whose settings a "
            "reproduction runs with; import the result again with `harness import mlperf`"
        )
    settings = effective_settings(detail_log(root, log_path))
    if not settings:
        raise ResultError(
            f"{log_path}: no effective_* settings logged; not a LoadGen detail log to reproduce"
        )
    scenario = settings.get("scenario")
    if scenario is not None and scenario != record.scenario:
        raise ResultError(
            f"{log_path}: effective_scenario {scenario!r} is not the record's "
            f"{record.scenario!r}; import the result again"
        )
    return PublishedSource(
        path=root, record=record, settings=settings, model_sha256=_stated_sha256(root, record)
    )


def _generative_refusal(root: Path, record: PublishedResult) -> str:
    """Why a published LLM record is not rerun here, and what can be done with it instead."""
    return (
        f"{root}: benchmark {record.benchmark!r} is an LLM (LoadGen model "
        f"{record.model!r}), which is not in the zoo (its generative models: "
        f"{', '.join(sorted(GENERATIVE))}), and --model runs an ONNX classifier, not a "
        "generator: it cannot be rerun here; `harness compare` sets it beside a local "
        "generative run by tokens/s, TTFT and TPOT"
    )


def _stated_sha256(root: Path, record: PublishedResult) -> str | None:
    """The model_sha256 the record's measurements JSON states, checked as 64 hex digits."""
    found: set[str] = set()
    for name in record.files:
        if not name.startswith(MEASUREMENTS_PREFIX):
            continue
        path = root / name
        warnings: list[str] = []
        value = json_fields(root, path, (SHA256_KEY,), warnings).get(SHA256_KEY)
        if warnings:
            raise ResultError(warnings[0])
        if value is None:
            continue
        if not isinstance(value, str) or not _SHA256.fullmatch(value.strip().lower()):
            raise ResultError(
                f"{path}: {SHA256_KEY} {str(value)[:80]!r} is not a sha256 (64 hex digits)"
            )
        found.add(value.strip().lower())
    if len(found) > 1:
        raise ResultError(f"{root}: measurements state {len(found)} model sha256s; which ran?")
    return found.pop() if found else None
