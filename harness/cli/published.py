"""The `import` verb: `harness import mlperf PATH [--out DIR]`, published results as records."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TypeVar

from harness.errors import ConfigError

P = TypeVar("P", bound=argparse.ArgumentParser)  # whichever parser class the CLI uses
_VERSION = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}")  # a round: 4.1, 5.0 (ASCII digits only)


def add_import_verb(verbs: argparse._SubParsersAction[P]) -> None:
    """`harness import mlperf PATH [--out DIR] [--mlperf-version X.Y]`."""
    verb = verbs.add_parser("import", help="import published results to compare with your own")
    sources = verb.add_subparsers(dest="source", required=True, metavar="SOURCE")
    mlperf = sources.add_parser(
        "mlperf",
        help="published MLPerf inference results (a results tree, division, org, scenario "
        "or performance/run_1 directory)",
    )
    mlperf.add_argument("path", type=Path, metavar="PATH", help="where the results are")
    mlperf.add_argument(
        "--out",
        type=Path,
        default=Path("results/published-imports"),
        metavar="DIR",
        help="one record directory per result goes here, never overwritten "
        "(default: results/published-imports)",
    )
    mlperf.add_argument(
        "--mlperf-version",
        metavar="X.Y",
        help="the round these results are from, where the tree's name does not say it "
        "(e.g. 4.0: MLPerf's v4.0 tree has no version file)",
    )
    mlperf.set_defaults(func=_import_mlperf)


def _import_mlperf(args: argparse.Namespace) -> int:
    from harness.published.importer import import_mlperf

    version = args.mlperf_version
    if version is not None and not _VERSION.fullmatch(version):
        raise ConfigError(f"--mlperf-version: {version!r} is not a round like 4.1")
    imported = import_mlperf(
        args.path,
        args.out,
        mlperf_version=version,
        on_skip=lambda line: print(f"warning: {line}", file=sys.stderr),
    )
    for line in imported.notes:
        print(f"  note: {line}", file=sys.stderr)
    for path in imported.written:
        print(path)
    skipped = f"; {len(imported.skipped)} skipped" if imported.skipped else ""
    print(f"imported {len(imported.written)} published result(s){skipped}", file=sys.stderr)
    return 0
