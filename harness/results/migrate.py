"""Migrations of result.json data from older schema versions, one function per step.

History:
    1. The first result: no fingerprint, preflight, telemetry or image (not readable now).
    2. + fingerprint, preflight, telemetry over LoadGen's window, image; later accuracy,
       precision and utilization. Blocks were free-form objects; optional keys could be absent.
    3. Typed records: every block has a fixed key set (null where a value does not apply);
       ``utilization.utilization`` is ``utilization.fraction_of_peak``; ``runtime.cuda_graphs``
       is always present; ``accuracy.against_fp32`` has every metric key.
    4. ``utilization`` says how its peak was found (``peak_basis``) and carries the measured
       attainable rate (``attainable_tflops``, ``attainable_method``, ``fraction_of_attainable``);
       older results did not measure it, so they read as null. MultiStream and Server:
       ``latency_ns.early_stopping_p99`` and ``server`` (null before).
    5. ``files``: the run directory's data files by what they hold (query_latencies.npz,
       telemetry.csv, cpu_telemetry.csv); null before, when none was listed.
    6. ``accuracy.not_measurable``: why the FP32 reference cannot judge accuracy (it answers
       alike for every input), the verdict then "not measurable"; null before: not checked.
    7. ``plausibility``: the physics check's verdict (IMPLAUSIBLE where achieved FLOP/s exceed
       the measured GEMM rate or the peak by more than a margin). Older results are judged
       from their own recorded figures when read, so an impossible old run is flagged too.
    8. ``label``: the name given with ``--label`` (null before: readers show the run
       directory's name); ``memory``: peak RSS over the window, onnxruntime's arena, device
       memory (null before: not measured).
    9. ``generation``: a generative model's token figures (tokens/s, TTFT and TPOT
       percentiles, output tokens per query, token checks); null for every other model, and
       for every older result (none of which ran a generative model).
   10. ``accuracy.tokens``: a generative model's greedy tokens against FP32's (agreement,
       first divergent positions, ROUGE-L); null for every other model and every older result;
       ``precision`` may be ``int4`` and ``accuracy.against_fp32.kind`` ``tokens``.
   11. Energy per output token: ``telemetry.tokens`` (a generative run's output tokens, the
       window's gaps to LoadGen's first issue and last completion, why nothing measured it)
       and each source's ``energy_per_token_mj`` and ``tokens_per_joule``; null before (not
       measured) and for every other model.
   12. ``generation.ttft_early_stopping`` / ``tpot_early_stopping``: LoadGen's early-stopping
       result for each token latency (``text``; ``p90_ns`` / ``p99_ns``: the estimates it
       states, SingleStream only); null in every older result.
   13. ``generation.concurrency``: Server's continuous batch, rows per decode step and the
       queries that joined a running batch; null for every older result (none batched so).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping

from harness.analysis.plausibility import judge
from harness.errors import ResultError
from harness.records.codec import from_data, to_object
from harness.records.measures import Utilization
from harness.strictjson import Json, JsonObject

Data = JsonObject

AGREEMENT_METRICS = (
    "top1_agreement",
    "max_abs_error",
    "mean_abs_error",
    "cosine_similarity",
    "min_cosine_similarity",
)
LABEL_METRICS = ("top1", "top5", "fp32_top1", "fp32_top5")
UTILIZATION_OPTIONAL = (
    "macs_per_sample",
    "peak_name",
    "peak_precision",
    "peak_source",
    "peak_assumptions",
)


def fill_accuracy(block: Mapping[str, Json]) -> Data:
    """The accuracy block with every metric key: a metric that does not apply is null.

    Schema 2 left such keys out; schema 3 writes them.
    """
    out = copy.deepcopy(dict(block))
    fp32 = out.get("against_fp32")
    if isinstance(fp32, dict):
        for key in AGREEMENT_METRICS:
            fp32.setdefault(key, None)
    labels = out.get("against_labels")
    if isinstance(labels, dict):
        for key in LABEL_METRICS:
            labels.setdefault(key, None)
    return out


def migrate_2_to_3(data: Mapping[str, Json]) -> Data:
    """Schema 2 -> 3: rename and fill keys; values are never invented (absent stays absent)."""
    out = copy.deepcopy(dict(data))
    util = out.get("utilization")
    if isinstance(util, dict):
        if "utilization" in util:
            util["fraction_of_peak"] = util.pop("utilization")
        for key in UTILIZATION_OPTIONAL:
            util.setdefault(key, None)
        util.setdefault("approximations", [])
        util.setdefault("unknown_ops", [])
    runtime = out.get("runtime")
    if isinstance(runtime, dict):
        runtime.setdefault("cuda_graphs", False)
    accuracy = out.get("accuracy")
    if isinstance(accuracy, dict):
        out["accuracy"] = fill_accuracy(accuracy)
    out["schema_version"] = 3
    return out


def migrate_3_to_4(data: Mapping[str, Json]) -> Data:
    """Schema 3 -> 4: the peak's basis and the attainable rate were not known: null."""
    out = copy.deepcopy(dict(data))
    util = out.get("utilization")
    if isinstance(util, dict):
        for key in ("peak_basis", *ATTAINABLE_KEYS):
            util.setdefault(key, None)
    latency = out.get("latency_ns")
    if isinstance(latency, dict):
        latency.setdefault("early_stopping_p99", None)
    out.setdefault("server", None)
    out["schema_version"] = 4
    return out


def migrate_4_to_5(data: Mapping[str, Json]) -> Data:
    """Schema 4 -> 5: the run's data files were not listed: null (not guessed from names)."""
    out = copy.deepcopy(dict(data))
    out.setdefault("files", None)
    out["schema_version"] = 5
    return out


def migrate_5_to_6(data: Mapping[str, Json]) -> Data:
    """Schema 5 -> 6: whether the reference could judge accuracy was not checked: null."""
    out = copy.deepcopy(dict(data))
    accuracy = out.get("accuracy")
    if isinstance(accuracy, dict):
        accuracy.setdefault("not_measurable", None)
    out["schema_version"] = 6
    return out


def migrate_6_to_7(data: Mapping[str, Json]) -> Data:
    """Schema 6 -> 7: the physics check, judged from the result's own samples/s and FLOPs.

    A utilization block that does not decode is left for the loader to refuse by its key.
    """
    out = copy.deepcopy(dict(data))
    util, sps = out.get("utilization"), out.get("samples_per_second")
    try:
        record = from_data(Utilization, util, "utilization")
    except ResultError:
        out["schema_version"] = 7
        return out
    rate = float(sps) if isinstance(sps, int | float) and not isinstance(sps, bool) else None
    out.setdefault("plausibility", to_object(judge(record, rate)))
    out["schema_version"] = 7
    return out


def migrate_7_to_8(data: Mapping[str, Json]) -> Data:
    """Schema 7 -> 8: no label was given and memory was not measured: null, not guessed."""
    out = copy.deepcopy(dict(data))
    out.setdefault("label", None)
    out.setdefault("memory", None)
    out["schema_version"] = 8
    return out


def migrate_8_to_9(data: Mapping[str, Json]) -> Data:
    """Schema 8 -> 9: no older result ran a generative model: generation is null."""
    out = copy.deepcopy(dict(data))
    out.setdefault("generation", None)
    out["schema_version"] = 9
    return out


def migrate_9_to_10(data: Mapping[str, Json]) -> Data:
    """Schema 9 -> 10: no older result scored tokens against FP32: accuracy.tokens is null."""
    out = copy.deepcopy(dict(data))
    accuracy = out.get("accuracy")
    if isinstance(accuracy, dict):
        accuracy.setdefault("tokens", None)
    out["schema_version"] = 10
    return out


def migrate_10_to_11(data: Mapping[str, Json]) -> Data:
    """Schema 10 -> 11: no older result measured energy per output token: null."""
    out = copy.deepcopy(dict(data))
    telemetry = out.get("telemetry")
    if isinstance(telemetry, dict):
        telemetry.setdefault("tokens", None)
        sources = telemetry.get("sources")
        for source in sources.values() if isinstance(sources, dict) else ():
            if isinstance(source, dict):
                source.setdefault("energy_per_token_mj", None)
                source.setdefault("tokens_per_joule", None)
    out["schema_version"] = 11
    return out


def migrate_11_to_12(data: Mapping[str, Json]) -> Data:
    """Schema 11 -> 12: no older result kept LoadGen's token early stopping: both are null."""
    out = copy.deepcopy(dict(data))
    generation = out.get("generation")
    if isinstance(generation, dict):
        generation.setdefault("ttft_early_stopping", None)
        generation.setdefault("tpot_early_stopping", None)
    out["schema_version"] = 12
    return out


def migrate_12_to_13(data: Mapping[str, Json]) -> Data:
    """Schema 12 -> 13: no older result batched Server continuously: concurrency is null."""
    out = copy.deepcopy(dict(data))
    generation = out.get("generation")
    if isinstance(generation, dict):
        generation.setdefault("concurrency", None)
    out["schema_version"] = 13
    return out


ATTAINABLE_KEYS = ("attainable_tflops", "attainable_method", "fraction_of_attainable")

# version -> the step that lifts it by one
MIGRATIONS: dict[int, Callable[[Mapping[str, Json]], Data]] = {
    2: migrate_2_to_3,
    3: migrate_3_to_4,
    4: migrate_4_to_5,
    5: migrate_5_to_6,
    6: migrate_6_to_7,
    7: migrate_7_to_8,
    8: migrate_8_to_9,
    9: migrate_9_to_10,
    10: migrate_10_to_11,
    11: migrate_11_to_12,
    12: migrate_12_to_13,
}
OLDEST_READABLE = min(MIGRATIONS)


def upgrade(data: Mapping[str, Json], version: int, target: int) -> Data:
    """Apply each step from ``version`` up to ``target`` (the caller checked both)."""
    out = dict(data)
    for step in range(version, target):
        out = MIGRATIONS[step](out)
    return out
