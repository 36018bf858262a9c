"""Command-line interface: parsing and printing only; every HarnessError is caught here, once.

The parser and its shared options live here; the verbs' handlers in measure.py (run, bench,
sweep) and inspection.py (the rest). Handlers import the heavy modules only when their verb runs.
"""

from __future__ import annotations

import argparse
import difflib
import os
import select
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from harness import __version__
from harness.cli.bundle import add_bundle_verbs, add_trust_option
from harness.cli.examples import SUITES_TOKEN, finish_help
from harness.cli.fleet import add_fleet_verb
from harness.cli.inspection import (
    _compare,
    _doctor,
    _fingerprint,
    _image_build,
    _image_ensure,
    _image_gpus,
    _image_source_digest,
    _models_build,
    _models_list,
    _report,
    _show,
)
from harness.cli.measure import _bench, _run, _sweep, add_compliance_verb, add_label_option
from harness.cli.measure import (  # re-exported: tests build campaigns through harness.cli
    _campaign as _campaign,
)
from harness.cli.published import add_import_verb
from harness.cli.reproduce import add_reproduce_verb
from harness.cli.scripting import add_gate_option, add_output_options
from harness.cli.site import add_site_verb
from harness.cli.submission import add_fetch_action, add_submission_verb
from harness.config import DEFAULT_TRIALS, PRECISIONS, PROFILES
from harness.errors import (
    BROKEN_PIPE,
    ERROR_CODES,
    NOT_COMPARABLE,
    SLOWER,
    ConfigError,
    HarnessError,
    exit_code_table,
    run_reporting_errors,
)
from harness.hardware import HW_NAMES

# A reader that stops early (`harness show RUN | head`) closes our stdout: we exit quietly with
# what a shell reports for a command killed by SIGPIPE, 128 + 13, not 0: the output was cut
# short, and a run printing its progress into that pipe was stopped.
EXIT_CODES = exit_code_table()
# --hw's values where argparse does not check them (the hardware table does, exit 4).
_HW_LIST = ", ".join(HW_NAMES)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `harness` console script.

    Parsing runs inside run_reporting_errors too: a stop signal from here on is one line and
    its exit code (argparse's own exits, --help and usage errors, pass through it).
    """
    try:
        code = run_reporting_errors(lambda: _call(_parser().parse_args(argv)))
        sys.stdout.flush()  # inside the try: a closed pipe may only show at this last flush
    except BrokenPipeError:
        if not _stdout_closed():
            raise  # some other pipe broke: a bug, keep its traceback
        _silence_stdout()
        return BROKEN_PIPE.code
    return code


def _call(args: argparse.Namespace) -> int:
    """Run the verb; running out of memory becomes one line with the generic error code."""
    try:
        return int(args.func(args))
    except MemoryError as exc:
        detail = f" ({exc})" if str(exc) else ""
        raise HarnessError(
            f"out of memory in `harness {args.verb}`{detail}; free memory or use a larger machine"
        ) from None


def _stdout_closed() -> bool:
    """Whether stdout's reader went away (the BrokenPipeError was ours, not a child's pipe).

    A pipe whose reader closed polls as POLLERR; stdout that is no file (a test's capture)
    tells by failing to flush.
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            return True
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's flush at exit cannot fail again.

    Python's documented recipe for SIGPIPE (the `signal` module's "Note on SIGPIPE").
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (a test's capture): nothing will flush to the pipe
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


class _VersionAction(argparse.Action):
    """--version: the harness's version, then the schema version of each file format."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from harness.cli.versions import format_lines  # imports every format's module

        print("\n".join([f"beyond-tops {__version__}", *format_lines()]))
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors are one `error:` line, as every other error is.

    Its subparsers are of this class too (add_subparsers takes the parent's class).
    """

    def _check_value(self, action: argparse.Action, value: object) -> None:
        """A value outside an option's or a verb's choices: the closest choice suggested."""
        choices = action.choices
        if choices is None or value in choices:
            return
        names = [str(c) for c in choices]
        close = difflib.get_close_matches(str(value), names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise argparse.ArgumentError(
            action, f"invalid choice: {value!r}; {hint}choose from {', '.join(names)}"
        )

    def error(self, message: str) -> NoReturn:
        """A bad option or argument: one line naming it and the help to read; exit 2."""
        code = ERROR_CODES[ConfigError].code  # a bad command line is a bad option
        self.exit(code, f"error: {self.prog}: {message}; see `{self.prog} --help`\n")


def _parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = _Parser(
        prog="harness",
        description="beyond-tops: MLPerf LoadGen benchmarks of ONNX models on real hardware.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version",
        action=_VersionAction,
        help="show the version and every file format's schema version, and exit",
    )
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
    add_fetch_action(models_verbs)
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
    bench.add_argument(
        "suite",
        nargs="?",
        default="quick",
        help=f"a suite in scenarios/ ({SUITES_TOKEN}) or a suite YAML file (default: quick)",
    )
    _common(bench, profile_default=None)
    bench.set_defaults(func=_bench)

    fingerprint = verbs.add_parser(
        "fingerprint", help="print this machine's environment fingerprint"
    )
    fingerprint.add_argument(
        "--hw", default="cpu", help=f"hardware target whose GPUs to include: {_HW_LIST}"
    )
    fingerprint.add_argument("--json", action="store_true", help="print JSON instead of text")
    fingerprint.set_defaults(func=_fingerprint)

    doctor = verbs.add_parser("doctor", help="list what makes this machine unfit to benchmark")
    doctor.add_argument("--hw", default="cpu", help=f"hardware target to check: {_HW_LIST}")
    doctor.add_argument("--strict", action="store_true", help="exit non-zero on any warning")
    doctor.set_defaults(func=_doctor)

    sweep = verbs.add_parser(
        "sweep",
        help="Offline throughput against batch size, to saturation; or Server latency "
        "against arrival rate (--server-rates)",
    )
    sweep.add_argument(
        "scenario", type=Path, help="an Offline scenario YAML file (or Server, --server-rates)"
    )
    sweep.add_argument(
        "--model", type=Path, help="run this ONNX file instead of the scenario's model"
    )
    loads = sweep.add_mutually_exclusive_group()
    loads.add_argument(
        "--batches", help="Offline: comma-separated batch sizes (default 1,2,4,... to 1024)"
    )
    loads.add_argument(
        "--server-rates",
        metavar="QPS,... | auto",
        help="Server: latency against these arrival rates, increasing (queries/s), or auto: "
        "the capacity search first, then 25 %% to 125 %% of the rate it found; the knee is "
        "the highest rate that met the p99 bound in every trial (a generative model's: both "
        "p99 TTFT and TPOT limits, with TTFT/TPOT percentiles, tokens/s and goodput per rate)",
    )
    _common(sweep, profile_default="quick")
    sweep.set_defaults(func=_sweep)

    report = verbs.add_parser("report", help="Markdown + self-contained HTML report with plots")
    report.add_argument(
        "dirs", type=Path, nargs="+", metavar="DIR", help="run, trials or sweep dirs, or bundles"
    )
    report.add_argument("--out", type=Path, help="report directory (default: <first DIR>/report)")
    add_trust_option(report)
    report.set_defaults(func=_report)

    compare = verbs.add_parser(
        "compare",
        help="side-by-side table with significance",
        description="Each result against the first: MLPerf's metrics with ratios and Welch's "
        "t-test, and each pair's differences in tiers (not comparable, intended, caveats).",
        epilog=f"exit {NOT_COMPARABLE.code}: {NOT_COMPARABLE.meaning}; exit {SLOWER.code}: "
        f"{SLOWER.meaning}; errors exit as `harness --help` lists",
    )
    compare.add_argument(
        "dirs",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="two or more results: run, trials, sweep or fleet dirs, or bundles",
    )
    compare.add_argument(
        "--out", type=Path, help="also write compare.md and compare.html into this directory"
    )
    add_output_options(compare, "compare")
    add_gate_option(compare)
    add_trust_option(compare)
    compare.set_defaults(func=_compare)

    show = verbs.add_parser("show", help="print a result as a table: any directory bench prints")
    show.add_argument(
        "run_dirs",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="run, trials, sweep or fleet dirs, or bundles",
    )
    add_output_options(show, "show")
    add_trust_option(show)
    show.set_defaults(func=_show)
    add_compliance_verb(verbs)
    add_submission_verb(verbs)
    add_bundle_verbs(verbs)
    add_import_verb(verbs)
    add_reproduce_verb(verbs)
    add_fleet_verb(verbs)
    add_site_verb(verbs)
    finish_help(parser)
    return parser


def _image_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    image = verbs.add_parser("image", help="build or find HW's Docker image (`make image`)")
    actions = image.add_subparsers(dest="action", required=True, metavar="ACTION")
    build = actions.add_parser("build", help="build docker/<hw> from build/wheels/<hw>, offline")
    build.add_argument("--hw", choices=HW_NAMES, default="cpu", help="hardware target")
    build.add_argument("--base-image", help="override the Dockerfile's pinned BASE_IMAGE")
    build.add_argument("--tag", help="image tag (default: beyond-tops/<hw>:<version>-<commit>)")
    build.set_defaults(func=_image_build)
    ensure = actions.add_parser("ensure", help="print this commit's image, building it if missing")
    ensure.add_argument("--hw", choices=HW_NAMES, default="cpu", help="hardware target")
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
        choices=PROFILES,
        default=profile_default,
        help="quick (short, development) or submission (MLPerf rules; 600 s a run); default: "
        + (profile_default or "the suite's own `profile:`"),
    )
    parser.add_argument("--hw", default="cpu", help=f"hardware target: {_HW_LIST} (default: cpu)")
    parser.add_argument(
        "--precision",
        help="run at these precisions instead of the scenario's, e.g. fp32,int8 "
        f"(allowed: {', '.join(PRECISIONS)})",
    )
    parser.add_argument(
        "--providers",
        help="run on this part of the target's provider chain, in its order, e.g. "
        "CUDAExecutionProvider (CUDA without TensorRT); default: the whole chain",
    )
    parser.add_argument(
        "--trials",
        type=int,
        help="runs per configuration (default: scenario's trials, else "
        + " / ".join(f"{n} {name}" for name, n in DEFAULT_TRIALS.items())
        + ")",
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
    add_label_option(parser)
    parser.set_defaults(launcher=None)
