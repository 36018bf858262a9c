"""The verbs that prepare or inspect: models, image, fingerprint, doctor, report, compare, show."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli.measure import _find_suite
from harness.config import load_scenario
from harness.errors import ConfigError, ResultError
from harness.hardware import get_target
from harness.report.summary import render_summary

if TYPE_CHECKING:
    from harness.fingerprint.survey import Survey


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
    from harness.analysis.groups import load_group
    from harness.files import atomic_write_text
    from harness.report.html import render_html
    from harness.report.markdown import render_markdown

    out = args.out or args.dirs[0] / "report"
    _check_out_dir(out)
    groups = [load_group(path) for path in args.dirs]
    images = _make_out_dir(out / "images")
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
    if args.out is not None:
        _check_out_dir(args.out)
    comparison = compare([load_group(path) for path in args.dirs])
    print(render_compare_text(comparison))
    if args.out is not None:
        markdown = render_compare_markdown(comparison)
        atomic_write_text(_make_out_dir(args.out) / "compare.md", markdown)
        print(args.out / "compare.md")
    return 0


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
    from harness.results.runfile import load_result

    for run_dir in args.run_dirs:
        print(render_summary(load_result(run_dir), str(run_dir)))
    return 0
