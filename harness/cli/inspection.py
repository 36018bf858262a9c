"""The verbs that prepare or inspect: models, image, fingerprint, doctor, report, compare, show."""

from __future__ import annotations

import argparse
import contextlib
import json
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

if TYPE_CHECKING:
    from harness.analysis.groups import Group
    from harness.fingerprint.survey import Survey
    from harness.results.published import PublishedResult


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
    atomic_write_text(out / "report.html", render_html(groups, published))
    print(out / "report.md")
    print(out / "report.html")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from harness.analysis.compare import compare
    from harness.files import atomic_write_text
    from harness.report.compare_render import render_compare_markdown, render_compare_text

    if len(args.dirs) < 2:
        raise ConfigError("compare: give at least two run, trials or sweep directories")
    if args.out is not None:
        _check_out_dir(args.out)
    with contextlib.ExitStack() as stack:
        comparison = compare(
            [side for path in args.dirs for side in _load_sides(path, args.trust, stack)]
        )
    print(render_compare_text(comparison))
    if args.out is not None:
        markdown = render_compare_markdown(comparison)
        atomic_write_text(_make_out_dir(args.out) / "compare.md", markdown)
        print(args.out / "compare.md")
    return 0


def _load_side(path: Path) -> Group | PublishedResult:
    """A run, trials or sweep directory, or a published MLPerf record (`harness import`)."""
    from harness.analysis.groups import load_group
    from harness.results.published import is_published, load_published

    return load_published(path) if is_published(path) else load_group(path)


def _load_sides(
    path: Path, trust: Sequence[Path], stack: contextlib.ExitStack
) -> list[Group | PublishedResult]:
    """`_load_side`, or each run and group of a bundle, verified and labelled as such.

    A bundle is opened into a temporary directory that lives as long as `stack`; one that fails
    verification stops the command with `harness verify`'s error and exit code.
    """
    import dataclasses

    from harness.analysis.groups import Group

    directories = _bundle_dirs(path, trust, stack)
    if directories is None:
        return [_load_side(path)]
    runs, note = directories
    sides: list[Group | PublishedResult] = []
    for directory in runs:
        side = _load_side(directory)
        if isinstance(side, Group):
            side = dataclasses.replace(side, label=f"{side.label} [{note}]")
        sides.append(side)
    return sides


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
    print(f"{note}: {opened.signer_fingerprint}{hint}", file=sys.stderr)
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
            opened = _bundle_dirs(path, args.trust, stack)
            if opened is None:
                _show_one(path)
                continue
            for top in opened[0]:
                for result in sorted(top.rglob("result.json")):
                    _show_one(result.parent, f"{result.parent.name} [{opened[1]}]")
    return 0


def _show_one(run_dir: Path, name: str | None = None) -> None:
    from harness.results.published import describe, is_published, load_published
    from harness.results.runfile import load_result

    if is_published(run_dir):  # an imported MLPerf result: its own rows, labelled
        record = load_published(run_dir)
        rows = [f"  {field:<16}{value}" for field, value in describe(record)]
        print("\n".join([record.label, *rows, f"  {'record':<16}{run_dir}"]))
        return
    print(render_summary(load_result(run_dir), name or str(run_dir)))
