"""The report on groups of runs as blocks (harness.report.blocks), section by section."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from harness.analysis.groups import group_warnings, warning_count
from harness.published.describe import describe
from harness.records.fingerprint import Fingerprint
from harness.records.group import Group
from harness.records.layout import DETAIL_LOG, RESULT_FILE, SUMMARY_LOG, TELEMETRY_FILE
from harness.records.loadsweep import LoadSweep
from harness.records.published import PublishedResult
from harness.records.runlabel import shared_label
from harness.records.trust import Trust
from harness.report.badges import TrustOf, default_trust, trust_sentence
from harness.report.blocks import Block, Bullets, Heading, Para, Table
from harness.report.cells import slug
from harness.report.figures import latency_blocks, telemetry_blocks, utilization_blocks
from harness.report.genfigures import token_plot_blocks
from harness.report.loadreport import load_blocks
from harness.report.machine import machine_label, machine_rows
from harness.report.summary import (
    SUMMARY_HEADER,
    SUMMARY_NOTE,
    configuration_label,
    device_label,
    model_label,
    summary_row,
)
from harness.report.tables import results_blocks, server_blocks, sweep_blocks
from harness.report.tokenenergy import energy_blocks
from harness.report.tokens import token_blocks

RAW_FILES = (SUMMARY_LOG, RESULT_FILE, DETAIL_LOG, TELEMETRY_FILE)


def build_report(
    groups: Sequence[Group],
    published: Sequence[PublishedResult] = (),
    *,
    links_from: Path | None = None,
    trust: TrustOf | None = None,
    loads: Sequence[tuple[LoadSweep, str]] = (),
) -> list[Block]:
    """Every section of the report, in order, for any renderer.

    `loads`: load sweeps (harness sweep --server-rates) and where each was found, each drawn
    as latency against achieved rate after the groups.

    Links to each run's raw files are relative to `links_from`, the directory the page is
    written to; without it they are absolute file:// URLs. `trust` gives each group's and
    record's trust (harness.inspect.trust, with what its files say); without it, what the
    results alone say (harness.analysis.trust).
    """
    trust_of = trust or default_trust
    sections = _sections(groups)
    title = page_title(groups, published) if groups or not loads else "Load sweep"
    blocks: list[Block] = [Heading(1, title), Para(_context(groups))]
    results = [r for g in groups for runs in g.all_runs for r in runs.results]
    if any(r.outcome.profile == "quick" for r in results):
        blocks.append(Para("Quick profile: shortened LoadGen runs, NOT valid for MLPerf."))
    if sections:
        rows = tuple(
            summary_row(s.group, f"[{n}](#{s.anchor})", warning_count(s.group), trust_of(s.group))
            for n, s in enumerate(sections, start=1)
        )
        blocks += [Table(SUMMARY_HEADER, rows), Para(SUMMARY_NOTE)]
    blocks += _contents(sections, published)
    for section in sections:
        blocks += _group(section, links_from, trust_of(section.group))
    for sweep, where in loads:
        blocks += load_blocks(sweep, where)
    return blocks + _machines(sections) + _published(published, trust_of)


def page_title(groups: Sequence[Group], published: Sequence[PublishedResult] = ()) -> str:
    """What was measured, in one line: models, scenarios and devices."""
    results = [g.results[0] for g in groups if g.results]
    if not results:
        return "Published MLPerf results" if published else "beyond-tops: no run measured"
    models = _few(model_label(r) for r in results)
    scenarios = _few(r.scenario for r in results)
    return f"{models} · {scenarios} on {_few(device_label(r) for r in results)}"


@dataclass(frozen=True)
class _Section:
    """A group as the report shows it: its title, anchor and image-name prefix."""

    group: Group
    title: str
    anchor: str
    prefix: str


def _sections(groups: Sequence[Group]) -> list[_Section]:
    titles = [_title(g) for g in groups]
    repeated = {t for t in titles if titles.count(t) > 1}
    sections = []
    for number, (group, title) in enumerate(zip(groups, titles, strict=True), start=1):
        title = f"{title} ({group.path.resolve().name})" if title in repeated else title
        prefix = f"{number}-{slug(group.label)}"
        sections.append(_Section(group, title, f"c{number}-{slug(title)}", prefix))
    return sections


def _title(g: Group) -> str:
    """A group's section title: its --label, if given, before what its configuration is."""
    if not g.results:
        return g.label
    given = shared_label(r.label for r in g.results)
    configuration = configuration_label(g.results[0])
    return configuration if given is None else f"{given} · {configuration}"


def _few(items: Iterable[str], most: int = 3) -> str:
    distinct = list(dict.fromkeys(items))
    return ", ".join(distinct) if len(distinct) <= most else f"{len(distinct)} kinds"


def _context(groups: Sequence[Group]) -> str:
    results = [r for g in groups for runs in g.all_runs for r in runs.results]
    if not results:
        return "No run was measured: the page lists what was given."
    days = sorted({r.created_utc[:10] for r in results})
    when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    machines = {r.fingerprint.fingerprint_id: r.fingerprint for r in results}
    where = "; ".join(f"{machine_label(fp)}, machine {fid}" for fid, fp in machines.items())
    return (
        f"Measured {when} (UTC) on {where}; result.json records no host name, so a machine "
        "goes by its fingerprint (see Machines)."
    )


def _contents(sections: Sequence[_Section], published: Sequence[PublishedResult]) -> list[Block]:
    items = [f"[{s.title}](#{s.anchor})" for s in sections]
    items += ["[Machines](#machines)"] if any(s.group.results for s in sections) else []
    items += ["[Published MLPerf results](#published)"] if published else []
    return [Heading(2, "Contents", "contents"), Bullets(tuple(items))] if items else []


def _group(section: _Section, links_from: Path | None, trust: Trust) -> list[Block]:
    """The group's sections; its prefix makes its image names unique within the report."""
    g, prefix = section.group, section.prefix
    blocks: list[Block] = [Heading(2, section.title, section.anchor), Para(_describe(g))]
    blocks.append(Para(f"Trust: {trust.tier}. {trust_sentence(trust)}"))
    if g.results:
        blocks += results_blocks(g) + token_blocks(g) + energy_blocks(g)
    if g.sweep is not None:
        blocks += sweep_blocks(g.sweep, prefix)
    if g.results:
        blocks += latency_blocks(g, prefix) + token_plot_blocks(g, prefix) + server_blocks(g)
        blocks += telemetry_blocks(g, prefix) + utilization_blocks(g, prefix)
    blocks += _runs(g, links_from)
    return blocks + _warnings(g)


def _describe(g: Group) -> str:
    if not g.results:
        return f"Sweep in {g.path.resolve().name}: no point was measured."
    r = g.results[0]
    what = {"run": "One run", "trials": "Trials", "sweep": "Sweep"}[g.kind]
    text = (
        f"{what} of {r.scenario_name}: {r.scenario}, model {r.model.name} "
        f"{r.model.precision} (sha256 {r.model.sha256[:12]}), "
        f"{', '.join(r.providers)}, {r.outcome.profile} profile"
    )
    text += f"; batch size {r.batch_size}" + (" (the best: its runs below)" if g.sweep else "")
    runs, valid = len(g.results), sum(x.outcome.valid for x in g.results)
    requested = f" of {g.runs.requested} requested" if runs < g.runs.requested else ""
    fid = r.fingerprint.fingerprint_id
    return (
        f"{text}; {runs} run{'s' * (runs != 1)}{requested}, LoadGen VALID in {valid}. "
        f"Directory {g.path.resolve().name}, on machine [{fid}](#machine-{fid})."
    )


def _runs(g: Group, links_from: Path | None) -> list[Block]:
    """Each run with its LoadGen verdict, when it ran, and links to its raw files."""
    rows = tuple(
        (
            label,
            ("VALID" if r.outcome.valid else "INVALID")
            + (", IMPLAUSIBLE" if r.plausibility.verdict == "IMPLAUSIBLE" else ""),
            r.created_utc[:19].replace("T", " "),
            _files(run_dir, links_from),
        )
        for runs in g.all_runs
        for label, run_dir, r in g.labelled(runs)
    ) + tuple(  # a trial that left no result: listed, marked, never dropped
        (
            u.path.relative_to(g.path).as_posix(),
            f"INCOMPLETE: {u.cause}",
            "not measured",
            _files(u.path, links_from),
        )
        for runs in g.all_runs
        for u in runs.unfinished
    )
    if not rows:
        return []
    header = ("run", "LoadGen", "measured (UTC)", "raw files")
    return [Heading(3, "Runs and raw logs"), Table(header, rows)]


def _files(run_dir: Path, links_from: Path | None) -> str:
    links = [
        f"[{name}]({_link(run_dir / name, links_from)})" if (run_dir / name).is_file() else ""
        for name in RAW_FILES
    ]
    missing = [name for name in RAW_FILES[:1] if not (run_dir / name).is_file()]
    return " · ".join([*filter(None, links), *(f"no {name}" for name in missing)])


def _link(path: Path, links_from: Path | None) -> str:
    """A URL of `path`: relative to the page's directory when known, else file://."""
    if links_from is None:
        return path.resolve().as_uri()
    return quote(Path(os.path.relpath(path.resolve(), links_from.resolve())).as_posix())


def _machines(sections: Sequence[_Section]) -> list[Block]:
    """Each machine once, by fingerprint id, with the configurations measured on it."""
    used: dict[str, list[_Section]] = {}
    prints: dict[str, Fingerprint] = {}
    for section in sections:
        for runs in section.group.all_runs:
            for r in runs.results:
                fid = r.fingerprint.fingerprint_id
                prints.setdefault(fid, r.fingerprint)
                if section not in used.setdefault(fid, []):
                    used[fid].append(section)
    if not prints:
        return []
    blocks: list[Block] = [Heading(2, "Machines", "machines")]
    for fid, fp in prints.items():
        state = "complete" if fp.complete else "incomplete"
        where = ", ".join(f"[{s.title}](#{s.anchor})" for s in used[fid])
        blocks += [
            Heading(3, f"Machine {fid}", f"machine-{fid}"),
            Para(f"{machine_label(fp)}; fingerprint {state}. Measured here: {where}."),
            Table(("part", "what was read"), tuple(machine_rows(fp))),
        ]
    return blocks


def _warnings(g: Group) -> list[Block]:
    found: dict[str, list[str]] = {}
    for where, text in group_warnings(g):
        found.setdefault(text, []).append(where)
    items = tuple(f"[{', '.join(dict.fromkeys(where))}] {text}" for text, where in found.items())
    return [Heading(3, "Warnings"), Bullets(items) if items else Para("No warnings.")]


def _published(records: Sequence[PublishedResult], trust_of: TrustOf) -> list[Block]:
    """Published MLPerf results, each labelled as such: imported, never measured here."""
    if not records:
        return []
    blocks: list[Block] = [
        Heading(2, "Published MLPerf results", "published"),
        Para(
            "Imported with `harness import mlperf` from MLPerf's published results trees: "
            "measured by their submitters on their systems, not by this harness on this machine."
        ),
    ]
    for record in records:
        trust = trust_of(record)
        rows = (("trust", f"{trust.tier}: {trust_sentence(trust)}"), *describe(record))
        blocks += [Heading(3, record.label), Table(("field", "value"), rows)]
    return blocks
