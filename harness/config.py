"""Scenario and suite configuration: frozen dataclasses, their range checks, their loaders."""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.errors import ConfigError
from harness.generation import GenerationConfig, check_generative
from harness.strictyaml import build_from, load_as, read_yaml

SCHEMA_VERSION = 1  # of scenario files; harness.cli.versions lists every format's
ScenarioName = Literal["SingleStream", "MultiStream", "Server", "Offline"]
# Profiles and precisions are declared once, here: the Literal for the types and the loader,
# the tuple (the same names, in order) for the CLI's choices, job files and checks.
ProfileName = Literal["quick", "submission"]
PROFILES: tuple[ProfileName, ...] = typing.get_args(ProfileName)
# Trials per configuration where neither the command line nor the scenario says.
DEFAULT_TRIALS: Mapping[ProfileName, int] = types.MappingProxyType({"quick": 3, "submission": 5})
Precision = Literal["fp32", "fp16", "bf16", "int8", "int4"]
PRECISIONS: tuple[Precision, ...] = typing.get_args(Precision)
OptLevel = Literal["disable", "basic", "extended", "all"]
ExecutionMode = Literal["sequential", "parallel"]
DataSource = Literal["synthetic", "npy", "imagenet", "photos"]
OptionValue = str | int | float | bool
T = typing.TypeVar("T")
# Upper bounds, far above any real benchmark, that turn a typo (an extra zero, a pasted
# timestamp) into a ConfigError before a model is built, not a failed allocation or endless run.
MAX_BATCH_SIZE = 65536
MAX_DIM = 1 << 20  # one symbolic dimension (sequence length, image side)
MAX_SAMPLE_COUNT = 10**8  # samples or queries: QSL size, LoadGen counts, warm-up queries
MAX_DURATION_MS = 7 * 24 * 3600 * 1000  # seven days
MAX_THREADS = 4096
MAX_SEED = 2**32 - 1  # numpy's seed range
CPU_INTERVAL_MS = 1000  # the host CPU sampler's default: 10 Hz cost Offline 1.3-2.4 %
MAX_TRIALS = 100
MAX_PEAK_TFLOPS = 1e6  # an exaflop/s: more than any single device
# One input's elements, batch x one of its dims: 8 GiB of float32, past 32-bit indexing.
MAX_INPUT_ELEMENTS = 2**31


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """Which ONNX model to run: a zoo generator (`zoo`) or a file (`path`).

    `generator`: a zoo model's generator version (harness.records.generators); unset, the
    current one, which the request then states.
    """

    zoo: str | None = None
    path: str | None = None
    generator: int | None = None
    precision: Precision = "fp32"
    dims: Mapping[str, int] = field(default_factory=dict)
    loadgen_name: str | None = None
    conversion: Mapping[str, OptionValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.zoo is None) == (self.path is None):
            raise ValueError(
                "zoo: give exactly one of 'zoo' (a generated model) or 'path' (an ONNX file)"
            )
        if self.generator is not None and self.zoo is None:
            raise ValueError("generator: only a zoo model has a generator version")
        if self.generator is not None and self.generator < 1:
            raise ValueError(f"generator: must be >= 1, got {self.generator}")
        if self.loadgen_name is not None and not re.fullmatch(
            r"[A-Za-z0-9_.-]+", self.loadgen_name
        ):
            raise ValueError(
                f"loadgen_name: {self.loadgen_name!r} must use only letters, digits, '_', '.', '-'"
            )
        for name, value in self.dims.items():
            if value < 1:
                raise ValueError(f"dims.{name}: must be >= 1, got {value}")
            _check_range(f"dims.{name}", value, 1, MAX_DIM)

    @property
    def name(self) -> str:
        """Short model name used in run directory names and LoadGen's config lookup."""
        return model_name(self)


@dataclass(frozen=True, kw_only=True)
class RuntimeConfig:
    """onnxruntime session options that change performance."""

    graph_optimization_level: OptLevel = "all"
    intra_op_threads: int = 0
    inter_op_threads: int = 0
    execution_mode: ExecutionMode = "sequential"
    allow_spinning: bool = True
    provider_options: Mapping[str, Mapping[str, OptionValue]] = field(default_factory=dict)
    # A part of the target's provider chain, in its order (e.g. CUDA without TensorRT); empty:
    # the whole chain.
    providers: tuple[str, ...] = ()
    allow_cpu_fallback: bool = False
    include_host_copies: bool = False
    io_binding: bool = False

    def __post_init__(self) -> None:
        if self.intra_op_threads < 0 or self.inter_op_threads < 0:
            raise ValueError("intra_op_threads/inter_op_threads: must be >= 0 (0 = default)")
        _check_range("intra_op_threads", self.intra_op_threads, 0, MAX_THREADS)
        _check_range("inter_op_threads", self.inter_op_threads, 0, MAX_THREADS)
        if len(set(self.providers)) != len(self.providers):
            raise ValueError(f"providers: names a provider twice: {list(self.providers)}")


@dataclass(frozen=True, kw_only=True)
class DataConfig:
    """Where the QSL's samples come from."""

    source: DataSource = "synthetic"
    dir: str | None = None
    seed: int = 0
    total_sample_count: int = 1024
    labels: bool = False

    def __post_init__(self) -> None:
        if self.total_sample_count < 1:
            raise ValueError(f"total_sample_count: must be >= 1, got {self.total_sample_count}")
        _check_range("total_sample_count", self.total_sample_count, 1, MAX_SAMPLE_COUNT)
        _check_range("seed", self.seed, 0, MAX_SEED)
        if (self.source in ("npy", "imagenet")) != (self.dir is not None):
            raise ValueError("dir: required when source is 'npy' or 'imagenet', and only then")
        if self.labels and self.source == "synthetic":
            raise ValueError("labels: true needs source 'npy' with a labels file in data.dir")

    @property
    def has_labels(self) -> bool:
        """Whether accuracy is scored against labels: npy with `labels: true`; imagenet, photos."""
        return self.labels or self.source in ("imagenet", "photos")


@dataclass(frozen=True, kw_only=True)
class WarmupConfig:
    """Untimed inferences before LoadGen starts; they also calibrate LoadGen's expectations."""

    min_queries: int = 10
    min_duration_ms: int = 1000

    def __post_init__(self) -> None:
        if self.min_queries < 1:
            raise ValueError(f"min_queries: must be >= 1, got {self.min_queries}")
        if self.min_duration_ms < 0:
            raise ValueError(f"min_duration_ms: must be >= 0, got {self.min_duration_ms}")
        _check_range("min_queries", self.min_queries, 1, MAX_SAMPLE_COUNT)
        _check_range("min_duration_ms", self.min_duration_ms, 0, MAX_DURATION_MS)


@dataclass(frozen=True, kw_only=True)
class QuickConfig:
    """LoadGen limits of the quick profile (development only, never submission-valid)."""

    min_duration_ms: int = 15000
    min_query_count: int = 100
    performance_sample_count: int = 256
    accuracy_sample_count: int = 64

    def __post_init__(self) -> None:
        keys = ("min_duration_ms", "min_query_count", "performance_sample_count")
        for key in (*keys, "accuracy_sample_count"):
            if getattr(self, key) < 1:
                raise ValueError(f"{key}: must be >= 1, got {getattr(self, key)}")
        _check_range("min_duration_ms", self.min_duration_ms, 1, MAX_DURATION_MS)
        for key in (*keys[1:], "accuracy_sample_count"):
            _check_range(key, getattr(self, key), 1, MAX_SAMPLE_COUNT)


@dataclass(frozen=True, kw_only=True)
class TelemetryConfig:
    """How power, temperature and the host CPU are sampled during the measured window.

    Attributes:
        interval_ms: Power, temperature and device clocks (NVML, amdsmi, RAPL, a meter).
        cpu_interval_ms: The host CPU's clocks, busy share, load and temperatures; None:
            CPU_INTERVAL_MS (its wake-ups cost Offline throughput: README, Overhead).
    """

    interval_ms: int = 100
    cpu_interval_ms: int | None = None
    # A meter's argv: no shell; it runs on the user's opt-in only (telemetry.external.py)
    external_command: tuple[str, ...] | None = None
    external_csv: str | None = None

    def __post_init__(self) -> None:
        _check_range("interval_ms", self.interval_ms, 10, 10000)
        _check_range("cpu_interval_ms", self.cpu_interval_ms, 10, 10000)
        argv = self.external_command
        if argv is not None and (not argv or not all(argv)):
            raise ValueError(
                "external_command: give a program and its arguments as a list of non-empty "
                f"strings, e.g. [ipmitool, dcmi, power, reading]; got {list(argv)}"
            )


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    """The Server scenario: Poisson arrivals at target_qps, answered by a dynamic batcher.

    Attributes:
        target_qps: The arrival rate; None finds the highest valid rate first (a peak search
            of short runs, then confirming performance runs: harness.analysis.capsearch).
        latency_bound_ms: The p99 latency bound; None takes mlperf.conf's (15 ms for
            resnet50, 10 ms for models mlperf.conf does not name).
        max_wait_ms: How long the batcher may hold a batch open for more queries; None
            derives it from the bound and the measured batch costs (harness.loadgen.batching).
        queue_depth: Queries waiting at most; LoadGen's issue blocks when it is full.
        workers: Threads that each run batches on their own executor (one session); None:
            one per usable CPU core (per intra_op_threads cores if set) on a CPU, one on a GPU.
    """

    target_qps: float | None = None
    latency_bound_ms: float | None = None
    max_wait_ms: float | None = None
    queue_depth: int = 1024
    workers: int | None = None

    def __post_init__(self) -> None:
        for key, value, high in (
            ("target_qps", self.target_qps, 1e7),
            ("latency_bound_ms", self.latency_bound_ms, 3.6e6),
        ):
            if value is not None and not (math.isfinite(value) and 0 < value <= high):
                raise ValueError(f"{key}: must be > 0 and <= {high:g}, got {value}")
        wait = self.max_wait_ms
        if wait is not None and not (math.isfinite(wait) and 0 <= wait <= 1000):
            raise ValueError(f"max_wait_ms: must be 0..1000, got {wait}")
        _check_range("queue_depth", self.queue_depth, 1, 1 << 20)
        _check_range("workers", self.workers, 1, 64)


# MLPerf's mlperf.conf sets MultiStream's query at 8 samples; a submission may not change it.
MULTISTREAM_SAMPLES_PER_QUERY = 8


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """One benchmark: a model, a LoadGen scenario, a batch size and runtime settings.

    ``batch_size`` is the model's compiled batch: SingleStream's is 1, MultiStream's is the
    samples per query (8 in MLPerf), Offline's and Server's are the largest batch run (Server's
    batcher pads a short batch to it, as fixed-shape engines and CUDA graphs need).
    """

    schema_version: int = SCHEMA_VERSION
    name: str
    scenario: ScenarioName
    model: ModelConfig
    batch_size: int = 1
    trials: int | None = None
    peak_tflops: float | None = None
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)
    data: DataConfig = field(default_factory=DataConfig)
    warmup: WarmupConfig = field(default_factory=WarmupConfig)
    quick: QuickConfig = field(default_factory=QuickConfig)
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    # A generative model's queries (harness.generation); None for every other model.
    generation: GenerationConfig | None = None

    def __post_init__(self) -> None:
        if self.generation is not None:
            check_generative(
                scenario=self.scenario,
                zoo=self.model.zoo,
                batch_size=self.batch_size,
                target_qps=self.server.target_qps,
                # the intra-op threads reach genai's session (genai_config's overlay)
                runtime_set=dataclasses.replace(self.runtime, intra_op_threads=0)
                != RuntimeConfig(),
                data_source=self.data.source,
            )
        if self.schema_version != SCHEMA_VERSION:
            raise ValueError(
                f"schema_version: this beyond-tops reads version {SCHEMA_VERSION}, "
                f"got {self.schema_version}; upgrade beyond-tops"
            )
        if self.batch_size < 1:
            raise ValueError(f"batch_size: must be >= 1, got {self.batch_size}")
        _check_range("batch_size", self.batch_size, 1, MAX_BATCH_SIZE)
        _check_input_size(self.model.dims, self.batch_size)
        peak = self.peak_tflops
        if peak is not None and not (math.isfinite(peak) and 0 < peak <= MAX_PEAK_TFLOPS):
            raise ValueError(
                f"peak_tflops: must be > 0 and <= {MAX_PEAK_TFLOPS:g} (dense TFLOP/s), got {peak}"
            )
        _check_range("trials", self.trials, 1, MAX_TRIALS)
        if self.scenario == "SingleStream" and self.batch_size != 1:
            raise ValueError(
                f"batch_size: SingleStream issues one sample per query, so it must be 1 "
                f"(got {self.batch_size}); use the Offline scenario for batching"
            )


@dataclass(frozen=True, kw_only=True)
class Suite:
    """A named list of scenario files run together."""

    name: str
    profile: ProfileName = "quick"
    scenarios: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.scenarios:
            raise ValueError("scenarios: list at least one scenario file")


def model_name(model: ModelConfig, override: Path | None = None) -> str:
    """The name a model goes by: a file's stem (the override's, else the scenario's), or the zoo's.

    The one home of this rule: run directories, results and LoadGen's key carry the name.
    """
    if override is None and model.zoo is not None:
        return model.zoo
    return Path(str(override or model.path)).stem


def _check_input_size(dims: Mapping[str, int], batch_size: int) -> None:
    """A ValueError when one input would exceed MAX_INPUT_ELEMENTS before a model is read.

    Axis 0 of every input is the batch, so each symbolic dim sits in an input of at least
    batch_size x that dim elements: a bound that never refuses a model that would fit.
    """
    for name, value in dims.items():
        if value * batch_size > MAX_INPUT_ELEMENTS:
            raise ValueError(
                f"model.dims.{name}: {value} x batch_size {batch_size} = {value * batch_size:,} "
                f"elements in one input, more than {MAX_INPUT_ELEMENTS:,}; "
                f"lower batch_size or model.dims.{name}"
            )


def _check_range(key: str, value: int | None, low: int, high: int) -> None:
    """A ValueError naming `key` unless low <= value <= high (None: unset, always fine)."""
    if value is not None and not low <= value <= high:
        raise ValueError(f"{key}: must be {low}..{high}, got {value}")


def as_profile(value: str, key: str = "profile") -> ProfileName:
    """`value` as a profile name; anything else is a ConfigError naming `key`."""
    return _one_of(value, PROFILES, key)


def as_precision(value: str, key: str = "precision") -> Precision:
    """`value` as a precision; anything else is a ConfigError naming `key`."""
    return _one_of(value, PRECISIONS, key)


def _one_of(value: str, allowed: tuple[T, ...], key: str) -> T:
    for choice in allowed:
        if value == choice:
            return choice
    names = ", ".join(str(choice) for choice in allowed)
    raise ConfigError(f"{key}: {value!r} is not allowed (allowed: {names})")


def load_scenario(path: Path) -> Scenario:
    """Read a scenario YAML file; every problem is a one-line ConfigError."""
    return load_as(path, Scenario)


def scenario_from_dict(data: object, where: str) -> Scenario:
    """A scenario from its JSON form (a job file), checked as strictly as a YAML file."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: scenario: expected a mapping of keys")
    return build_from(Scenario, data, where, "")


def scenario_to_dict(scenario: Scenario) -> dict[str, Any]:
    """The JSON form of a resolved scenario; `scenario_from_dict` reads it back unchanged.

    A scenario without a `generation` block (every non-generative one) is written without
    the key, byte for byte as before generative models existed (job.json, exported READMEs).
    """
    data = dataclasses.asdict(scenario)
    if data.get("generation") is None:
        data.pop("generation", None)
    if data["telemetry"]["cpu_interval_ms"] is None:  # likewise, as before the key existed
        del data["telemetry"]["cpu_interval_ms"]
    return data


def load_suite(path: Path) -> Suite:
    """Read a suite YAML file (a list of scenario files relative to it)."""
    return load_as(path, Suite)


def is_suite_file(path: Path) -> bool:
    """Whether a YAML file describes a suite (it has a top-level 'scenarios' list)."""
    data = read_yaml(path)
    return isinstance(data, dict) and "scenarios" in data
