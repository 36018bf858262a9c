"""What verify's cross-checks share: the signed files unpacked, a check passed, a check failed.

A signature proves only that its signer vouches for these bytes. The cross-checks read the
signed files against each other (a result against its LoadGen log, a group's summary against
its trials, the manifest's provenance against each result), so that a key holder's edit
shows wherever the files can check it, even in a bundle signed again after the edit.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from harness.bundle.manifest import Manifest
from harness.errors import CrossCheckError, ResultError
from harness.records.layout import DETAIL_LOG, RESULT_FILE
from harness.strictjson import JsonObject, read_json

PROVES = (
    "this signer vouches for these bytes; not that they were measured, nor that a key "
    "holder could not edit them"
)
_VOUCHED = "its signer vouched for files that contradict each other: do not trust its results"


@dataclass(frozen=True, kw_only=True)
class Passed:
    """A cross-check that passed: its name and what it checked, in words."""

    check: str
    detail: str

    @property
    def line(self) -> str:
        """`check trials passed: 1 trials.json agrees with its 2 trials' results`."""
        return f"check {self.check} passed: {self.detail}"


@dataclass(frozen=True, kw_only=True)
class Contents:
    """A bundle unpacked under `root` whose files all match their signed sha256."""

    bundle: Path
    root: Path
    manifest: Manifest

    def path(self, member: str) -> Path:
        """Where a member (a path from the bundle's top) lies on disk."""
        return self.root.joinpath(*PurePosixPath(member).parts)

    def has(self, member: str) -> bool:
        """Whether the signed manifest lists `member`."""
        return member in self.manifest.files

    def named(self, name: str) -> Iterator[str]:
        """Every listed member called `name`, in path order."""
        return (m for m in sorted(self.manifest.files) if PurePosixPath(m).name == name)

    def results(self) -> Iterator[str]:
        """Every result.json the bundle holds: a run's, in a run, trials group or sweep."""
        return self.named(RESULT_FILE)

    def result_data(self, member: str, check: str) -> JsonObject:
        """A result.json's object (bounded, strict JSON); a failed check if it is not one."""
        try:
            data = read_json(self.path(member), ResultError)
        except ResultError as exc:
            raise self.failed(check, self.shown(str(exc))) from None
        if not isinstance(data, dict):
            raise self.failed(check, f"{member} is not a JSON object")
        return data

    def shown(self, text: str) -> str:
        """A message about unpacked files, with their paths from the bundle's top."""
        return text.replace(f"{self.root}{os.sep}", "")

    def failed(self, check: str, problem: str) -> CrossCheckError:
        """The one-line refusal of a named check."""
        return CrossCheckError(f"{self.bundle}: check {check} failed: {problem}; {_VOUCHED}")


def beside(member: str, name: str) -> str:
    """The member called `name` in the same directory as `member`."""
    return str(PurePosixPath(member).with_name(name))


def check_detail_logs(contents: Contents) -> Passed:
    """Every result.json has LoadGen's detail log beside it: else its numbers have no source."""
    count = 0
    for member in contents.results():
        log = beside(member, DETAIL_LOG)
        if not contents.has(log):
            raise contents.failed(
                "detail-log",
                f"{member} is in MANIFEST.json but {log} is not; a result without the LoadGen "
                "log it was read from cannot be checked",
            )
        count += 1
    return Passed(check="detail-log", detail=f"{count} result.json, each with its {DETAIL_LOG}")
