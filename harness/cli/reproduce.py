"""`harness reproduce`: run a recorded run, group, bundle or published result again; a verdict."""

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
    """`harness reproduce SOURCE [--trials N] [--tolerance ...] [--model PATH] [--quick] ...`."""
    parser = verbs.add_parser(
        "reproduce",
        help="run a recorded run, trials group, bundle or published MLPerf result again",
        description="Reruns exactly the recorded job (job.json: scenario, LoadGen settings, "
        "profile, precision) on the model with the recorded sha256, as a new trials group "
        "under --out, and writes the verdict there as reproduction.json. A published MLPerf "
        "result (a record `harness import mlperf` wrote) runs its benchmark here with the "
        "seeds, sample and query counts and durations of its detail log, the expected speed "
        "measured here by the warm-up, and prints published and local side by side; a "
        "verdict only with --same-system (another system is an intended difference).",
        epilog=verdict_code_table(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "source",
        type=Path,
        metavar="SOURCE",
        help="a run directory, a trials group (compared by its median), a bundle, or a "
        "published record (results/published-imports/<record>, from `harness import mlperf`)",
    )
    parser.add_argument(
        "--trials",
        type=int,
        help="trials of the reproduction (default: the recorded group's count, else 3; "
        "a published record: 1)",
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
        "with the recorded sha256); another sha256 runs and is judged NOT COMPARABLE. For a "
        "published record (default: the zoo's model of its benchmark): one whose sha256 is "
        "not the one the record states is refused",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a published record only: shorten the run to the scenario's quick profile "
        "(min duration, query and sample counts; the record's seeds kept); NOT "
        "submission-valid (default: the record's own durations and counts)",
    )
    parser.add_argument(
        "--same-system",
        action="store_true",
        help="a published record only: this is the machine it was published from, so judge "
        "REPRODUCED or NOT REPRODUCED by --tolerance (default: compared, not judged, exit 0)",
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
    from harness.reproduce.published_source import is_published_source

    if is_published_source(args.source):
        return _reproduce_published(args)
    for flag, given in (("--quick", args.quick), ("--same-system", args.same_system)):
        if given:
            raise ConfigError(
                f"{flag}: only for a published record (`harness import mlperf`); "
                f"{args.source} is not one"
            )
    return _reproduce_recorded(args)


def _reproduce_published(args: argparse.Namespace) -> int:
    from harness.reproduce.published_run import PublishedRequest, reproduce_published
    from harness.reproduce.tolerance import parse_tolerance

    tolerance = parse_tolerance(args.tolerance)
    trials = 1 if args.trials is None else args.trials
    if not 1 <= trials <= MAX_TRIALS:
        raise ConfigError(f"--trials: must be 1..{MAX_TRIALS}, got {trials}")
    if args.trust:
        raise ConfigError("--trust: only for a bundle; a published record is not signed")
    request = PublishedRequest(
        source=args.source,
        out=args.out,
        model=args.model,
        quick=args.quick,
        same_system=args.same_system,
        trials=trials,
        tolerance=tolerance,
    )
    outcome = reproduce_published(request, stream=sys.stdout)
    print(printable(outcome.text))
    return outcome.exit_code


def _reproduce_recorded(args: argparse.Namespace) -> int:
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
