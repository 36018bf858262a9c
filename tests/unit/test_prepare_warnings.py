"""prepare() passes on what the recipe means for this CPU: INT8 saturation without a dot product."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.config import OptionValue, Scenario, load_scenario
from harness.models.prepare import prepare
from harness.runtime.targets import get_target

SCENARIOS_DIR = Path(__file__).resolve().parents[2] / "scenarios"
AVX2_ONLY = ("avx2", "fma")
VNNI = ("avx2", "avx512f", "avx512_vnni")


def _int8(conversion: dict[str, OptionValue]) -> Scenario:
    tiny = load_scenario(SCENARIOS_DIR / "tiny-singlestream.yaml")
    model = dataclasses.replace(tiny.model, precision="int8", conversion=conversion)
    return dataclasses.replace(tiny, model=model)


def _saturation(warnings: list[str]) -> list[str]:
    return [w for w in warnings if "saturate" in w]


def test_an_int8_model_for_a_cpu_without_a_dot_product_warns_and_names_the_fix() -> None:
    cpu = get_target("cpu")
    eight_bit = _int8({"calibration_samples": 8})
    (warning,) = _saturation(prepare(eight_bit, target=cpu, cpu_isa=AVX2_ONLY).warnings)
    assert "model.conversion: {reduce_range: true}" in warning
    assert _saturation(prepare(eight_bit, target=cpu, cpu_isa=VNNI).warnings) == []
    seven_bit = _int8({"calibration_samples": 8, "reduce_range": True})
    prepared = prepare(seven_bit, target=cpu, cpu_isa=AVX2_ONLY)
    assert (
        _saturation(prepared.warnings) == []
        and prepared.precision["recipe"]["params"]["reduce_range"] is True
    )
