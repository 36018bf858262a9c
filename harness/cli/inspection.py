"""The verbs that prepare or inspect: models, image, fingerprint, doctor, report, compare, show."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli.measure import _find_suite
from harness.config import load_scenario
from harness.errors import NOT_COMPARABLE, SLOWER, ConfigError, ResultError
from harness.hardware import get_target
from harness.records.layout import COMPARE_HTML, COMPARE_MD, REPORT_HTML, REPORT_MD
from harness.records.published import PublishedResult as PublishedResultType
from harness.report.summary import render_summary
from harness.text import printable

UNWRAPPED_WIDTH = 10_000  # `compare` into a pipe: one line per item

if TYPE_CHECKING:
    from harness.fingerprint.survey import Survey
    from harness.inspect.opener import Member, Opened
    from harness.records.group import Group
    from harness.records.loadsweep import LoadSweep
    from harness.records.published import PublishedResult
    from harness.records.scripting import ShowEntry
    from harness.records.trust import Trust


def _models_list(args: argparse.Namespace) -> int:
    from harness.models.llm.store import GENERATIVE
    from harness.models.registry import OFFICIAL
    from harness.models.zoo import ZOO

    for name, entry in sorted(ZOO.items()):
        versions = ", ".join(str(v) for v in entry.versions)
        generator = f"generator {entry.generator_version} (buildable: {versions})"
        print(f"{name:<22} generated  {entry.description}; {generator}")
    for name, llm in sorted(GENERATIVE.items()):
        print(f"{name:<22} {'generated' if llm.seeded else 'from wheel':<10} {llm.description}")
    for name, official in sorted(OFFICIAL.items()):
        print(f"{name:<22} download   {official.note} ({official.url})")
    return 0


def _models_build(args: argparse.Namespace) -> int:
    from harness.models.llm.store import GENERATIVE, generative_model_dir
    from harness.models.registry import zoo_model_path

    names = list(args.names)
    if not names:
        suite, base = _find_suite(args.suite)
        scenarios = [load_scenario(base / s) for s in suite.scenarios]
        names = sorted({s.model.zoo for s in scenarios if s.model.zoo is not None})
    for name in names:
        path = generative_model_dir(name) if name in GENERATIVE else zoo_model_path(name)
        print(f"{name:<22} {path}")
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
    from harness.report.machine import format_fingerprint

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
    for missing in fp.missing:
        print(f"  not read: {missing.field}: {missing.reason}")
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
    from harness.records.layout import LOAD_FILE
    from harness.results.loadfile import read_load

    loads = [(read_load(p / LOAD_FILE), str(p)) for p in args.dirs if (p / LOAD_FILE).is_file()]
    dirs = [p for p in args.dirs if not (p / LOAD_FILE).is_file()]  # a load sweep: its plot
    with contextlib.ExitStack() as stack:
        pairs = [pair for path in dirs for pair in _load_trusted(path, args.trust, stack)]
        return _write_report(out, pairs, loads)


def _write_report(
    out: Path,
    pairs: list[tuple[Group | PublishedResult, Trust]],
    loads: Sequence[tuple[LoadSweep, str]] = (),
) -> int:
    from harness.files import atomic_write_text
    from harness.records.group import Group
    from harness.report.html import render_html
    from harness.report.markdown import render_markdown

    sides = [side for side, _ in pairs]
    groups = [s for s in sides if isinstance(s, Group)]
    published = [s for s in sides if not isinstance(s, Group)]

    def trust_of(side: Group | PublishedResult) -> Trust:
        return next(t for s, t in pairs if s is side)

    images = _make_out_dir(out / "images")
    markdown = render_markdown(
        groups, images_dir=images, published=published, trust=trust_of, loads=loads
    )
    atomic_write_text(out / REPORT_MD, markdown)
    page = render_html(groups, published, out_dir=out, trust=trust_of, loads=loads)
    atomic_write_text(out / REPORT_HTML, page)
    _say(f"{out / REPORT_MD}\n{out / REPORT_HTML}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from harness.analysis.compare import compare
    from harness.analysis.pairing import pair_sides
    from harness.analysis.regression import judge
    from harness.cli.compare_pairs import compare_by_scenario
    from harness.cli.scripting import emit_compare, gate_threshold, machine_output
    from harness.files import atomic_write_text
    from harness.report.compare_html import render_compare_html
    from harness.report.compare_render import render_compare_markdown, render_compare_text
    from harness.report.regression import regression_line

    if len(args.dirs) < 2:
        raise ConfigError("compare: give at least two run, trials or sweep directories")
    threshold = gate_threshold(args)
    if args.out is not None:
        _check_out_dir(args.out)
    with contextlib.ExitStack() as stack:
        loaded = [_load_trusted(path, args.trust, stack) for path in args.dirs]
        pairs = [pair for found in loaded for pair in found]
        if any(len(found) > 1 for found in loaded):  # a bundle or fleet: like with like
            pairing = pair_sides([s for s, _ in pairs])
            if len(pairing.groups) != 1 or pairing.unpaired:
                return compare_by_scenario(
                    pairs, pairing, args, threshold=threshold, width=_terminal_width()
                )
        comparison = compare([s for s, _ in pairs], trust=[t for _, t in pairs])
    scripted = machine_output(args)
    gate = None
    if threshold is not None and comparison.comparable:
        gate = judge(comparison, threshold)
    if scripted:
        emit_compare(comparison, gate, args)
    else:
        _say(render_compare_text(comparison, width=_terminal_width()))
    if args.out is not None:
        out = _make_out_dir(args.out)
        atomic_write_text(out / COMPARE_MD, render_compare_markdown(comparison))
        atomic_write_text(out / COMPARE_HTML, render_compare_html(comparison))
        _say(f"{args.out / COMPARE_MD}\n{args.out / COMPARE_HTML}", err=scripted)
    if not comparison.comparable:
        if threshold is not None:
            _say("gate: not judged: the results are not comparable (see the tiers)", err=scripted)
        return NOT_COMPARABLE.code
    if gate is not None:
        _say(regression_line(gate), err=scripted)
        return SLOWER.code if gate.slower else 0
    return 0


def _terminal_width() -> int:
    """The terminal's columns; into a pipe or a file, $COLUMNS if set, else lines are not wrapped.

    A pipe has no width: wrapping there would only split the lines `grep` looks for.
    """
    if sys.stdout.isatty() or "COLUMNS" in os.environ:
        return shutil.get_terminal_size().columns
    return UNWRAPPED_WIDTH


def _load_trusted(
    path: Path, trust: Sequence[Path], stack: contextlib.ExitStack
) -> list[tuple[Group | PublishedResult, Trust]]:
    """Each result `path` stands for, read, with its trust (harness.inspect.trust)."""
    from harness.inspect.opener import load_side
    from harness.inspect.trust import trust_of
    from harness.records.group import Group

    opened = _open(path, trust, stack)
    pairs: list[tuple[Group | PublishedResult, Trust]] = []
    for member in opened.members:
        side = load_side(member)
        found = trust_of(side, opened)
        note = _note(opened, member)
        if isinstance(side, Group) and note is not None:
            side = dataclasses.replace(side, label=f"{side.label} [{note}]")
        pairs.append((side, found))
    return pairs


def _open(path: Path, trust: Sequence[Path], stack: contextlib.ExitStack) -> Opened:
    """What a path the harness printed stands for, with what opening it said on stderr.

    A bundle: its runs and groups, verified (the signer said); a fleet directory: the results
    of each task's latest attempt (each task that left none said), refused when none has;
    anything else (a run, a trials group, a sweep, a published record): itself.
    """
    from harness.inspect.opener import open_path

    opened = open_path(path, trust, stack)
    bundle = opened.bundle
    if bundle is not None:
        hint = "" if bundle.trusted else " (pass --trust KEY.pub to check it)"
        _say(f"{_bundle_note(opened)}: {bundle.signer_fingerprint}{hint}", err=True)
    for note in opened.notes:
        _say(f"fleet {path.name}: {note}", err=True)
    if opened.kind == "fleet" and not opened.members:
        raise ResultError(
            f"{path}: no task of this fleet has left a run yet; "
            "run its tasks (`harness fleet task`), then check `harness fleet status`"
        )
    return opened


def _note(opened: Opened, member: Member) -> str | None:
    """Where a member came from, for its label: a bundle's verification, a fleet's task."""
    if opened.bundle is not None:
        return _bundle_note(opened)
    if member.task is not None:
        return f"fleet task {member.task}, {member.attempt}"
    return None


def _bundle_note(opened: Opened) -> str:
    trusted = opened.bundle is not None and opened.bundle.trusted
    return f"bundle {opened.path.name}: verified, signer {'trusted' if trusted else 'NOT checked'}"


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
    from harness.cli.scripting import emit_show, machine_output
    from harness.records.layout import LOAD_FILE
    from harness.report.loadtext import render_load
    from harness.results.loadfile import read_load

    scripted = machine_output(args)
    entries: list[ShowEntry] = []
    with contextlib.ExitStack() as stack:
        for path in args.run_dirs:
            if (path / LOAD_FILE).is_file():  # a load sweep: its rates' table and knee
                if scripted:
                    raise ConfigError(
                        f"{path}: a load sweep has no --json or --csv output yet; "
                        f"read its {LOAD_FILE}, which is JSON already"
                    )
                _say(render_load(read_load(path / LOAD_FILE), str(path)))
                continue
            opened = _open(path, args.trust, stack)
            for member in opened.members:
                note = _note(opened, member)
                if scripted:
                    entries.append(_show_entry(opened, member, note))
                    continue
                _show_one(opened, member, None if note is None else f"{member.path.name} [{note}]")
    if scripted:
        emit_show(entries, args)
    return 0


def _show_entry(opened: Opened, member: Member, note: str | None) -> ShowEntry:
    """A member as `show --json` gives it (harness.report.scripted)."""
    from harness.inspect.opener import load_side
    from harness.inspect.trust import trust_of
    from harness.report.scripted import show_entry
    from harness.results.runfile import load_result

    if member.kind == "run":
        load_result(member.path)  # its own errors first: no such result, an INCOMPLETE run
    side = load_side(member)
    bundled = opened.bundle is not None  # unpacked into a temporary directory: name the bundle
    where = f"{opened.path}: {member.path.name}" if bundled else str(member.path)
    return show_entry(side, trust_of(side, opened), path=where, origin=note)


def _show_one(opened: Opened, member: Member, name: str | None = None) -> None:
    """A member as text (harness.report.text): its trust, then its rows, table or summary."""
    from harness.inspect.opener import load_side
    from harness.inspect.trust import trust_of
    from harness.records.layout import SWEEP_FILE
    from harness.report.text import render_group, render_published
    from harness.results.groupfile import read_sweep
    from harness.results.runfile import load_result

    path = member.path
    if member.kind == "run":
        load_result(path)  # its own errors first: no such result, an INCOMPLETE run
    side = load_side(member)
    trust = trust_of(side, opened)
    if isinstance(side, PublishedResultType):  # an imported MLPerf result: its own rows
        _say(render_published(side, path, trust))
    elif member.kind == "run":
        _say(render_summary(side.results[0], name or str(path), trust))
    else:
        sweep = read_sweep(path / SWEEP_FILE) if member.kind == "sweep" else None
        _say(render_group(side, name or str(path), sweep, trust))


def _say(text: str, *, err: bool = False) -> None:
    """Print what a record, a log or a foreign tree holds: its control characters shown."""
    print(printable(text), file=sys.stderr if err else sys.stdout)
