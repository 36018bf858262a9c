"""Links in published trees: followed inside the tree, refused out of it, never for directories."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.errors import ResultError
from harness.published.importer import import_mlperf
from harness.published.read import read_result
from harness.published.record import load_published
from harness.published.store import store
from harness.published.tree import find_locations
from tests.unit.test_published_import import V41, fixed_now

UNTETHER = "closed/UntetherAI"
SS = f"{UNTETHER}/results/h13_u2_preview/resnet50/singlestream"
OFFLINE = f"{UNTETHER}/results/r760_u6_slim/resnet50/offline"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(V41 / "UntetherAI", root / "closed" / "UntetherAI")
    return root


def test_a_file_linked_inside_the_tree_is_read_and_copied_as_a_file(tree: Path) -> None:
    accuracy = tree / SS / "accuracy" / "accuracy.txt"
    accuracy.parent.mkdir()
    accuracy.symlink_to(tree / OFFLINE / "accuracy" / "accuracy.txt")
    imported = import_mlperf(tree / SS, tree.parent / "out", now=fixed_now)
    (written,) = imported.written
    record = load_published(written)
    assert record.accuracy is not None and record.accuracy.startswith("accuracy=")
    copy = written / "accuracy" / "accuracy.txt"
    assert not copy.is_symlink() and copy.read_bytes() == accuracy.read_bytes()


def test_a_directory_link_is_never_followed_even_inside_the_tree(tree: Path) -> None:
    (tree / "closed" / "Mirror").symlink_to(tree / "closed" / "UntetherAI")
    found, problems = find_locations(tree)
    assert len(found) == 2  # UntetherAI's two results, once each
    (line,) = problems
    assert line.startswith(f"{tree / 'closed' / 'Mirror'}: a link to a directory")
    assert "not followed" in line


def test_a_link_loop_in_the_tree_is_no_hang(tree: Path) -> None:
    (tree / "closed" / "loop").symlink_to("loop")  # no directory: walked past as a file
    found, problems = find_locations(tree)
    assert len(found) == 2 and problems == []


def test_a_file_swapped_for_a_link_out_after_it_was_read_is_not_copied(tree: Path) -> None:
    (location,), _ = find_locations(tree / SS)
    reading = read_result(location, mlperf_version=None, imported_utc="2026-12-01T06:00:00")
    summary = location.run_dir / "mlperf_log_summary.txt"
    (tree.parent / "secret.txt").write_text("secret\n")
    summary.unlink()
    summary.symlink_to(tree.parent / "secret.txt")
    out = tree.parent / "out"
    out.mkdir()
    with pytest.raises(ResultError, match=r"mlperf_log_summary\.txt: leads out of"):
        store(reading, out)
    assert list(out.iterdir()) == []  # no record, no temporary directory
