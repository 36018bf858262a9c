"""A directory from a foreign tree checked before it is read: no way out, nothing special.

Grammar (issue #23): under the directory, every symbolic link resolves inside `root`, and
every entry is a directory, a regular file or such a link (no FIFO, socket or device, which
would block or never end a read). At most MAX_ENTRIES entries are looked at.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from harness.errors import ResultError
from harness.foreign import inside

MAX_ENTRIES = 100_000  # a run directory holds tens of files; a trials group, a few hundred


def check_tree(directory: Path, root: Path) -> None:
    """Raise ResultError naming the first entry under `directory` that leaves `root`."""
    seen = 0
    for top, dirs, files in os.walk(directory):  # never follows a linked directory
        for name in [*dirs, *files]:
            seen += 1
            if seen > MAX_ENTRIES:
                raise ResultError(f"{directory}: more than {MAX_ENTRIES:,} entries; not a run")
            _check_entry(Path(top) / name, root)


def _check_entry(path: Path, root: Path) -> None:
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        inside(root, path, ResultError)
        mode = os.stat(path).st_mode
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise ResultError(f"{path}: neither a file nor a directory; a run holds only those")
