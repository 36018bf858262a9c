"""The manifest's record of each run (model, harness, commit, image, precision) against its result.

`harness bundle` writes each run's provenance into MANIFEST.json from its result.json; a
manifest whose records no longer match the results beside them was made, or edited, apart
from them. The commit lines verify prints come from here too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from harness.bundle.crosscheck import Contents, Passed
from harness.bundle.manifest import run_record
from harness.strictjson import Json

CHECK = "provenance"


@dataclass(frozen=True, kw_only=True)
class Commit:
    """Where a harness came from: its version, commit and tree (None: not recorded)."""

    what: str  # "made by" (the bundling harness) or a run's path
    harness_version: str | None
    git_commit: str | None
    git_dirty: bool | None

    @property
    def tree(self) -> str:
        """`clean tree`, `dirty tree` or `unknown tree`."""
        return {True: "dirty tree", False: "clean tree", None: "unknown tree"}[self.git_dirty]


def check_provenance(contents: Contents) -> Passed:
    """Each result.json has one run record in MANIFEST.json, equal to the one it gives."""
    records = _records(contents)
    for member in contents.results():
        run = str(PurePosixPath(member).parent)
        recorded = records.pop(run, None)
        if recorded is None:
            raise contents.failed(CHECK, f"{member} has no record in MANIFEST.json's runs")
        expected = run_record(run, contents.result_data(member, CHECK))
        for key, value in expected.items():
            if recorded.get(key) != value:
                raise contents.failed(
                    CHECK,
                    f"MANIFEST.json's run {run} has {key} {_short(recorded.get(key))} but "
                    f"{member} has {_short(value)}",
                )
    if records:
        extra = sorted(records)[0]
        raise contents.failed(CHECK, f"MANIFEST.json records run {extra}, which holds no result")
    runs = contents.manifest.data.get("runs")
    count = len(runs) if isinstance(runs, list) else 0
    return Passed(
        check=CHECK,
        detail=f"MANIFEST.json's {count} run records (model sha256, harness version, commit, "
        "dirty tree, image, precision) equal their result.json",
    )


def commits(manifest: Mapping[str, Json]) -> list[Commit]:
    """The bundling harness's commit, then each run's, as MANIFEST.json records them."""
    made_by = manifest.get("made_by")
    found = [_commit("made by", made_by if isinstance(made_by, dict) else {})]
    runs = manifest.get("runs")
    for run in runs if isinstance(runs, list) else []:
        if isinstance(run, dict):
            found.append(_commit(str(run.get("path")), run))
    return found


def _commit(what: str, record: Mapping[str, Json]) -> Commit:
    version, commit, dirty = (
        record.get("harness_version"),
        record.get("git_commit"),
        record.get("git_dirty"),
    )
    return Commit(
        what=what,
        harness_version=version if isinstance(version, str) else None,
        git_commit=commit if isinstance(commit, str) else None,
        git_dirty=dirty if isinstance(dirty, bool) else None,
    )


def _records(contents: Contents) -> dict[str, Mapping[str, Json]]:
    """MANIFEST.json's run records by path; a path recorded twice is a failed check."""
    found: dict[str, Mapping[str, Json]] = {}
    runs = contents.manifest.data.get("runs")
    for index, run in enumerate(runs if isinstance(runs, list) else []):
        path = run.get("path") if isinstance(run, dict) else None
        if not isinstance(run, dict) or not isinstance(path, str):
            raise contents.failed(CHECK, f"MANIFEST.json's runs[{index}] has no path")
        if path in found:
            raise contents.failed(CHECK, f"MANIFEST.json records run {path:.80} twice")
        found[path] = run
    return found


def _short(value: object) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."
