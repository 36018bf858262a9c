"""The model a run measures: the FP32 source, converted to the scenario's precision (cached)."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.config import Scenario
from harness.datasets.imagenet import ImagenetSource
from harness.datasets.photos import PhotoSource
from harness.datasets.samples import NpySource, SampleSource, SyntheticSource
from harness.files import atomic_write_bytes
from harness.models.calibration import draw_calibration
from harness.models.precision import convert
from harness.models.recipes import (
    check_precision_supported,
    default_recipe,
    isa_for_precision,
    saturation_warnings,
)
from harness.models.registry import cache_root, zoo_model_path
from harness.models.validate import ModelInfo, inspect_model, resolve_dims
from harness.runtime.session import Session, SessionRequest, create_session
from harness.runtime.targets import HardwareTarget


@dataclass(frozen=True, kw_only=True)
class PreparedModel:
    """The measured model file, its FP32 source, and how one became the other."""

    info: ModelInfo
    dims: dict[str, int]
    source: ModelInfo
    reference: Session
    precision: dict[str, Any]
    kind: str
    warnings: list[str] = field(default_factory=list)


def prepare(
    scenario: Scenario,
    *,
    target: HardwareTarget,
    cpu_isa: Sequence[str],
    model_override: Path | None = None,
) -> PreparedModel:
    """Resolve, check and (for fp16/bf16/int8) convert the scenario's model."""
    precision = scenario.model.precision
    warnings = check_precision_supported(precision, hw=target.name, cpu_isa=cpu_isa)
    source = inspect_model(_source_path(scenario, model_override))
    dims, dropped = _dims(scenario, source, strict=model_override is None)
    warnings += dropped
    reference = _session(scenario, source, target, resolve_dims(source, batch_size=1, dims=dims))
    kind = "transformer" if _is_transformer(reference) else "cnn"
    recipe = default_recipe(precision, model_kind=kind, overrides=scenario.model.conversion)
    warnings += saturation_warnings(recipe, hw=target.name, cpu_isa=cpu_isa)
    calibration = None
    if recipe.method.startswith("static-"):
        calibration = draw_calibration(
            sample_source(scenario, reference),
            reference.inputs,
            count=int(recipe.params["calibration_samples"]),
            seed=int(recipe.params["seed"]),
            source_name=f"{scenario.data.source} data, seed {scenario.data.seed}",
        )
    converted = convert(
        source.path, recipe, calibration=calibration, cache=cache_root() / "converted"
    )
    info = source if converted.path == source.path else inspect_model(converted.path)
    record = {
        **converted.to_dict(),
        "precision": precision,
        "isa": isa_for_precision(precision, cpu_isa),
    }
    return PreparedModel(
        info=info,
        dims=resolve_dims(info, batch_size=scenario.batch_size, dims=dims),
        source=source,
        reference=reference,
        precision=record,
        kind="tensor" if kind == "transformer" else _output_kind(reference),
        warnings=warnings,
    )


def sample_source(scenario: Scenario, session: Session) -> SampleSource:
    """The QSL's data for a session's inputs."""
    if scenario.data.source == "npy":
        return NpySource(Path(str(scenario.data.dir)), session.inputs)
    if scenario.data.source == "imagenet":
        return ImagenetSource(Path(str(scenario.data.dir)), session.inputs)
    if scenario.data.source == "photos":
        return PhotoSource(session.inputs)
    return SyntheticSource(
        session.inputs, total_count=scenario.data.total_sample_count, seed=scenario.data.seed
    )


def reference_outputs(
    prepared: PreparedModel, source: SampleSource, indices: Sequence[int], *, data_key: str
) -> dict[int, np.ndarray]:
    """The FP32 source model's first output per sample (batch 1), computed once and cached.

    The cache key holds everything the outputs follow from: the source model's sha256, how
    the reference session runs it (its resolved input shapes and dtypes, providers and
    settings), the bytes of every input it is fed and the sample indices. A precision sweep
    over the same data computes the FP32 reference once; other dims (BERT at seq 128 and
    384) or regenerated .npy files in the same directory compute their own.
    """
    session = prepared.reference
    feeds = {s.name: np.empty(s.shape, dtype=s.dtype) for s in session.inputs}
    key = _reference_key(prepared, source, feeds, indices, data_key)
    path = cache_root() / "references" / f"{key}.npz"
    if path.is_file():
        with np.load(path) as cached:
            return {int(name): cached[name] for name in cached.files}
    outputs: dict[int, np.ndarray] = {}
    for index in indices:
        source.fill([index], feeds)
        outputs[index] = session.run(feeds)[0][0].copy()
    buffer = io.BytesIO()
    arrays: dict[str, Any] = {str(k): v for k, v in outputs.items()}
    np.savez(buffer, **arrays)
    atomic_write_bytes(path, buffer.getvalue())
    return outputs


def _reference_key(
    prepared: PreparedModel,
    source: SampleSource,
    feeds: Mapping[str, np.ndarray],
    indices: Sequence[int],
    data_key: str,
) -> str:
    session = prepared.reference
    how = {
        "model_sha256": prepared.source.sha256,
        "inputs": [[s.name, list(s.shape), s.dtype.str] for s in session.inputs],
        "providers": list(session.providers),
        "settings": session.settings,
        "data": data_key,
        "indices": list(indices),
    }
    digest = hashlib.sha256(json.dumps(how, sort_keys=True, default=str).encode())
    # The data's bytes, not its name: filling a sample costs a copy, the model a forward pass.
    for index in indices:
        source.fill([index], feeds)
        for name in sorted(feeds):
            digest.update(feeds[name].tobytes())
    return digest.hexdigest()[:32]


def data_key(scenario: Scenario, source: SampleSource) -> str:
    """A readable name of the QSL data; the reference cache also hashes the data itself.

    An ImageNet folder adds its content key (val_map.txt and every image's bytes).
    """
    data = scenario.data
    key = f"{data.source}:{data.dir}:{data.seed}:{data.total_sample_count}"
    if isinstance(source, ImagenetSource):
        key += f":{source.content_key}"
    return key


def _source_path(scenario: Scenario, override: Path | None) -> Path:
    if override is not None:
        return override
    if scenario.model.zoo is not None:
        return zoo_model_path(scenario.model.zoo, generator=scenario.model.generator)
    return Path(str(scenario.model.path))


def _dims(scenario: Scenario, info: ModelInfo, *, strict: bool) -> tuple[dict[str, int], list[str]]:
    dims = dict(scenario.model.dims)
    if strict:
        return dims, []
    symbolic = {d for shape in info.inputs.values() for d in shape if isinstance(d, str)}
    dropped = sorted(set(dims) - symbolic)
    for name in dropped:
        del dims[name]
    return dims, [
        f"model.dims.{name} ignored: --model {info.path} has no such dim" for name in dropped
    ]


def _session(
    scenario: Scenario, info: ModelInfo, target: HardwareTarget, dims: Mapping[str, int]
) -> Session:
    return create_session(
        SessionRequest(
            model_path=info.path,
            runtime=scenario.runtime,
            target=target,
            dims=dims,
            cache_dir=cache_root() / "engines",
        )
    )


def _is_transformer(session: Session) -> bool:
    return any(spec.dtype.kind in "iu" for spec in session.inputs)


def _output_kind(session: Session) -> str:
    """Classifier (top-1 comparable) when the first output is class indices or 2-D scores."""
    first = session.outputs[0]
    if first.dtype.kind in "iu" or len(first.shape) == 2:
        return "classifier"
    return "tensor"
