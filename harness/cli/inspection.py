"""The verbs that prepare or inspect: models, image, fingerprint, doctor, report, compare, show."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli.measure import _find_suite
from harness.config import load_scenario
from harness.errors import ConfigError, ResultError
from harness.hardware import get_target
from harness.report.summary import render_summary
from harness.text import printable

UNWRAPPED_WIDTH = 10_000  # `compare` into a pipe: one line per item

if TYPE_CHECKING:
    from harness.analysis.groups import Group
    from harness.fingerprint.survey import Survey
    from harness.records.metrics import Metric
    from harness.results.published import PublishedResult
    from harness.results.records import RunResult


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


def _image_build(args: argparse.Namespace) -> int:
    from harness.execution.images import build_image

    image = build_image(args.hw, base_image=args.base_image, tag=args.tag, progress=sys.stderr)
    print(f"{image.id} {image.tag}")
    return 0


def _image_ensure(args: argparse.Namespace) -> int:
    from harness.execution.images import ensure_image

    image = ensure_image(args.hw, progress=sys.stderr)
    print(f"{image.id} {image.tag}")
    return 0


def _image_gpus(args: argparse.Namespace) -> int:
    from harness.execution.containers import gpu_flags

    print(" ".join(gpu_flags(args.image, progress=sys.stderr)))
    return 0


def _image_source_digest(args: argparse.Namespace) -> int:
    from harness.execution.images import source_digest

    print(source_digest())
    return 0


def _fingerprint(args: argparse.Namespace) -> int:
    from harness.fingerprint import format_fingerprint

    machine = _survey(args.hw)
    if args.json:
        print(json.dumps(machine.fingerprint.to_dict(), indent=2))
    else:
        print(format_fingerprint(machine.fingerprint))
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from harness.fingerprint import enforce_strict

    machine = _survey(args.hw)
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


def _survey(hw: str) -> Survey:
    from harness.fingerprint.survey import survey
    from harness.telemetry import gpu_inventory

    get_target(hw)  # an unknown --hw: the same line and code as `harness run` gives
    gpus, missing = gpu_inventory(hw)
    return survey(gpus=gpus, gpu_missing=missing, profile=None)


def _report(args: argparse.Namespace) -> int:
    first = args.dirs[0]
    out = args.out or (first.parent if first.is_file() else first) / "report"
    _check_out_dir(out)
    with contextlib.ExitStack() as stack:
        sides = [side for path in args.dirs for side in _load_sides(path, args.trust, stack)]
        return _write_report(out, sides)


def _write_report(out: Path, sides: list[Group | PublishedResult]) -> int:
    from harness.analysis.groups import Group
    from harness.files import atomic_write_text
    from harness.report.html import render_html
    from harness.report.markdown import render_markdown

    groups = [s for s in sides if isinstance(s, Group)]
    published = [s for s in sides if not isinstance(s, Group)]
    images = _make_out_dir(out / "images")
    markdown = render_markdown(groups, images_dir=images, published=published)
    atomic_write_text(out / "report.md", markdown)
    atomic_write_text(out / "report.html", render_html(groups, published, out_dir=out))
    _say(f"{out / 'report.md'}\n{out / 'report.html'}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from harness.analysis.compare import compare
    from harness.files import atomic_write_text
    from harness.report.compare_html import render_compare_html
    from harness.report.compare_render import render_compare_markdown, render_compare_text

    if len(args.dirs) < 2:
        raise ConfigError("compare: give at least two run, trials or sweep directories")
    if args.out is not None:
        _check_out_dir(args.out)
    with contextlib.ExitStack() as stack:
        comparison = compare(
            [side for path in args.dirs for side in _load_sides(path, args.trust, stack)]
        )
    _say(render_compare_text(comparison, width=_terminal_width()))
    if args.out is not None:
        out = _make_out_dir(args.out)
        atomic_write_text(out / "compare.md", render_compare_markdown(comparison))
        atomic_write_text(out / "compare.html", render_compare_html(comparison))
        _say(f"{args.out / 'compare.md'}\n{args.out / 'compare.html'}")
    return 0


def _terminal_width() -> int:
    """The terminal's columns; into a pipe or a file, $COLUMNS if set, else lines are not wrapped.

    A pipe has no width: wrapping there would only split the lines `grep` looks for.
    """
    if sys.stdout.isatty() or "COLUMNS" in os.environ:
        return shutil.get_terminal_size().columns
    return UNWRAPPED_WIDTH


def _load_side(path: Path) -> Group | PublishedResult:
    """A run, trials or sweep directory, or a published MLPerf record (`harness import`)."""
    from harness.analysis.groups import load_group
    from harness.results.published import is_published, load_published

    return load_published(path) if is_published(path) else load_group(path)


def _load_sides(
    path: Path, trust: Sequence[Path], stack: contextlib.ExitStack
) -> list[Group | PublishedResult]:
    """`_load_side` of each directory `path` stands for (see _expand), labelled by its note."""
    from harness.analysis.groups import Group

    sides: list[Group | PublishedResult] = []
    for directory, note in _expand(path, trust, stack):
        side = _load_side(directory)
        if isinstance(side, Group) and note is not None:
            side = dataclasses.replace(side, label=f"{side.label} [{note}]")
        sides.append(side)
    return sides


def _expand(
    path: Path, trust: Sequence[Path], stack: contextlib.ExitStack
) -> list[tuple[Path, str | None]]:
    """The result directories a path the harness printed stands for, each with a note.

    A bundle: its runs and groups, opened and verified (the note says so); a fleet directory:
    the run or trials group of each entry of each task's latest attempt; anything else (a run,
    a trials group, a sweep, a published record): itself.
    """
    opened = _bundle_dirs(path, trust, stack)
    if opened is not None:
        return [(directory, opened[1]) for directory in opened[0]]
    fleet = _fleet_dirs(path)
    if fleet is not None:
        return [(directory, note) for directory, note in fleet]
    return [(path, None)]


def _fleet_dirs(path: Path) -> list[tuple[Path, str]] | None:
    """Each entry's run directory in a fleet's latest attempts; None if not a fleet directory."""
    from harness.fleet.plan import FLEET_FILE, read_plan, task_dir
    from harness.fleet.state import latest_attempt

    if not (path / FLEET_FILE).is_file():
        return None
    found: list[tuple[Path, str]] = []
    for task in read_plan(path).tasks:
        latest = latest_attempt(task_dir(path, task.index))
        if latest is None:
            _say(f"fleet {path.name}: task {task.index:03d}: no attempt yet", err=True)
            continue
        attempt, record = latest
        entries = record.get("entries")
        for entry in entries if isinstance(entries, list) else []:
            run = entry.get("run") if isinstance(entry, dict) else None
            if run:
                found.append((attempt / str(run), f"fleet task {task.index:03d}, {attempt.name}"))
    if not found:
        raise ResultError(
            f"{path}: no task of this fleet has left a run yet; "
            "run its tasks (`harness fleet task`), then check `harness fleet status`"
        )
    return found


def _bundle_dirs(
    path: Path, trust: Sequence[Path], stack: contextlib.ExitStack
) -> tuple[tuple[Path, ...], str] | None:
    """A bundle's run and group directories, opened and verified, and what was verified."""
    from harness.bundle.open import is_bundle, open_bundle

    if not is_bundle(path):
        return None
    dest = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bundle-"))) / "open"
    opened = open_bundle(path, dest, trust)
    note = f"bundle {path.name}: verified, signer {'trusted' if opened.trusted else 'NOT checked'}"
    hint = "" if opened.trusted else " (pass --trust KEY.pub to check it)"
    _say(f"{note}: {opened.signer_fingerprint}{hint}", err=True)
    return opened.run_dirs, note


def _check_out_dir(out: Path) -> None:
    """Refuse an --out that names a file, before reading or writing anything."""
    for path in (out, *out.parents):
        if path.exists():
            if not path.is_dir():
                raise ResultError(f"{path}: is a file, not a directory; pass a directory as --out")
            return


def _make_out_dir(out: Path) -> Path:
    """`out`, created with its parents; a failure is one line naming the directory."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ResultError(f"{out}: cannot create it ({reason}); pass a writable --out") from None
    return out


def _show(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:
        for path in args.run_dirs:
            for directory, note in _expand(path, args.trust, stack):
                name = None if note is None else f"{directory.name} [{note}]"
                _show_one(directory, name)
    return 0


def _show_one(run_dir: Path, name: str | None = None) -> None:
    from harness.analysis.groups import load_group
    from harness.results.groupfile import SWEEP_FILE, TRIALS_FILE
    from harness.results.published import describe, is_published, load_published
    from harness.results.runfile import load_result

    if is_published(run_dir):  # an imported MLPerf result: its own rows, labelled
        record = load_published(run_dir)
        rows = [(field, value) for field, value in describe(record)] + [("record", str(run_dir))]
        lines = [f"  {field:<16}{printable(value, newlines=False)}" for field, value in rows]
        _say("\n".join([printable(record.label, newlines=False), *lines]))
        return
    directory = run_dir.parent if run_dir.is_file() else run_dir
    if (directory / TRIALS_FILE).is_file() or (directory / SWEEP_FILE).is_file():
        _say(_render_group(load_group(directory), name or str(directory)))
        return
    _say(render_summary(load_result(run_dir), name or str(run_dir)))


def _say(text: str, *, err: bool = False) -> None:
    """Print what a record, a log or a foreign tree holds: its control characters shown."""
    print(printable(text), file=sys.stderr if err else sys.stdout)


def _render_group(group: Group, name: str) -> str:
    """A trials group or a sweep: its statistics table, then one line per run.

    Both name the group's headline metric as the catalogue gives it for these runs.
    """
    from harness.results.metrics import headline

    first = group.results[0] if group.results else None
    what = f"{first.scenario_name}: {first.scenario}" if first else "no run measured"
    lines = [f"{name}: {group.kind} group, {what}"]
    lines += _sweep_table(group) if group.sweep is not None else _trials_table(group)
    lines.append("  runs:")
    every = [r for runs in group.all_runs for r in runs.results]
    if every:
        metric = headline(every[0].scenario, every)
        for runs in group.all_runs:
            lines += [f"    {_run_line(a, d, r, metric)}" for a, d, r in group.labelled(runs)]
    return "\n".join(lines)


def _trials_table(group: Group) -> list[str]:
    """The trials' spread of the group's headline metric, from its runs' results."""
    from harness.analysis.trials import trial_stats
    from harness.results.metrics import headline, metric_values

    results = group.results
    if group.runs.stats is None or not results:
        return ["  no trial statistics"]
    metric = headline(results[0].scenario, results)
    values = metric_values(results, metric)
    if not values:
        return [f"  no trial has a value of {metric.title}"]
    requested = group.runs.requested
    stats = trial_stats(
        values, requested=requested, higher_is_better=metric.higher_is_better, shown=metric
    )
    better = "higher" if stats.higher_is_better else "lower"
    cells = [metric.format(v) for v in (stats.median, stats.best, stats.mean, stats.stdev)]
    cells.append(f"{stats.cov * 100:.1f} %")
    header = ["median", "best", "mean", "stdev", "CoV"]
    widths = [max(len(h), len(c)) for h, c in zip(header, cells, strict=True)]
    return [
        f"  {len(stats.values)} trials of {metric.title}, {better} is better "
        f"({requested} requested)",
        "    " + "  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)),
        "    " + "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)),
        *(f"  warning: {w}" for w in stats.warnings),
    ]


def _sweep_table(group: Group) -> list[str]:
    sweep = group.sweep
    if sweep is None:
        return []
    lines = [
        f"  saturation at batch {sweep.saturation_batch}, best at batch {sweep.best_batch}, "
        f"stopped: {sweep.stopped}",
        f"    {'batch':>5}  {'trials':>6}  {'median samples/s':>16}  {'CoV':>7}  warnings",
    ]
    for point in sweep.points:
        stats = point.stats
        lines.append(
            f"    {point.batch_size:>5}  {len(stats.values):>6}  {stats.median:>16,.1f}  "
            f"{stats.cov * 100:>5.1f} %  {len(stats.warnings)}"
        )
    if sweep.limit is not None:
        lines.append(f"  stopped at batch {sweep.limit.batch_size}: {sweep.limit.error}")
    return lines


def _run_line(label: str, run_dir: Path, result: RunResult, metric: Metric) -> str:
    from harness.results.metrics import value_of

    verdict = "VALID" if result.outcome.valid else "INVALID"
    value = metric.format(value_of(result, metric))
    return f"{label:<14} {verdict:<7}  {metric.label} {value} {metric.unit}  {run_dir}"
