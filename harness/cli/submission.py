"""MLPerf submission verbs: `models fetch` (the official model), `submission` (the tree)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TypeVar

from harness.errors import ConfigError, HarnessError
from harness.records.layout import CHECKER_OUTPUT

P = TypeVar("P", bound=argparse.ArgumentParser)  # whichever parser class the CLI uses


def add_submission_verb(verbs: argparse._SubParsersAction[P]) -> None:
    """`harness submission RUN_OR_GROUP… --org --system --division --out [--check]`."""
    sub = verbs.add_parser(
        "submission", help="write MLPerf's v6.1 submission tree from runs; --check runs its checker"
    )
    sub.add_argument(
        "sources",
        type=Path,
        nargs="+",
        metavar="RUN_OR_GROUP",
        help="run directories or trials groups (a group exports its median trial)",
    )
    sub.add_argument("--org", required=True, help="submitter: the tree's <org> directory")
    sub.add_argument("--system", required=True, help="system id: systems/<system>.json")
    sub.add_argument(
        "--division",
        required=True,
        choices=("open", "closed"),
        help="closed: submission-profile runs scored against labels only",
    )
    sub.add_argument(
        "--system-description",
        type=Path,
        metavar="YAML",
        help="system JSON fields the fingerprint cannot know (status, cooling, storage, ...); "
        "start from scenarios/system-description.example.yaml",
    )
    sub.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="a new (or empty) directory for the tree; never overwritten",
    )
    sub.add_argument(
        "--force-quick",
        action="store_true",
        help="open division only: export quick-profile runs, labelled as not submission-valid",
    )
    sub.add_argument("--check", action="store_true", help="run MLPerf's checker on the tree")
    sub.add_argument(
        "--checker",
        type=Path,
        metavar="PATH",
        help="check-submission.sh to run (implies --check; default: "
        "../shared/mlperf-tools/check-submission.sh beside the repository)",
    )
    sub.add_argument(
        "--skip-dataset-size-check",
        action="store_true",
        help="with --check: pass the checker this flag (no 50,000-image ImageNet here)",
    )
    sub.set_defaults(func=_submission)


def add_fetch_action(actions: argparse._SubParsersAction[P]) -> None:
    """`harness models fetch NAME`: download and verify an official model."""
    fetch = actions.add_parser(
        "fetch", help="download an official model (md5-verified, sha256 recorded)"
    )
    fetch.add_argument("name", help="official model name, e.g. resnet50-mlperf")
    fetch.set_defaults(func=_models_fetch)


def _models_fetch(args: argparse.Namespace) -> int:
    from harness.models.registry import OFFICIAL, official_model_path
    from harness.models.validate import file_sha256

    path = official_model_path(args.name)
    entry = OFFICIAL[args.name]
    print(f"{entry.name}: {entry.note}")
    print(f"  md5     {entry.md5} (the published one, verified)")
    print(f"  sha256  {file_sha256(path)} (recorded in {path.with_suffix('.json').name})")
    print(path)
    return 0


def _submission(args: argparse.Namespace) -> int:
    from harness.files import atomic_write_text
    from harness.models.zoo import ZOO
    from harness.submission.checker import find_checker, run_checker
    from harness.submission.export import ExportRequest, export_submission
    from harness.submission.system import load_description

    check = args.check or args.checker is not None
    if args.skip_dataset_size_check and not check:
        raise ConfigError("--skip-dataset-size-check: only with --check")
    checker = find_checker(args.checker) if check else None  # before anything is written
    described = load_description(args.system_description) if args.system_description else {}
    request = ExportRequest(
        sources=tuple(args.sources),
        division=args.division,
        org=args.org,
        system=args.system,
        out=args.out,
        description=described,
        force_quick=args.force_quick,
        real_weights=frozenset(name for name, model in ZOO.items() if not model.synthetic),
    )
    exported = export_submission(request)
    for entry in exported.plan.entries:
        print(f"{entry.benchmark} {entry.scenario}: {entry.run_dir} ({entry.chosen})")
    for note in exported.notes:
        print(f"  note: {note}")
    if exported.unknown:
        print(
            "  note: system fields left 'unknown' (give them in --system-description): "
            + ", ".join(exported.unknown)
        )
    if checker is not None:
        flags = ["--skip-dataset-size-check"] if args.skip_dataset_size_check else []
        outcome = run_checker(checker, exported.root, extra_args=flags)
        print(outcome.output, end="")
        atomic_write_text(exported.root / CHECKER_OUTPUT, outcome.output)
        if not outcome.passed:
            print(exported.root)
            raise HarnessError(
                f"{exported.root}: MLPerf's checker reports {len(outcome.errors)} error line(s), "
                "listed above and in check-submission.txt; the tree is written as it stands"
            )
    print(exported.root)
    return 0
