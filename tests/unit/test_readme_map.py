"""The README's repository map matches the tree: every entry exists, every module is listed."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def map_entries() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("## Repository", 1)[1].split("```", 2)[1]
    entries, parent = [], ""
    for line in block.splitlines():
        match = re.match(r"^( *)(\S+)", line)
        if not match:
            continue
        indent, name = match.groups()
        if not indent:
            parent = name if name.endswith("/") else ""
            entries.append(name)
        else:
            entries += [parent + part.strip() for part in name.split(",") if part.strip()]
    return entries


def test_every_entry_in_the_map_exists() -> None:
    entries = map_entries()
    assert "harness/cli/" in entries  # the parser reads the nested lines
    for entry in entries:
        glob = entry.replace("<hw>", "*")
        assert list(REPO.glob(glob.rstrip("/"))), f"README map lists {entry}, which is not here"


def test_every_harness_module_and_package_is_in_the_map() -> None:
    listed = set(map_entries())
    for path in sorted((REPO / "harness").iterdir()):
        if path.name.startswith(("_", ".")) or path.suffix not in (".py", ""):
            continue
        name = f"harness/{path.name}" + ("/" if path.is_dir() else "")
        if path.is_dir() and not (path / "__init__.py").is_file():
            continue
        assert name in listed, f"README map does not list {name}"
