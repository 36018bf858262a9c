"""The fingerprint record: JSON kept as written, typed sections read leniently from it."""

from __future__ import annotations

import json
from pathlib import Path

from harness.records.fingerprint import Fingerprint
from harness.records.fingerprint_sections import (
    ContainerInfo,
    CpuInfo,
    GpuInfo,
    GpuProcess,
    HarnessInfo,
    MemoryInfo,
    NumaNode,
    section_json,
)

RESULT = Path(__file__).resolve().parents[2] / "fixtures" / "results" / "tiny-singlestream"


def _recorded() -> Fingerprint:
    data = json.loads((RESULT / "result.json").read_text())["fingerprint"]
    return Fingerprint.from_dict(data)


def test_a_recorded_fingerprint_writes_back_byte_for_byte() -> None:
    text = (RESULT / "result.json").read_text()
    recorded = json.dumps(json.loads(text)["fingerprint"], indent=2)
    assert json.dumps(_recorded().to_dict(), indent=2) == recorded


def test_typed_sections_of_a_recorded_fingerprint() -> None:
    fp = _recorded()
    assert (fp.cpu.model, fp.cpu.usable_cpus, fp.cpu.isa) == (
        "AMD EPYC",
        2,
        ("avx2", "avx512f", "avx512_vnni", "avx512_bf16"),
    )
    assert fp.cpu.numa_nodes == (NumaNode(node=0, cpulist="0-1"),)
    assert fp.memory.swap_total_bytes == 0
    assert (fp.container.detected, fp.container.evidence) == (False, ())
    assert fp.software.python.version == "3.11.7"
    assert fp.harness.git_dirty is True
    assert (fp.gpu_info, fp.env) == ((), {})
    # a section's JSON, written from its record, is the section as recorded
    assert section_json(fp.cpu) == fp.to_dict()["cpu"]
    assert section_json(fp.memory) == fp.to_dict()["memory"]
    assert section_json(fp.harness) == fp.to_dict()["harness"]


def test_values_of_another_kind_read_as_unknown() -> None:
    cpu = CpuInfo.from_dict(
        {"model": 7, "cores": True, "isa": "avx2", "cache_kib": {"L1d": 32, "L2": "1M"}}
    )
    assert (cpu.model, cpu.cores, cpu.isa, cpu.cache_kib) == (None, None, None, {"L1d": 32})
    assert MemoryInfo.from_dict({"total_bytes": 1.5}).total_bytes is None
    assert ContainerInfo.from_dict({}) == ContainerInfo()
    assert HarnessInfo.from_dict({"git_dirty": "yes"}) == HarnessInfo()


def test_gpu_facts_from_an_inventory() -> None:
    gpu = GpuInfo.from_dict(
        {
            "index": 1,
            "name": "NVIDIA H200",
            "memory_total_mib": 143771,
            "power_limit_w": 700.0,
            "processes": [{"pid": 42, "type": "compute", "used_memory_mib": 512}, "odd"],
            "throttle_reasons_active": ["gpu_idle"],
            "uuid": "GPU-beef",
        }
    )
    assert (gpu.index, gpu.memory_total_mib, gpu.power_limit_w) == (1, 143771, 700.0)
    assert gpu.processes == (GpuProcess(pid=42, name=None), GpuProcess(pid=None, name="odd"))
    assert gpu.throttle_reasons_active == ("gpu_idle",)


def test_an_empty_fingerprint_has_empty_sections() -> None:
    fp = Fingerprint(data={})
    assert (fp.cpu, fp.memory, fp.gpu_info, fp.missing) == (CpuInfo(), MemoryInfo(), (), [])
    assert fp.section("cpu") == {} and fp.gpus == []
