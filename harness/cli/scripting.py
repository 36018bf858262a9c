"""`--json`, `--csv` and `--fail-if-slower` of show and compare: output for scripts.

stdout carries the document or the rows alone; whatever else the verb says (a bundle's
signer, the files --out wrote, the gate's line) goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.errors import ConfigError

if TYPE_CHECKING:
    from harness.analysis.compare import Comparison
    from harness.records.regression import Regression
    from harness.records.scripting import ShowEntry

SCHEMA_NOTE = "versioned: harness/schemas/{}.schema.json"


def add_output_options(parser: argparse.ArgumentParser, schema: str) -> None:
    """--json and --csv, one or the other."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--json",
        action="store_true",
        help=f"print one JSON document instead of text ({SCHEMA_NOTE.format(schema)})",
    )
    group.add_argument(
        "--csv",
        action="store_true",
        help="print CSV instead of text: a header row, then one row per run (or side) and metric",
    )


def add_gate_option(parser: argparse.ArgumentParser) -> None:
    """--fail-if-slower THRESHOLD on compare."""
    from harness.errors import SLOWER

    parser.add_argument(
        "--fail-if-slower",
        metavar="THRESHOLD",
        help="with BASE NEW: exit "
        f"{SLOWER.code} when NEW's headline metric is worse than BASE's by more than "
        "THRESHOLD (5%% or 0.05) and beyond the noise: with trials on both sides, the whole "
        "95%% interval of the ratio must lie past it; with one run a side, the threshold "
        "alone decides (default: no gate)",
    )


def machine_output(args: argparse.Namespace) -> bool:
    """Whether stdout is for a script (--json or --csv)."""
    return bool(getattr(args, "json", False) or getattr(args, "csv", False))


def emit_show(entries: Sequence[ShowEntry], args: argparse.Namespace) -> None:
    """`show --json` or `--csv` of the entries, on stdout."""
    from harness.report.csvtext import csv_text
    from harness.report.scripted import SHOW_COLUMNS, show_document, show_rows

    document = show_document(entries)
    if args.json:
        _print_json(document)
    else:
        sys.stdout.write(csv_text(SHOW_COLUMNS, show_rows(document)))


def emit_compare(comparison: Comparison, gate: Regression | None, args: argparse.Namespace) -> None:
    """`compare --json` or `--csv`, on stdout."""
    from harness.report.csvtext import csv_text
    from harness.report.scripted_compare import COMPARE_COLUMNS, compare_document, compare_rows

    document = compare_document(comparison, gate)
    if args.json:
        _print_json(document)
    else:
        sys.stdout.write(csv_text(COMPARE_COLUMNS, compare_rows(document)))


def gate_threshold(args: argparse.Namespace) -> float | None:
    """--fail-if-slower's fraction, checked before anything is read; None without it."""
    from harness.analysis.regression import parse_threshold

    if args.fail_if_slower is None:
        return None
    threshold = parse_threshold(args.fail_if_slower)
    if len(args.dirs) != 2:
        raise ConfigError(
            f"--fail-if-slower: give exactly two results, BASE then NEW (got {len(args.dirs)})"
        )
    return threshold


def _print_json(document: object) -> None:
    from harness.records.codec import to_data

    # ensure_ascii: control and bidi characters of foreign labels arrive as \\u escapes
    sys.stdout.write(json.dumps(to_data(document), indent=2, allow_nan=False) + "\n")
