"""Which run goes where in the tree, and what each division refuses (before anything is written)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.analysis.plausibility import refuse_implausible
from harness.analysis.values import metric_getter
from harness.errors import ConfigError
from harness.records.group import RunSet
from harness.records.result import RunResult
from harness.results.groups import load_group

Division = Literal["open", "closed"]
DIVISIONS: tuple[Division, ...] = ("open", "closed")
# LoadGen's model key (mlperf.conf) -> MLPerf's benchmark directory: the benchmarks whose
# accuracy, dataset and compliance rules this export was checked against with MLPerf's checker.
# llama3.1-8b (a generative run with model.loadgen_name llama3_1-8b): open division only, as
# its ROUGE accuracy needs MLPerf's dataset and reference text (see _check_division).
BENCHMARKS: Mapping[str, str] = {"resnet50": "resnet", "llama3_1-8b": "llama3.1-8b"}
# The compliance tests MLPerf v6.1 requires per benchmark (the checker's models_TEST0x).
# llama3.1-8b's is TEST06 (first token and output lengths), which only a closed result needs
# and the harness does not run: its export is open-only.
COMPLIANCE_TESTS: Mapping[str, tuple[str, ...]] = {"resnet": ("TEST01", "TEST04")}
# The generative benchmarks among BENCHMARKS' values: accuracy.txt states their ROUGE.
GENERATIVE_BENCHMARKS = frozenset({"llama3.1-8b"})


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One result directory of the tree: the run exported there, and why that run."""

    source: Path  # what the user passed: a run or a trials group
    run_dir: Path
    result: RunResult
    benchmark: str
    chosen: str  # how run_dir was picked from source, for the output and the README

    @property
    def scenario(self) -> str:
        """MLPerf's scenario directory name: LoadGen's scenario, as the run recorded it."""
        return self.result.scenario

    @property
    def quick(self) -> bool:
        """Whether LoadGen ran shortened (quick profile): never submission-valid."""
        return self.result.outcome.profile == "quick"


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What to write: the tree's names and one entry per (benchmark, scenario).

    ``real_weights``: the zoo models whose weights are trained (their zoo entries say so);
    every other zoo model has seeded synthetic weights, and its results say so.
    """

    division: Division
    org: str
    system: str
    entries: tuple[Entry, ...]
    real_weights: frozenset[str] = frozenset()

    @property
    def results(self) -> tuple[RunResult, ...]:
        """The exported results, in entry order."""
        return tuple(e.result for e in self.entries)


def plan_export(
    sources: Sequence[Path],
    *,
    division: Division,
    org: str,
    system: str,
    force_quick: bool = False,
    real_weights: frozenset[str] = frozenset(),
) -> Plan:
    """Load every source, pick its run and check the set against the division's rules.

    Raises:
        ConfigError: one line naming the run and the fix, for a sweep, a model without an
            MLPerf benchmark, two runs for one scenario, runs from different machines, a
            quick-profile run (closed; open without ``force_quick``), or a closed-division run
            without accuracy against labels.
        ResultError: for a directory that holds no readable, complete result.
        ImplausibleError: for a run the physics check finds IMPLAUSIBLE (any trial of a group).
    """
    entries = tuple(_entry(path) for path in sources)
    _refuse_duplicates(entries)
    _refuse_mixed_machines(entries)
    for entry in entries:
        _check_division(entry, division, force_quick)
    return Plan(
        division=division, org=org, system=system, entries=entries, real_weights=real_weights
    )


def _entry(source: Path) -> Entry:
    group = load_group(source)
    if group.kind == "sweep":
        raise ConfigError(
            f"{source}: a batch sweep; export one of its runs (a point's trials directory)"
        )
    for trial_dir, trial in zip(group.runs.run_dirs, group.runs.results, strict=True):
        refuse_implausible(trial, str(trial_dir), "exported for MLPerf")
    run_dir, result, chosen = _pick(group.runs)
    key = result.loadgen_config.model_key
    if key not in BENCHMARKS:
        known = ", ".join(f"{k} ({v})" for k, v in BENCHMARKS.items())
        raise ConfigError(
            f"{run_dir}: LoadGen model '{key}' has no MLPerf benchmark this export knows "
            f"(known: {known})"
        )
    return Entry(
        source=source, run_dir=run_dir, result=result, benchmark=BENCHMARKS[key], chosen=chosen
    )


def _pick(runs: RunSet) -> tuple[Path, RunResult, str]:
    """A trials group's median run (the value it reports), else the one run.

    With an even count the median lies between two runs: the one nearer to it, the
    earlier on a tie.
    """
    if not runs.results:
        raise ConfigError(f"{runs.path}: holds no finished run to export")
    if runs.stats is None or runs.metric is None or len(runs.results) == 1:
        return runs.run_dirs[0], runs.results[0], "a single run"
    getter = metric_getter(runs.metric)
    median = runs.stats.median
    distances = [
        abs(value - median) if (value := getter(r)) is not None else float("inf")
        for r in runs.results
    ]
    index = distances.index(min(distances))
    name = runs.run_dirs[index].name
    chosen = f"{name}, the median of {len(runs.results)} trials by {runs.metric}"
    return runs.run_dirs[index], runs.results[index], chosen


def _refuse_duplicates(entries: Sequence[Entry]) -> None:
    seen: dict[tuple[str, str], Path] = {}
    for entry in entries:
        key = (entry.benchmark, entry.scenario)
        if key in seen:
            raise ConfigError(
                f"{entry.source} and {seen[key]}: both are {entry.benchmark} {entry.scenario}; "
                "a submission holds one result per benchmark and scenario, pass one of them"
            )
        seen[key] = entry.source


def _refuse_mixed_machines(entries: Sequence[Entry]) -> None:
    first = entries[0]
    for entry in entries[1:]:
        if entry.result.hardware.fingerprint_id != first.result.hardware.fingerprint_id:
            raise ConfigError(
                f"{entry.source}: measured on another machine than {first.source} "
                f"(fingerprint {entry.result.hardware.fingerprint_id} vs "
                f"{first.result.hardware.fingerprint_id}); export each system with its own --system"
            )


def _check_division(entry: Entry, division: Division, force_quick: bool) -> None:
    if entry.quick and division == "closed":
        raise ConfigError(
            f"{entry.run_dir}: a quick-profile run (shortened LoadGen settings); the closed "
            "division takes only `--profile submission` runs"
        )
    if entry.quick and not force_quick:
        raise ConfigError(
            f"{entry.run_dir}: a quick-profile run is not submission-valid; re-run it with "
            "--profile submission, or pass --force-quick to export it labelled as quick"
        )
    if division == "closed" and entry.benchmark in GENERATIVE_BENCHMARKS:
        raise ConfigError(
            f"{entry.run_dir}: {entry.benchmark} has no ROUGE score here (its generated tokens "
            "are not scored against MLPerf's reference text) and no TEST06; the closed division "
            "needs both: export to --division open"
        )
    if division == "closed" and entry.result.accuracy.against_labels is None:
        raise ConfigError(
            f"{entry.run_dir}: no accuracy against labels (unlabelled data); the closed division "
            "needs MLPerf's accuracy: run with data.source: imagenet, or export to --division open"
        )
