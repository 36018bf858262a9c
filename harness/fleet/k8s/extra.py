"""The `fleet` extra's packages, imported only when used, and their messages cut to one line."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Final

from harness.errors import DependencyError

MAX_MESSAGE_CHARS: Final = 300


def require(module: str, distribution: str | None = None) -> ModuleType:
    """Import an optional dependency of fleet runs on Kubernetes, or raise DependencyError."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise DependencyError(
            f"the `{distribution or module}` package is missing; install it with "
            "`.venv/bin/pip install -e '.[fleet]'`"
        ) from None


def one_line(text: str) -> str:
    """`text` on one line, cut to MAX_MESSAGE_CHARS."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_MESSAGE_CHARS else flat[: MAX_MESSAGE_CHARS - 3] + "..."
