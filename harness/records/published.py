"""One published MLPerf result, imported beside local runs: the record every consumer reads.

harness.published reads MLPerf's results trees into it and keeps its versioned JSON form
(published.json); compare, report, show and the site read only this record, so reading one
never imports LoadGen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from harness.config import ScenarioName
from harness.records.generation import TokenPercentiles
from harness.records.result import Latencies, SettingValue

# MLPerf's benchmark directories -> the model key of LoadGen's mlperf.conf they stand for
# (v5.1 renamed resnet50's directory to resnet); other benchmarks are their own key.
# A results directory's benchmark -> LoadGen's model key (mlperf.conf's config name), so a
# published llama3.1-8b record and a local run with model.loadgen_name llama3_1-8b share a key.
MODEL_KEYS: Mapping[str, str] = {
    "resnet": "resnet50",
    "resnet50": "resnet50",
    "llama3.1-8b": "llama3_1-8b",
    "llama3.1-8b-edge": "llama3_1-8b-edge",
    "llama3.1-405b": "llama3_1-405b",
}
# weight_data_types as submitters write them -> the harness's precision names.
PRECISION_NAMES: Mapping[str, str] = {
    "fp32": "fp32",
    "float32": "fp32",
    "fp16": "fp16",
    "float16": "fp16",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "int8": "int8",
}
VERDICTS: Mapping[bool | None, str] = {True: "VALID", False: "INVALID", None: "not logged"}


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishedSystem:
    """The submitter's system description (systems/<id>.json); None where it says nothing."""

    id: str  # the tree's <system> directory name
    name: str | None
    system_type: str | None
    status: str | None
    processor: str | None
    processors_per_node: str | None
    accelerator: str | None
    accelerators_per_node: str | None
    nodes: str | None
    framework: str | None
    software: str | None
    operating_system: str | None

    @property
    def devices(self) -> tuple[str, ...]:
        """Its processors and accelerators as stated ("2 x Xeon ..."), those it names.

        A system of several nodes says so first: "4 nodes x 8 x H100" is 32 accelerators.
        """
        pairs = (
            (self.processors_per_node, self.processor),
            (self.accelerators_per_node, self.accelerator),
        )
        nodes = whole_count(self.nodes)
        per_node = f"{nodes} nodes x " if nodes is not None and nodes > 1 else ""
        return tuple(per_node + times(count, model) for count, model in pairs if model)

    @property
    def accelerator_count(self) -> int | None:
        """Accelerators in the whole system: per node times nodes, as the system JSON states.

        None where it names no accelerator or either count is not a whole number (unknown:
        the callers say so, never guess a node count).
        """
        per_node, nodes = whole_count(self.accelerators_per_node), whole_count(self.nodes)
        if self.accelerator is None or per_node is None or nodes is None:
            return None
        return per_node * nodes


@dataclass(frozen=True, slots=True, kw_only=True)
class MainMetric:
    """The scenario's MLPerf metric in the result's round, as LoadGen logged it (latencies in ns).

    ``name`` is the metric's path in published.json (the catalogue's `published`):
    samples_per_second, scheduled_samples_per_second, or a latency_ns percentile.
    """

    name: str
    label: str
    value: float
    unit: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishedGeneration:
    """A published LLM result's token figures, as its detail log states them.

    ``tokens_per_second`` is MLPerf's metric: Offline's ``result_tokens_per_second``
    ("Tokens per second"), Server's ``result_completed_tokens_per_second`` ("Completed tokens
    per second"). ``ttft_ns`` and ``tpot_ns`` are LoadGen's time to first token and time per
    output token percentiles (``result_first_token_*``, ``result_time_per_output_token_*``);
    None where it logged none (Offline). The same paths as a local run's generation block,
    so the catalogue's rows (harness.records.metrics) read both.
    """

    tokens_per_second: float
    ttft_ns: TokenPercentiles | None
    tpot_ns: TokenPercentiles | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishedCompliance:
    """One compliance test (TEST01, TEST04) of a published result, as its tree states it.

    ``performance`` and ``accuracy`` are the verdicts of its verify_performance.txt and
    verify_accuracy.txt (MLPerf's scripts end each with TEST PASS or TEST FAIL): True for a
    pass, False for a failure, None where the tree has no such file or it states neither.
    """

    test: str
    performance: bool | None
    accuracy: bool | None

    @property
    def passed(self) -> bool | None:
        """False when any check failed; True when one passed and none failed; else None."""
        checks = [c for c in (self.performance, self.accuracy) if c is not None]
        if not checks:
            return None
        return all(checks)

    @property
    def verdict(self) -> str:
        """How every output says it: "TEST01 PASS", "TEST04 FAIL (performance)", "no verdict"."""
        if self.passed is None:
            return f"{self.test} no verdict"
        if self.passed:
            return f"{self.test} PASS"
        checks = (("performance", self.performance), ("accuracy", self.accuracy))
        failed = ", ".join(name for name, check in checks if check is False)
        return f"{self.test} FAIL ({failed})"


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishedResult:
    """One (division, org, system, benchmark, scenario) of a published MLPerf results tree.

    ``benchmark`` is the tree's directory name; ``model`` the LoadGen model key it stands
    for (what a local run's ``loadgen_config.model_key`` says). ``mlperf_version`` is the
    round, known only from the tree's name (``inference_results_v4.1``) or ``--version``;
    ``loadgen_version`` what the detail log says, which can be an older round's LoadGen.
    ``precision`` and ``input_precision`` are the measurements JSON's weight and input data
    types, None where the tree has none. ``settings`` are LoadGen's effective_* settings;
    ``accuracy`` is accuracy.txt's first line (a beyond-tops export puts its synthetic-weights
    statement there); ``compliance`` the verdicts of the compliance tests the tree holds;
    ``files`` the copies of the tree's files kept beside the record; ``generation`` an LLM's
    token figures, by which it is ranked (None for every other benchmark).
    """

    source: Literal["published"]
    org: str
    division: str
    mlperf_version: str | None
    loadgen_version: str | None
    system: PublishedSystem
    benchmark: str
    model: str
    scenario: ScenarioName
    precision: str | None
    input_precision: str | None
    valid: bool | None
    invalid_reasons: tuple[str, ...]
    metric: MainMetric
    samples_per_second: float | None
    scheduled_samples_per_second: float | None
    latency_ns: Latencies
    early_stopping_met: bool | None
    settings: Mapping[str, SettingValue]
    accuracy: str | None
    compliance: tuple[PublishedCompliance, ...]
    loadgen_errors: tuple[str, ...]
    loadgen_warnings: tuple[str, ...]
    import_warnings: tuple[str, ...]
    source_path: str
    files: tuple[str, ...]
    imported_utc: str
    generation: PublishedGeneration | None = None  # an LLM's tokens/s, TTFT, TPOT; else None

    @property
    def label(self) -> str:
        """How every output names it: published, org, system, round and division."""
        version = f"v{self.mlperf_version}" if self.mlperf_version else "version unknown"
        return f"published: {self.org} {self.system.id} ({version}, {self.division})"

    @property
    def verdict(self) -> str:
        """LoadGen's verdict as every output writes it: VALID, INVALID or "not logged"."""
        return VERDICTS[self.valid]

    @property
    def harness_precision(self) -> str | None:
        """The weight precision in the harness's names (fp32, int8, ...), else as written."""
        if self.precision is None:
            return None
        key = self.precision.strip().lower()
        return PRECISION_NAMES.get(key, key)


def model_key(benchmark: str) -> str:
    """The LoadGen model key a benchmark directory stands for."""
    return MODEL_KEYS.get(benchmark, benchmark)


def whole_count(text: str | None) -> int | None:
    """A system JSON's count ("8", " 4 ") as a positive whole number, or None."""
    stripped = (text or "").strip()
    return int(stripped) if stripped.isdigit() and int(stripped) > 0 else None


def times(count: str | None, model: str) -> str:
    """A device as a system JSON states it: "2 x <model>", or the model where no count is."""
    return f"{count} x {model}" if count else model
