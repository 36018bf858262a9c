"""Where MLPerf's results tree keeps each result, found under whatever path the user gives.

A result is ``<division>/<org>/results/<system>/<benchmark>/<scenario>/performance/run_1``;
the path given may be the tree's root, a division, an org, a scenario or that run directory.
The tree is walked without following links to directories: each such link is a line saying
it was not followed (harness.published.files reads the files, inside the tree only).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.config import ScenarioName
from harness.records.layout import PERFORMANCE_DIR, RESULTS_DIR

RUN_DIR = re.compile(r"^run_(\d+)$")
# Scenario directories as submitters spell them (UntetherAI's v4.1 tree: lower case).
SCENARIOS: Mapping[str, ScenarioName] = {
    "singlestream": "SingleStream",
    "multistream": "MultiStream",
    "server": "Server",
    "offline": "Offline",
}
# Beside results/ (compliance runs, code, measurements) or inside a scenario (accuracy runs,
# power ranging): never a performance result of its own.
NOT_RESULTS = frozenset(
    {"compliance", "measurements", "systems", "code", "documentation", "calibration"}
    | {"accuracy", "ranging", "power", "images", ".git"}
)
# A compliance test's directory inside a scenario (v6 trees: <scenario>/TEST01/performance/):
# its logs are the test's, never a result of their own (harness.published.compliance reads it).
COMPLIANCE_TEST_DIR = re.compile(r"^TEST\d\d$")
# A round's version in a directory name: inference_results_v4.1, mlperf-v5.0, v6.1.
VERSION_IN_NAME = re.compile(r"(?:^|[_\-])v(\d+\.\d+)$")


@dataclass(frozen=True, kw_only=True)
class Location:
    """One result's place in the tree: its names and the directory that holds its logs."""

    division: str
    org: str
    system: str
    benchmark: str
    scenario: ScenarioName
    run_dir: Path  # performance/run_1, or performance/ itself where a tree has no run_1
    root: Path  # the tree: the directory holding the division; no file is read outside it

    @property
    def scenario_dir(self) -> Path:
        """``<benchmark>/<scenario>``: holds performance/ and accuracy/."""
        perf = self.run_dir if self.run_dir.name == PERFORMANCE_DIR else self.run_dir.parent
        return perf.parent

    @property
    def org_dir(self) -> Path:
        """``<division>/<org>``: holds results/, systems/ and measurements/."""
        return self.scenario_dir.parents[3]


def find_locations(path: Path) -> tuple[list[Location], list[str]]:
    """Every result under (or at) `path`, and one line per directory that is not one.

    The lines name the directory and why it was skipped (not in the tree's layout, an
    unknown scenario directory).
    """
    found: list[Location] = []
    problems: list[str] = []
    start = path.resolve()
    for run_dir in _run_dirs(start.parent if start.is_file() else start, problems):
        located = locate(run_dir)
        if isinstance(located, str):
            problems.append(located)
        else:
            found.append(located)
    return found, problems


def locate(run_dir: Path) -> Location | str:
    """The Location of a run directory, or why it is not one (a line naming it)."""
    perf = run_dir if run_dir.name == PERFORMANCE_DIR else run_dir.parent
    chain = [perf.parent, *perf.parent.parents]
    if len(chain) < 6 or chain[3].name != RESULTS_DIR:
        return (
            f"{perf}: not in MLPerf's <division>/<org>/results/<system>/<benchmark>/<scenario>"
            "/performance layout; skipped"
        )
    scenario_dir, benchmark, system, _, org, division = chain[:6]
    scenario = SCENARIOS.get(scenario_dir.name.lower())
    if scenario is None:
        known = ", ".join(SCENARIOS.values())
        return (
            f"{scenario_dir}: unknown scenario directory {scenario_dir.name!r} "
            f"(known: {known}); skipped"
        )
    return Location(
        division=division.name,
        org=org.name,
        system=system.name,
        benchmark=benchmark.name,
        scenario=scenario,
        run_dir=run_dir,
        root=division.parent,
    )


def tree_version(location: Location) -> str | None:
    """The round from a directory name above the division (inference_results_v4.1), or None."""
    for parent in location.org_dir.parents:
        match = VERSION_IN_NAME.search(parent.name)
        if match:
            return match.group(1)
    return None


def _run_dirs(path: Path, problems: list[str]) -> list[Path]:
    """The directories expected to hold a result's logs, under or at `path`, sorted.

    A link to a directory is not followed (os.walk's default); each one found is a line in
    `problems`, so a result behind it is not lost without a word.
    """
    if RUN_DIR.match(path.name) and path.parent.name == PERFORMANCE_DIR:
        return [path]
    if path.name == PERFORMANCE_DIR:
        return [_run_dir(path)]
    runs: list[Path] = []
    for top, dirs, _ in os.walk(path, followlinks=False):
        links = sorted(d for d in dirs if (Path(top) / d).is_symlink())
        problems += [_not_followed(Path(top) / d) for d in links if _walked(d)]
        dirs[:] = sorted(d for d in dirs if _walked(d) and d not in links)
        if PERFORMANCE_DIR in dirs:
            runs.append(_run_dir(Path(top) / PERFORMANCE_DIR))
            dirs.remove(PERFORMANCE_DIR)
    return sorted(runs)


def _walked(name: str) -> bool:
    """Whether a directory of this name may hold results (not accuracy/, TEST01/, code/ ...)."""
    return name not in NOT_RESULTS and not COMPLIANCE_TEST_DIR.match(name)


def _run_dir(performance: Path) -> Path:
    """run_1 (the lowest-numbered run); performance/ itself where the logs sit directly there."""
    try:
        entries = list(performance.iterdir())
    except OSError:
        return performance  # reading it will say what is wrong
    numbered = [
        (int(m.group(1)), p) for p in entries if p.is_dir() and (m := RUN_DIR.match(p.name))
    ]
    return min(numbered)[1] if numbered else performance


def _not_followed(link: Path) -> str:
    """A line for a link to a directory met in the walk: where it leads, and that it is skipped."""
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return f"{link}: a broken link or a link loop; skipped (a results tree holds no links)"
    return (
        f"{link}: a link to a directory ({target}); not followed, as no link in a results tree "
        "is: copy the directory there instead; skipped"
    )
