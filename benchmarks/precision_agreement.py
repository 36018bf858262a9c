"""EfficientNet-Lite0 (real weights) in every precision against FP32 on the labelled photos.

Each precision's model is the one `harness run` measures: the scenario's model prepared by
harness.models.prepare (fp16/bf16 by onnxruntime's float16 converter, int8 by static QDQ
calibrated on the scenario's own samples), run at batch 1 over every QSL sample and compared
with the FP32 source on the whole softmax. BF16, which onnxruntime's CPU provider cannot run,
is the harness's BF16 model with its BF16 rounding emulated in float32
(harness.models.bf16_emulation). Prints the README's precision table.

    .venv/bin/python benchmarks/precision_agreement.py [scenarios/efficientnet-lite0-offline.yaml]
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx

from harness.analysis.labels import scenario_labels
from harness.analysis.precision_agreement import (
    PrecisionAgreement,
    compare_precision,
    render_markdown,
)
from harness.config import Precision, Scenario, load_scenario
from harness.files import atomic_write_bytes
from harness.models.bf16_emulation import emulate_bf16
from harness.models.precision import convert
from harness.models.prepare import prepare, sample_source
from harness.models.recipes import default_recipe
from harness.models.registry import cache_root
from harness.models.validate import inspect_model, resolve_dims
from harness.runtime.session import Session, SessionRequest, create_session
from harness.runtime.targets import get_target

PRECISIONS: tuple[Precision, ...] = ("fp32", "fp16", "bf16", "int8")
SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "efficientnet-lite0-offline.yaml"


def with_precision(scenario: Scenario, precision: Precision, samples: int) -> Scenario:
    """The scenario at another precision; INT8 calibrates on all ``samples`` of its data."""
    conversion = {"calibration_samples": samples} if precision == "int8" else {}
    model = dataclasses.replace(scenario.model, precision=precision, conversion=conversion)
    return dataclasses.replace(scenario, model=model)


def _session(scenario: Scenario, path: Path) -> Session:
    return create_session(
        SessionRequest(
            model_path=path,
            runtime=scenario.runtime,
            target=get_target("cpu"),
            dims=resolve_dims(inspect_model(path), batch_size=1, dims=dict(scenario.model.dims)),
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


def bf16_emulated(source: Path) -> Path:
    """The harness's BF16 model of ``source``, rewritten to run on the CPU (bf16_emulation)."""
    cache = cache_root() / "converted"
    converted = convert(source, default_recipe("bf16"), calibration=None, cache=cache)
    path = cache / f"{converted.sha256[:16]}-bf16-emulated.onnx"
    if not path.is_file():
        emulated = emulate_bf16(onnx.load(str(converted.path)))
        atomic_write_bytes(path, emulated.SerializeToString())
    return path


def measure(
    scenario: Scenario, precisions: Sequence[Precision] = PRECISIONS
) -> list[PrecisionAgreement]:
    """Each precision's row, in ``precisions`` order, against the FP32 source's outputs.

    BF16 is emulated (onnxruntime's CPU provider has no BF16 kernels); its row says so.
    """
    target = get_target("cpu")
    labels = scenario_labels(scenario.data) if scenario.data.has_labels else None
    fp32 = prepare(scenario, target=target, cpu_isa=())
    count = sample_source(scenario, fp32.reference).total_count
    reference = _outputs(fp32.reference, scenario)
    rows = []
    for precision in precisions:
        variant = with_precision(scenario, precision, count)
        if precision == "bf16":
            path, name = bf16_emulated(fp32.source.path), "bf16 (emulated)"
        else:
            path, name = prepare(variant, target=target, cpu_isa=()).info.path, precision
        outputs = _outputs(_session(variant, path), variant)
        rows.append(compare_precision(name, outputs, reference, labels))
    return rows


def main(argv: Sequence[str]) -> int:
    scenario = load_scenario(Path(argv[0]) if argv else SCENARIO)
    print(render_markdown(measure(scenario)), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
