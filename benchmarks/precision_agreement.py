"""EfficientNet-Lite0 (real weights) in every precision against FP32 on the labelled photos.

Each precision's model is the one `harness run` measures: the scenario's model prepared by
harness.models.prepare (fp16/bf16 by onnxruntime's float16 converter, int8 by static QDQ
calibrated on the scenario's own samples), run at batch 1 over every QSL sample and compared
with the FP32 source on the whole softmax. Prints the README's precision table.

    .venv/bin/python benchmarks/precision_agreement.py [scenarios/efficientnet-lite0-offline.yaml]
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from harness.analysis.labels import scenario_labels
from harness.analysis.precision_agreement import (
    PrecisionAgreement,
    compare_precision,
    render_markdown,
)
from harness.config import Precision, Scenario, load_scenario
from harness.models.prepare import PreparedModel, prepare, sample_source
from harness.models.registry import cache_root
from harness.models.validate import resolve_dims
from harness.runtime.session import Session, SessionRequest, create_session
from harness.runtime.targets import get_target

PRECISIONS: tuple[Precision, ...] = ("fp32", "fp16", "int8")
SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "efficientnet-lite0-offline.yaml"


def with_precision(scenario: Scenario, precision: Precision, samples: int) -> Scenario:
    """The scenario at another precision; INT8 calibrates on all ``samples`` of its data."""
    conversion = {"calibration_samples": samples} if precision == "int8" else {}
    model = dataclasses.replace(scenario.model, precision=precision, conversion=conversion)
    return dataclasses.replace(scenario, model=model)


def _session(scenario: Scenario, prepared: PreparedModel) -> Session:
    return create_session(
        SessionRequest(
            model_path=prepared.info.path,
            runtime=scenario.runtime,
            target=get_target("cpu"),
            dims=resolve_dims(prepared.info, batch_size=1, dims=dict(scenario.model.dims)),
            cache_dir=cache_root() / "engines",
        )
    )


def _outputs(session: Session, scenario: Scenario) -> dict[int, np.ndarray]:
    source = sample_source(scenario, session)
    feeds = {s.name: np.empty(s.shape, dtype=s.dtype) for s in session.inputs}
    outputs = {}
    for index in range(source.total_count):
        source.fill([index], feeds)
        outputs[index] = session.run(feeds)[0][0].copy()
    return outputs


def measure(
    scenario: Scenario, precisions: Sequence[Precision] = PRECISIONS
) -> list[PrecisionAgreement]:
    """Each precision's row, in ``precisions`` order, against the FP32 source's outputs."""
    target = get_target("cpu")
    labels = scenario_labels(scenario.data) if scenario.data.has_labels else None
    reference: dict[int, np.ndarray] | None = None
    rows = []
    for precision in precisions:
        probe = prepare(scenario, target=target, cpu_isa=())
        count = sample_source(scenario, probe.reference).total_count
        variant = with_precision(scenario, precision, count)
        prepared = prepare(variant, target=target, cpu_isa=())
        if reference is None:
            reference = _outputs(prepared.reference, variant)
        outputs = _outputs(_session(variant, prepared), variant)
        rows.append(compare_precision(precision, outputs, reference, labels))
    return rows


def main(argv: Sequence[str]) -> int:
    scenario = load_scenario(Path(argv[0]) if argv else SCENARIO)
    print(render_markdown(measure(scenario)), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
