"""`harness reproduce`: run a recorded run, trials group or bundle again, and give a verdict."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TypeVar

from harness.cli.measure import add_label_option
from harness.config import MAX_TRIALS
from harness.errors import ConfigError
from harness.records.runlabel import check_label
from harness.reproduce.codes import verdict_code_table
from harness.text import printable

P = TypeVar("P", bound=argparse.ArgumentParser)  # whichever parser class the CLI uses


def add_reproduce_verb(verbs: argparse._SubParsersAction[P]) -> None:
    """`harness reproduce RUN_GROUP_OR_BUNDLE [--trials N] [--tolerance ...] [--model PATH]`."""
    parser = verbs.add_parser(
        "reproduce",
        help="run a recorded run, trials group or bundle again and say whether it reproduced",
        description="Reruns exactly the recorded job (job.json: scenario, LoadGen settings, "
        "profile, precision) on the model with the recorded sha256, as a new trials group "
        "under --out, and writes the verdict there as reproduction.json.",
        epilog=verdict_code_table(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "source",
        type=Path,
        metavar="RUN_GROUP_OR_BUNDLE",
        help="a run directory, a trials group (compared by its median) or a bundle",
    )
    parser.add_argument(
        "--trials",
        type=int,
        help="trials of the reproduction (default: the recorded group's count, else 3)",
    )
    parser.add_argument(
        "--tolerance",
        metavar="KEY=PCT,...",
        help="how far the recorded value may be from the reproduction's median: offline (or "
        "throughput) for Offline and Server samples/s, latency for SingleStream p90 and "
        "MultiStream p99 (default: offline=3%%,latency=5%%)",
    )
    parser.add_argument(
        "--model",
        type=Path,
        help="the model file to run (default: the job's own model, or one in the model cache "
        "with the recorded sha256); another sha256 runs and is judged NOT COMPARABLE",
    )
    parser.add_argument(
        "--trust",
        type=Path,
        action="append",
        default=[],
        metavar="PUBKEY",
        help="with a bundle: a signer's public key to accept (repeat for several). Without "
        "one, a valid signature by any key is accepted, as `harness verify --trust-any` "
        "accepts it, and the verdict names its signer as not checked against a trusted key",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("results/runs"),
        help="where the reproduction's trials group goes (default: results/runs)",
    )
    add_label_option(parser, "the reproduction's")
    parser.set_defaults(func=_reproduce)


def _reproduce(args: argparse.Namespace) -> int:
    from harness.records.layout import REPRODUCTION_FILE
    from harness.reproduce.record import render_reproduction
    from harness.reproduce.rerun import Request, reproduce
    from harness.reproduce.tolerance import parse_tolerance

    tolerance = parse_tolerance(args.tolerance)  # every option checked before anything runs
    check_label(args.label)
    if args.trials is not None and not 1 <= args.trials <= MAX_TRIALS:
        raise ConfigError(f"--trials: must be 1..{MAX_TRIALS}, got {args.trials}")
    request = Request(
        source=args.source,
        out=args.out,
        tolerance=tolerance,
        trials=args.trials,
        model=args.model,
        trusted=tuple(args.trust),
        label=args.label,
    )
    reproduction, group = reproduce(request, stream=sys.stdout)
    print(printable(render_reproduction(reproduction)))
    print(group / REPRODUCTION_FILE)
    return reproduction.exit_code
