"""Peak tables, device-name matching, the CPU peak model and peak resolution."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.analysis.peaks import (
    ACCELERATOR_PEAKS,
    PRECISIONS,
    Peak,
    cpu_peak,
    match_accelerator,
    resolve_peak,
)

FIXTURE = Path(__file__).parents[2] / "fixtures" / "results" / "tiny-singlestream" / "result.json"
# What each vendor's datasheet lists (dense): T4 (Turing) has no bf16/tf32/fp8 and the
# A100 no fp8; MI300X and Hopper list all six.
REQUIRED = {
    "H100 SXM": {"fp32", "tf32", "fp16", "bf16", "fp8", "int8"},
    "H200 SXM": {"fp32", "tf32", "fp16", "bf16", "fp8", "int8"},
    "A100 SXM 80GB": {"fp32", "tf32", "fp16", "bf16", "int8"},
    "L4": {"fp32", "tf32", "fp16", "bf16", "fp8", "int8"},
    "T4": {"fp32", "fp16", "int8"},
    "MI300X": {"fp32", "tf32", "fp16", "bf16", "fp8", "int8"},
}


def _cpu(isa: list[str], *, cores: int = 2, mhz: float | None = 2600, **extra: Any) -> dict:
    return {
        "model": "Test CPU",
        "vendor": "GenuineIntel",
        "isa": isa,
        "usable_cpus": cores,
        "cores": cores,
        "sockets": 1,
        "max_mhz": mhz,
        "current_mhz": None,
        **extra,
    }


@pytest.mark.parametrize("key", sorted(REQUIRED))
def test_required_accelerators_listed_with_sources(key: str) -> None:
    table = ACCELERATOR_PEAKS[key]
    assert set(table) == REQUIRED[key]
    for precision, peak in table.items():
        assert peak.precision == precision
        assert peak.name == key
        assert peak.source
        assert peak.tflops > 0


def test_dense_figures_from_the_datasheets() -> None:
    assert ACCELERATOR_PEAKS["H100 SXM"]["fp16"].tflops == 989.5  # 1,979 sparse / 2
    assert ACCELERATOR_PEAKS["H200 SXM"]["fp8"].tflops == 1979.0
    assert ACCELERATOR_PEAKS["A100 SXM 80GB"]["bf16"].tflops == 312.0
    assert ACCELERATOR_PEAKS["L4"]["int8"].tflops == 242.5
    assert ACCELERATOR_PEAKS["T4"]["fp16"].tflops == 65.0
    assert ACCELERATOR_PEAKS["MI300X"]["bf16"].tflops == 1307.4


def test_tensor_peaks_exceed_vector_fp32() -> None:
    for table in ACCELERATOR_PEAKS.values():
        assert table["fp16"].tflops > table["fp32"].tflops


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("Tesla T4", "T4"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM 80GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("NVIDIA A100-PCIE-40GB", "A100 PCIe 80GB"),
        ("NVIDIA L4", "L4"),
        ("AMD Instinct MI300X", "MI300X"),
        ("NVIDIA L40S", None),
        ("NVIDIA A10G", None),
        ("NVIDIA GH200 480GB", None),
        ("AMD Instinct MI300A", None),
    ],
)
def test_match_accelerator(name: str, key: str | None) -> None:
    assert match_accelerator(name) == key


def test_cpu_avx512_fp32_peak_exact() -> None:
    # 2 cores x 2 FMA units x 16 fp32 lanes x 2 FLOPs x 2.6 GHz = 332.8 GFLOP/s.
    peak = cpu_peak(_cpu(["avx2", "avx512f"]), "fp32")
    assert peak is not None
    assert peak.tflops == 0.3328
    assert peak.precision == "fp32"
    assert "2 FMA units" in peak.assumptions
    assert "cpufreq maximum" in peak.assumptions


def test_cpu_avx2_only() -> None:
    peak = cpu_peak(_cpu(["avx2"], cores=4, mhz=3000), "fp32")
    assert peak is not None
    assert peak.tflops == pytest.approx(4 * 2 * 8 * 2 * 3.0e9 / 1e12)


def test_cpu_amx_int8_and_bf16() -> None:
    cpu = _cpu(["avx2", "avx512f", "avx512_vnni", "amx_tile", "amx_bf16", "amx_int8"])
    int8, bf16 = cpu_peak(cpu, "int8"), cpu_peak(cpu, "bf16")
    assert int8 is not None and bf16 is not None
    assert int8.tflops == pytest.approx(2 * 2048 * 2.6e9 / 1e12)
    assert bf16.tflops == pytest.approx(2 * 1024 * 2.6e9 / 1e12)
    assert "AMX" in int8.assumptions


def test_cpu_vnni_and_avx512_bf16_without_amx() -> None:
    cpu = _cpu(["avx2", "avx512f", "avx512_vnni", "avx512_bf16"], cores=1, mhz=1000)
    int8, bf16 = cpu_peak(cpu, "int8"), cpu_peak(cpu, "bf16")
    assert int8 is not None and bf16 is not None
    assert int8.tflops == pytest.approx(256e9 / 1e12)  # 2 units x 64 bytes x 2 ops
    assert bf16.tflops == pytest.approx(128e9 / 1e12)  # twice fp32


def test_cpu_without_native_fp16_uses_the_fp32_rate() -> None:
    cpu = _cpu(["avx2"], cores=1, mhz=1000)
    fp16, fp32 = cpu_peak(cpu, "fp16"), cpu_peak(cpu, "fp32")
    assert fp16 is not None and fp32 is not None
    assert fp16.tflops == fp32.tflops
    assert "fp32 rate" in fp16.assumptions


def test_cpu_smt_threads_add_no_fma_units() -> None:
    peak = cpu_peak(_cpu(["avx2"], usable_cpus=8, cores=4, mhz=1000), "fp32")
    assert peak is not None
    assert peak.tflops == pytest.approx(4 * 32e9 / 1e12)


def test_cpu_current_clock_when_no_maximum() -> None:
    peak = cpu_peak(_cpu(["avx2"], cores=1, mhz=None, current_mhz=2000.0), "fp32")
    assert peak is not None
    assert peak.tflops == pytest.approx(32 * 2.0e9 / 1e12)
    assert "current clock" in peak.assumptions
    assert peak.basis == "guess"  # a VM's current clock is not its turbo clock


def test_a_cpufreq_maximum_clock_on_a_known_width_is_derived_not_guessed() -> None:
    peak = cpu_peak(_cpu(["avx2"]), "fp32")
    assert peak is not None and peak.basis == "derived"
    assert ACCELERATOR_PEAKS["H100 SXM"]["fp16"].basis == "datasheet"


def test_amd_avx512_is_taken_at_full_width_as_an_upper_bound() -> None:
    # Zen 4 (256-bit pipes) and Zen 5 (512-bit) look alike in a VM's flags; the peak is the
    # upper bound, and the assumptions say which parts reach half of it.
    amd = _cpu(["avx2", "avx512f", "avx512_vnni", "avx512_bf16"], vendor="AuthenticAMD")
    peak = cpu_peak(amd, "fp32")
    assert peak is not None
    assert peak.tflops == pytest.approx(0.3328)
    assert "Zen 4" in peak.assumptions
    assert peak.basis == "guess"  # even with the cpufreq maximum: the width is not known


@pytest.mark.parametrize(
    ("cpu", "precision"),
    [
        (_cpu(["avx2"], mhz=None), "fp32"),
        (_cpu([]), "fp32"),
        (_cpu(["avx2"], usable_cpus=None, cores=None), "fp32"),
        (_cpu(["avx2"]), "fp8"),
        (_cpu(["avx2"]), "tf32"),
    ],
)
def test_cpu_peak_none_when_unknown(cpu: dict, precision: str) -> None:
    assert cpu_peak(cpu, precision) is None


def test_cpu_peak_from_the_fixture_fingerprint() -> None:
    fingerprint = json.loads(FIXTURE.read_text())["fingerprint"]
    peak = resolve_peak(hw="cpu", precision="fp32", fingerprint=fingerprint)
    assert peak is not None
    # AMD EPYC, AVX-512 taken at full width, 2 cores, current clock 2596.144 MHz.
    assert peak.tflops == pytest.approx(2 * 64 * 2596.144e6 / 1e12)
    assert peak.basis == "guess"


def test_resolve_peak_override_wins() -> None:
    fingerprint = {"gpus": [{"name": "NVIDIA H100 80GB HBM3"}]}
    peak = resolve_peak(hw="nvidia", precision="fp16", fingerprint=fingerprint, override_tflops=5.0)
    assert peak == Peak(
        name="user override",
        precision="fp16",
        tflops=5.0,
        source="user override in scenario",
        basis="user",
    )


def test_resolve_peak_gpu_table() -> None:
    fingerprint = {"gpus": [{"name": "NVIDIA H100 80GB HBM3"}], "cpu": _cpu(["avx2"])}
    assert (
        resolve_peak(hw="nvidia", precision="fp16", fingerprint=fingerprint)
        == (ACCELERATOR_PEAKS["H100 SXM"]["fp16"])
    )
    rocm = {"gpus": [{"name": "AMD Instinct MI300X"}]}
    assert (
        resolve_peak(hw="rocm", precision="int8", fingerprint=rocm)
        == (ACCELERATOR_PEAKS["MI300X"]["int8"])
    )


@pytest.mark.parametrize(
    ("hw", "fingerprint", "precision"),
    [
        ("nvidia", {"gpus": []}, "fp16"),
        ("nvidia", {"gpus": [{"name": "NVIDIA L40S"}]}, "fp16"),
        ("nvidia", {"gpus": [{"name": "Tesla T4"}]}, "bf16"),
        ("cpu", {}, "fp32"),
        ("tpu", {"gpus": [{"name": "NVIDIA L4"}]}, "fp32"),
    ],
)
def test_resolve_peak_none(hw: str, fingerprint: dict, precision: str) -> None:
    assert resolve_peak(hw=hw, precision=precision, fingerprint=fingerprint) is None


def test_peak_range_checks() -> None:
    with pytest.raises(ValueError, match="precision"):
        Peak(name="x", precision="fp64", tflops=1.0, source="s")
    with pytest.raises(ValueError, match="positive"):
        Peak(name="x", precision="fp32", tflops=0.0, source="s")
    assert set(PRECISIONS) == {"fp32", "tf32", "fp16", "bf16", "fp8", "int8"}
