"""The measuring verbs, run, bench, sweep and compliance, and the requests they build."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from harness.config import (
    MAX_BATCH_SIZE,
    MAX_TRIALS,
    Scenario,
    Suite,
    as_precision,
    as_profile,
    is_suite_file,
    load_scenario,
    load_suite,
)
from harness.errors import INVALID, SUCCESS, ConfigError, HarnessError
from harness.hardware import get_target as hardware_target
from harness.records.job import AUDIT_TESTS, COMPLIANCE_TESTS

# Where `harness bench NAME` looks for NAME.yaml (relative: the checkout, as make runs it).
SUITES_DIR = Path("scenarios")
P = TypeVar("P", bound=argparse.ArgumentParser)  # the CLI's parser class, and its subparsers

if TYPE_CHECKING:
    from harness.execution.campaign import Campaign
    from harness.execution.pipeline import Launcher
    from harness.records.job import ComplianceTest
    from harness.records.request import RunRequest


def _run(args: argparse.Namespace) -> int:
    from harness.execution.campaign import run_trials, trials_count

    _check_trials(args)
    precisions = _precisions(args)
    campaigns = [_campaign(args.scenario, args, args.profile, args.model, p) for p in precisions]
    trials = trials_count(campaigns[0], args.trials)
    _prepare(args)
    said: set[str] = set()  # a warning every run repeats is printed once
    paths = [run_trials(c, trials, stream=sys.stdout, said=said) for c in campaigns]
    for path in paths:
        print(path)
    return max(_group_status(path) for path in paths)


def _bench(args: argparse.Namespace) -> int:
    from harness.execution.campaign import run_trials, trials_count

    _check_trials(args)
    suite, base = _find_suite(args.suite)
    profile = args.profile or suite.profile
    campaigns = [  # every file parses before anything runs
        _campaign(base / name, args, profile, precision=precision)
        for name in suite.scenarios
        for precision in _precisions(args)
    ]
    _prepare(args)
    done: list[Path] = []
    status = 0
    said: set[str] = set()  # a warning every run repeats is printed once
    for campaign in campaigns:
        try:
            # Every run in a fresh process: LoadGen flags a second user.conf read in one
            # process ("Multiple conf files are used") as invalid for submission.
            trials = trials_count(campaign, args.trials)
            done.append(run_trials(campaign, trials, stream=sys.stdout, said=said))
        except HarnessError as exc:
            print(f"error: {campaign.request.scenario.name}: {exc}", file=sys.stderr)
            status = status or exc.exit_code
    for path in done:
        print(path)
        status = status or _group_status(path)
    return status


def _sweep(args: argparse.Namespace) -> int:
    from harness.execution.campaign import run_batch_sweep, trials_count

    _check_trials(args)
    if args.server_rates is not None:
        return _load_sweep(args)
    batches = _batches(args.batches) if args.batches else None
    campaign = _campaign(args.scenario, args, args.profile, model=args.model)
    _prepare(args)
    # run_batch_sweep prints a line per run and per batch, then the sweep's table and verdict
    trials = trials_count(campaign, args.trials)
    sweep = run_batch_sweep(campaign, trials, batches=batches, stream=sys.stdout)
    print(sweep)
    return 0


def _load_sweep(args: argparse.Namespace) -> int:
    from harness.analysis.loadsweep import parse_rates
    from harness.execution.campaign import trials_count
    from harness.execution.loadsweep import run_load_sweep

    try:
        rates = parse_rates(args.server_rates)
    except ValueError as exc:
        raise ConfigError(
            f"--server-rates: {exc}; give increasing queries/s (e.g. 2,4,8) or auto"
        ) from None
    campaign = _campaign(args.scenario, args, args.profile, model=args.model)
    _prepare(args)
    trials = trials_count(campaign, args.trials)
    print(run_load_sweep(campaign, trials, rates=rates, stream=sys.stdout))
    return 0


def _compliance(args: argparse.Namespace) -> int:
    from harness.compliance.verify import render_verdict
    from harness.execution.pipeline import launch_worker, run_compliance
    from harness.records.job import as_compliance_test, request_of_run

    request = request_of_run(args.run_dir)
    args.hw, args.out = request.hw, args.run_dir  # a container sees the run's target and directory
    launch = _launcher(args) or launch_worker
    _prepare(args)
    if args.test == "SWAP":
        return _swap(request, args.run_dir, launch)
    test = as_compliance_test(args.test)
    verdict = run_compliance(request, args.run_dir, test, launch=launch, progress=sys.stderr)
    print(render_verdict(verdict))
    return SUCCESS.code if verdict.passed else INVALID.code


def _swap(request: RunRequest, run_dir: Path, launch: Launcher) -> int:
    """The harness's SWAP caching audit: exits 1 when it fails or cannot measure."""
    from harness.compliance.swap import render_swap
    from harness.execution.pipeline import run_swap

    verdict = run_swap(request, run_dir, launch=launch, progress=sys.stderr)
    print(render_swap(verdict))
    return SUCCESS.code if verdict.passed else INVALID.code


def add_compliance_verb(verbs: argparse._SubParsersAction[P]) -> None:
    """`harness compliance TEST01|TEST04|SWAP RUN`."""
    parser = verbs.add_parser(
        "compliance",
        help="run MLPerf's compliance TEST01 or TEST04, or the harness's SWAP caching audit, "
        "for a finished run, and verify it",
        description="Runs the test in RUN/compliance/TEST0x/ (its worker's working directory, "
        "where its audit.config is written) and writes verify_performance.txt, "
        "verify_accuracy.txt (TEST01) and verdict.json there; exits 1 on TEST FAIL. SWAP runs "
        "the performance test twice in one worker, the data behind each sample index swapped "
        "between the loads, and checks every response answers its current data (a cache "
        "answers the old): verify_swap.txt.",
    )
    parser.add_argument(
        "test", choices=(*COMPLIANCE_TESTS, *AUDIT_TESTS), help="the compliance test or audit"
    )
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="a finished run directory")
    parser.add_argument(
        "--runner",
        choices=("local", "docker"),
        default="local",
        help="where the worker runs: local (this install) or docker (the run's HW image)",
    )
    parser.add_argument("--image", help="with --runner docker: run this image (tag or ID)")
    parser.add_argument("--cache", type=Path, help="with --runner docker: the model cache")
    parser.set_defaults(func=_compliance, launcher=None)


def add_label_option(parser: argparse.ArgumentParser, whose: str = "each run's") -> None:
    """--label TEXT: the name readers see instead of the run directory's."""
    from harness.records.runlabel import LABEL_GRAMMAR

    parser.add_argument(
        "--label",
        metavar="TEXT",
        help=f"name {whose} results in every table, legend and page (default: the run "
        f"directory's name); {LABEL_GRAMMAR}, e.g. --label 'baseline, 2 cores'",
    )


def _check_trials(args: argparse.Namespace) -> None:
    """--trials within the range a scenario's `trials` allows, checked before anything runs."""
    if args.trials is not None and not 1 <= args.trials <= MAX_TRIALS:
        raise ConfigError(f"--trials: must be 1..{MAX_TRIALS}, got {args.trials}")


def _batches(text: str) -> list[int]:
    """--batches: batch sizes in increasing order, each once (the sweep looks for a plateau)."""
    batches: list[int] = []
    for item in text.split(","):
        try:
            batch = int(item.strip())
        except ValueError:
            raise ConfigError(f"--batches: {item.strip()!r} is not a whole number") from None
        if not 1 <= batch <= MAX_BATCH_SIZE:
            raise ConfigError(f"--batches: must be 1..{MAX_BATCH_SIZE}, got {batch}")
        if batches and batch <= batches[-1]:
            raise ConfigError(
                f"--batches: give batch sizes in increasing order, each once, got {text!r}"
            )
        batches.append(batch)
    return batches


def _campaign(
    path: Path,
    args: argparse.Namespace,
    profile: str,
    model: Path | None = None,
    precision: str | None = None,
) -> Campaign:
    """The request the command line makes of one scenario file, and where its runs go."""
    from harness.execution.campaign import Campaign  # imports the analysis stack: when running
    from harness.records.request import RunRequest

    hardware_target(args.hw)  # an unknown --hw is one line here, not a failed worker
    if is_suite_file(path):
        raise ConfigError(f"{path}: is a suite, not a scenario; use `harness bench {path}`")
    scenario = load_scenario(path)
    from harness.telemetry.external import check_meter_opt_in

    check_meter_opt_in(scenario.telemetry, os.environ)  # before any model work
    if precision is not None:
        scenario = _with_precision(scenario, precision, path)
    if getattr(args, "batch_size", None) is not None:
        scenario = _with_batch(scenario, args.batch_size, path)
    if getattr(args, "providers", None):
        names = tuple(p.strip() for p in str(args.providers).split(",") if p.strip())
        _check_chain(args.hw, names, "--providers")
        runtime = dataclasses.replace(scenario.runtime, providers=names)
        scenario = dataclasses.replace(scenario, runtime=runtime)
    elif scenario.runtime.providers:  # here, not first in a worker that then fails
        _check_chain(args.hw, scenario.runtime.providers, str(path))
    request = RunRequest(
        scenario=scenario,
        scenario_path=path,
        profile=as_profile(profile),
        hw=args.hw,
        model_override=model,
        strict=args.strict,
        label=getattr(args, "label", None),
    )
    return Campaign(
        request=request,
        out_root=args.out,
        launch=_launcher(args),
        compliance=_compliance_tests(request),
    )


def _check_chain(hw: str, names: tuple[str, ...], where: str) -> None:
    """`names` must be a part of HW's provider chain, in its order; the error names `where`."""
    from harness.runtime.targets import get_target, selected_providers

    try:
        selected_providers(get_target(hw), names)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _compliance_tests(request: RunRequest) -> tuple[ComplianceTest, ...]:
    """The submission profile runs the compliance tests MLPerf requires of the model."""
    from harness.compliance.rules import required_tests

    if request.profile != "submission":
        return ()
    return required_tests(request.loadgen_key)


def _launcher(args: argparse.Namespace) -> Launcher | None:
    """None: workers run in this install. docker: one launcher, so one image, for the command."""
    if args.runner == "local":
        for option in ("image", "cache"):
            if getattr(args, option) is not None:
                raise ConfigError(f"--{option}: only with --runner docker")
        return None
    if args.launcher is None:
        from harness.execution.containers import DockerLauncher, DockerRun

        run = DockerRun(hw=args.hw, results=args.out, image=args.image, cache=args.cache)
        args.launcher = DockerLauncher(run)
    launcher: Launcher = args.launcher
    return launcher


def _prepare(args: argparse.Namespace) -> None:
    """With --runner docker: connect, find or build the image, once, after every file parsed."""
    if args.launcher is not None:
        args.launcher.prepare()


def _precisions(args: argparse.Namespace) -> list[str | None]:
    if not getattr(args, "precision", None):
        return [None]
    return [p.strip() for p in str(args.precision).split(",") if p.strip()]


def _with_precision(scenario: Scenario, precision: str, path: Path) -> Scenario:
    model = dataclasses.replace(scenario.model, precision=as_precision(precision, "--precision"))
    return dataclasses.replace(scenario, model=model, name=f"{scenario.name}-{precision}")


def _with_batch(scenario: Scenario, batch_size: int, path: Path) -> Scenario:
    try:
        return dataclasses.replace(scenario, batch_size=batch_size)
    except ValueError as exc:
        raise ConfigError(f"{path}: --batch-size: {exc}") from None


def _group_status(path: Path) -> int:
    """0 when every run under `path` is VALID, not IMPLAUSIBLE and passed its tests, else 1."""
    from harness.compliance.verify import compliance_passed
    from harness.records.layout import RESULT_FILE
    from harness.results.runfile import load_result

    results = [path] if (path / RESULT_FILE).is_file() else []
    results += sorted(p.parent for p in path.rglob(f"trial-*/{RESULT_FILE}"))
    loaded = [(run, load_result(run)) for run in results]
    valid = [
        r.outcome.valid and r.plausibility.verdict != "IMPLAUSIBLE" and compliance_passed(run)
        for run, r in loaded
    ]
    return 0 if valid and all(valid) else 1


def _find_suite(name: str) -> tuple[Suite, Path]:
    path = Path(name)
    if not path.suffix:
        path = SUITES_DIR / f"{name}.yaml"
        if not path.is_file():
            raise ConfigError(_unknown_suite(name))
    if path.is_file() and not is_suite_file(path):
        raise ConfigError(f"{path}: is a scenario, not a suite; use `harness run {path}`")
    return load_suite(path), path.parent


def suite_names(directory: Path | None = None) -> list[str]:
    """The suites `harness bench NAME` finds: the suite files in scenarios/, by name."""
    directory = directory or SUITES_DIR
    if not directory.is_dir():
        return []
    files = sorted(directory.glob("*.yaml"))
    return [f.stem for f in files if _is_suite_quietly(f)]


def _is_suite_quietly(path: Path) -> bool:
    try:
        return is_suite_file(path)
    except ConfigError:
        return False  # a broken file is not offered; naming it runs it and says why


def _unknown_suite(name: str) -> str:
    """One line: the suite is not there, the closest names, and what there is."""
    names = suite_names()
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    listed = ", ".join(names) if names else f"none in {SUITES_DIR}/"
    return (
        f"{SUITES_DIR / (name + '.yaml')}: no such file; {hint}"
        f"suites: {listed} (or pass a suite YAML file)"
    )
