"""Where the harness keeps what it can rebuild: the cache root, the same in and out of Docker."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "BEYOND_TOPS_CACHE"


def cache_root() -> Path:
    """The harness's cache: models, converted models, references, engines.

    BEYOND_TOPS_CACHE, else ~/.cache/beyond-tops; an empty value counts as unset. Containers
    get the host's root mounted and this variable pointing at it (harness.execution.containers).
    """
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "beyond-tops")
