"""Command-line interface: parsing and printing only; every HarnessError is caught here, once."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness import __version__
from harness.config import ProfileName, Scenario, Suite, is_suite_file, load_scenario, load_suite
from harness.errors import ConfigError, HarnessError, exit_code_table, run_reporting_errors
from harness.images import HW_TARGETS
from harness.report.summary import render_summary

if TYPE_CHECKING:
    from harness.campaign import Job
    from harness.pipeline import Launcher

EXIT_CODES = exit_code_table()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `harness` console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    return run_reporting_errors(lambda: int(args.func(args)))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="beyond-tops: MLPerf LoadGen benchmarks of ONNX models on real hardware.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"beyond-tops {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    models = verbs.add_parser("models", help="list or build the model zoo")
    models_verbs = models.add_subparsers(dest="action", required=True, metavar="ACTION")
    models_verbs.add_parser("list", help="list zoo and official models").set_defaults(
        func=_models_list
    )
    build = models_verbs.add_parser("build", help="generate zoo models into the cache")
    build.add_argument("names", nargs="*", help="zoo model names (default: those the suite needs)")
    build.add_argument("--suite", default="quick", help="suite whose models to build")
    build.set_defaults(func=_models_build)
    _image_verbs(verbs)

    run = verbs.add_parser("run", help="run one scenario")
    run.add_argument("scenario", type=Path, help="scenario YAML file")
    run.add_argument(
        "--model", type=Path, help="run this ONNX file instead of the scenario's model"
    )
    run.add_argument("--batch-size", type=int, help="override the scenario's batch size")
    _common(run, profile_default="quick")
    run.set_defaults(func=_run)

    bench = verbs.add_parser("bench", help="run a suite (what `make bench` calls)")
    bench.add_argument("suite", nargs="?", default="quick", help="suite name or YAML file")
    _common(bench, profile_default=None)
    bench.set_defaults(func=_bench)

    fingerprint = verbs.add_parser(
        "fingerprint", help="print this machine's environment fingerprint"
    )
    fingerprint.add_argument("--hw", default="cpu", help="hardware target whose GPUs to include")
    fingerprint.add_argument("--json", action="store_true", help="print JSON instead of text")
    fingerprint.set_defaults(func=_fingerprint)

    doctor = verbs.add_parser("doctor", help="list what makes this machine unfit to benchmark")
    doctor.add_argument("--hw", default="cpu", help="hardware target to check")
    doctor.add_argument("--strict", action="store_true", help="exit non-zero on any warning")
    doctor.set_defaults(func=_doctor)

    sweep = verbs.add_parser("sweep", help="Offline throughput against batch size, to saturation")
    sweep.add_argument("scenario", type=Path, help="an Offline scenario YAML file")
    sweep.add_argument(
        "--model", type=Path, help="run this ONNX file instead of the scenario's model"
    )
    sweep.add_argument("--batches", help="comma-separated batch sizes (default 1,2,4,... to 1024)")
    _common(sweep, profile_default="quick")
    sweep.set_defaults(func=_sweep)

    report = verbs.add_parser("report", help="Markdown + self-contained HTML report with plots")
    report.add_argument(
        "dirs", type=Path, nargs="+", metavar="DIR", help="run, trials or sweep dirs"
    )
    report.add_argument("--out", type=Path, help="report directory (default: <first DIR>/report)")
    report.set_defaults(func=_report)

    compare = verbs.add_parser("compare", help="side-by-side table with significance")
    compare.add_argument("dirs", type=Path, nargs="+", metavar="DIR", help="two or more results")
    compare.add_argument("--out", type=Path, help="also write compare.md into this directory")
    compare.set_defaults(func=_compare)

    show = verbs.add_parser("show", help="print a run directory's result as a table")
    show.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR")
    show.set_defaults(func=_show)
    return parser


def _image_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    image = verbs.add_parser("image", help="build or find HW's Docker image (`make image`)")
    actions = image.add_subparsers(dest="action", required=True, metavar="ACTION")
    build = actions.add_parser("build", help="build docker/<hw> from build/wheels/<hw>, offline")
    build.add_argument("--hw", choices=HW_TARGETS, default="cpu")
    build.add_argument("--base-image", help="override the Dockerfile's pinned BASE_IMAGE")
    build.add_argument("--tag", help="image tag (default: beyond-tops/<hw>:<version>-<commit>)")
    build.set_defaults(func=_image_build)
    ensure = actions.add_parser("ensure", help="print this commit's image, building it if missing")
    ensure.add_argument("--hw", choices=HW_TARGETS, default="cpu")
    ensure.set_defaults(func=_image_ensure)
    gpus = actions.add_parser(
        "gpus", help="check that Docker gives containers the GPUs; print the `docker run` flags"
    )
    gpus.add_argument("--image", help="image to probe with (default: this commit's nvidia image)")
    gpus.set_defaults(func=_image_gpus)
    digest = actions.add_parser("source-digest", help="sha256 of the harness wheel's sources")
    digest.set_defaults(func=_image_source_digest)


def _common(parser: argparse.ArgumentParser, *, profile_default: str | None) -> None:
    parser.add_argument(
        "--profile",
        choices=("quick", "submission"),
        default=profile_default,
        help="quick (short, development) or submission (MLPerf rules)",
    )
    parser.add_argument("--hw", default="cpu", help="hardware target (default: cpu)")
    parser.add_argument(
        "--precision",
        help="run at these precisions instead of the scenario's, e.g. fp32,int8 (fp16, bf16)",
    )
    parser.add_argument(
        "--providers",
        help="run on this part of the target's provider chain, in its order, e.g. "
        "CUDAExecutionProvider (CUDA without TensorRT); default: the whole chain",
    )
    parser.add_argument(
        "--trials",
        type=int,
        help="runs per configuration (default: scenario's trials, else 3 quick / 5 submission)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="turn preflight warnings (governor, load, swap, throttling, ...) into errors",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("results/runs"),
        help="directory for run directories (default: results/runs)",
    )
    parser.add_argument(
        "--runner",
        choices=("local", "docker"),
        default="local",
        help="where each worker runs: local (this install) or docker (HW's image, built if "
        "missing; --out is mounted at its own path)",
    )
    parser.add_argument(
        "--image", help="with --runner docker: run this image (tag or ID) instead of this commit's"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        help="with --runner docker: the host's model and engine cache, mounted at /cache "
        "(default: BEYOND_TOPS_CACHE, else ~/.cache/beyond-tops)",
    )
    parser.set_defaults(launcher=None)


def _models_list(args: argparse.Namespace) -> int:
    from harness.models.registry import OFFICIAL
    from harness.models.zoo import ZOO

    for name, entry in sorted(ZOO.items()):
        print(f"{name:<16} generated  {entry.description}")
    for name, official in sorted(OFFICIAL.items()):
        print(f"{name:<16} download   {official.note} ({official.url})")
    return 0


def _models_build(args: argparse.Namespace) -> int:
    from harness.models.registry import zoo_model_path

    names = list(args.names)
    if not names:
        suite, base = _find_suite(args.suite)
        scenarios = [load_scenario(base / s) for s in suite.scenarios]
        names = sorted({s.model.zoo for s in scenarios if s.model.zoo is not None})
    for name in names:
        print(f"{name:<16} {zoo_model_path(name)}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from harness.campaign import run_trials, trials_count

    precisions = _precisions(args)
    jobs = [_job(args.scenario, args, args.profile, args.model, p) for p in precisions]
    trials = trials_count(jobs[0], args.trials)
    _prepare(args)
    paths = [run_trials(job, trials, stream=sys.stdout) for job in jobs]
    for path in paths:
        print(path)
    return max(_group_status(path) for path in paths)


def _bench(args: argparse.Namespace) -> int:
    from harness.campaign import run_trials, trials_count

    suite, base = _find_suite(args.suite)
    profile = args.profile or suite.profile
    jobs = [  # every file parses before anything runs
        _job(base / name, args, profile, precision=precision)
        for name in suite.scenarios
        for precision in _precisions(args)
    ]
    _prepare(args)
    done: list[Path] = []
    status = 0
    for job in jobs:
        try:
            # Every run in a fresh process: LoadGen flags a second user.conf read in one
            # process ("Multiple conf files are used") as invalid for submission.
            done.append(run_trials(job, trials_count(job, args.trials), stream=sys.stdout))
        except HarnessError as exc:
            print(f"error: {job.scenario.name}: {exc}", file=sys.stderr)
            status = status or exc.exit_code
    for path in done:
        print(path)
        status = status or _group_status(path)
    return status


def _sweep(args: argparse.Namespace) -> int:
    from harness.campaign import run_batch_sweep, trials_count

    job = _job(args.scenario, args, args.profile, model=args.model)
    batches = [int(b) for b in args.batches.split(",")] if args.batches else None
    _prepare(args)
    sweep = run_batch_sweep(job, trials_count(job, args.trials), batches=batches, stream=sys.stdout)
    data = json.loads((sweep / "sweep.json").read_text())
    print(
        f"sweep: saturation at batch {data['saturation_batch']}, best at batch "
        f"{data['best_batch']}, stopped: {data['stopped']}"
    )
    print(sweep)
    return 0


def _job(
    path: Path,
    args: argparse.Namespace,
    profile: str,
    model: Path | None = None,
    precision: str | None = None,
) -> Job:
    from harness.campaign import Job  # imports the analysis stack; only when running
    from harness.pipeline import RunSpec

    scenario = load_scenario(path)
    if precision is not None:
        scenario = _with_precision(scenario, precision, path)
    if getattr(args, "batch_size", None) is not None:
        scenario = _with_batch(scenario, args.batch_size, path)
    if getattr(args, "providers", None):
        from harness.runtime.targets import get_target, selected_providers

        names = tuple(p.strip() for p in str(args.providers).split(",") if p.strip())
        try:
            selected_providers(get_target(args.hw), names)
        except ConfigError as exc:
            raise ConfigError(f"--providers: {exc}") from None
        runtime = dataclasses.replace(scenario.runtime, providers=names)
        scenario = dataclasses.replace(scenario, runtime=runtime)
    spec = RunSpec(
        scenario=scenario,
        scenario_path=path,
        profile=_profile(profile),
        hw=args.hw,
        model_override=model,
        strict=args.strict,
    )
    return Job(spec=spec, out_root=args.out, launch=_launcher(args))


def _launcher(args: argparse.Namespace) -> Launcher | None:
    """None: workers run in this install. docker: one launcher, so one image, for the command."""
    if args.runner == "local":
        for option in ("image", "cache"):
            if getattr(args, option) is not None:
                raise ConfigError(f"--{option}: only with --runner docker")
        return None
    if args.launcher is None:
        from harness.containers import DockerLauncher, DockerRun

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
    if precision not in ("fp32", "fp16", "bf16", "int8"):
        raise ConfigError(
            f"--precision: {precision!r} is not allowed (allowed: fp32, fp16, bf16, int8)"
        )
    model = dataclasses.replace(scenario.model, precision=precision)  # type: ignore[arg-type]
    return dataclasses.replace(scenario, model=model, name=f"{scenario.name}-{precision}")


def _with_batch(scenario: Scenario, batch_size: int, path: Path) -> Scenario:
    try:
        return dataclasses.replace(scenario, batch_size=batch_size)
    except ValueError as exc:
        raise ConfigError(f"{path}: --batch-size: {exc}") from None


def _group_status(path: Path) -> int:
    """0 when every run under `path` is LoadGen-VALID, else 1."""
    results = [path / "result.json"] if (path / "result.json").is_file() else []
    results += sorted(path.rglob("trial-*/result.json"))
    valid = [json.loads(p.read_text()).get("valid") is True for p in results]
    return 0 if valid and all(valid) else 1


def _profile(value: str) -> ProfileName:
    if value == "quick":
        return "quick"
    if value == "submission":
        return "submission"
    raise ConfigError(f"profile: {value!r} is not allowed (allowed: quick, submission)")


def _image_build(args: argparse.Namespace) -> int:
    from harness.images import build_image

    image = build_image(args.hw, base_image=args.base_image, tag=args.tag, progress=sys.stderr)
    print(f"{image.id} {image.tag}")
    return 0


def _image_ensure(args: argparse.Namespace) -> int:
    from harness.images import ensure_image

    image = ensure_image(args.hw, progress=sys.stderr)
    print(f"{image.id} {image.tag}")
    return 0


def _image_gpus(args: argparse.Namespace) -> int:
    from harness.containers import gpu_flags

    print(" ".join(gpu_flags(args.image, progress=sys.stderr)))
    return 0


def _image_source_digest(args: argparse.Namespace) -> int:
    from harness.images import source_digest

    print(source_digest())
    return 0


def _fingerprint(args: argparse.Namespace) -> int:
    from harness.fingerprint import format_fingerprint
    from harness.observe import survey

    machine = survey(args.hw, profile=None)
    if args.json:
        print(json.dumps(machine.fingerprint.to_dict(), indent=2))
    else:
        print(format_fingerprint(machine.fingerprint))
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from harness.fingerprint import enforce_strict
    from harness.observe import survey

    machine = survey(args.hw, profile=None)
    fp = machine.fingerprint
    print(f"fingerprint {fp.fingerprint_id} ({'complete' if fp.complete else 'incomplete'})")
    for missing in fp.to_dict()["missing"]:
        print(f"  not read: {missing['field']}: {missing['reason']}")
    for warning in machine.warnings:
        print(f"  warning: {warning}")
    if not machine.warnings:
        print("  no preflight warnings: fit to benchmark")
    if args.strict:
        enforce_strict(machine.warnings)
    return 0


def _report(args: argparse.Namespace) -> int:
    from harness.analysis.groups import load_group
    from harness.files import atomic_write_text
    from harness.report.html import render_html
    from harness.report.markdown import render_markdown

    groups = [load_group(path) for path in args.dirs]
    out = args.out or args.dirs[0] / "report"
    images = out / "images"
    images.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "report.md", render_markdown(groups, images_dir=images))
    atomic_write_text(out / "report.html", render_html(groups))
    print(out / "report.md")
    print(out / "report.html")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from harness.analysis.compare import compare
    from harness.analysis.groups import load_group
    from harness.files import atomic_write_text
    from harness.report.compare_render import render_compare_markdown, render_compare_text

    if len(args.dirs) < 2:
        raise ConfigError("compare: give at least two run, trials or sweep directories")
    comparison = compare([load_group(path) for path in args.dirs])
    print(render_compare_text(comparison))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out / "compare.md", render_compare_markdown(comparison))
        print(args.out / "compare.md")
    return 0


def _show(args: argparse.Namespace) -> int:
    from harness.results.runfile import load_result

    for run_dir in args.run_dirs:
        print(render_summary(load_result(run_dir), str(run_dir)))
    return 0


def _find_suite(name: str) -> tuple[Suite, Path]:
    path = Path(name)
    if not path.suffix:
        path = Path("scenarios") / f"{name}.yaml"
    if path.is_file() and not is_suite_file(path):
        raise ConfigError(f"{path}: is a scenario, not a suite; use `harness run {path}`")
    return load_suite(path), path.parent


if __name__ == "__main__":
    raise SystemExit(main())
