"""discover_sources / gpu_inventory per hardware target, and no side effects at import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pynvml as real
import pytest
from pytest_mock import MockerFixture
from telemetry_fakes import FIXTURES, FakeSource

from harness.errors import ConfigError
from harness.telemetry import close_sources, discover_sources, gpu_inventory
from harness.telemetry.discover import NO_WALL_METER

RAPL_ROOT = FIXTURES / "rapl-2socket"


@pytest.fixture
def no_nvidia_driver(mocker: MockerFixture) -> Any:
    nv = mocker.patch("harness.telemetry.nvml.pynvml", autospec=True)
    nv.nvmlInit.side_effect = real.NVMLError(real.NVML_ERROR_LIBRARY_NOT_FOUND)
    return nv


def test_cpu_target_uses_rapl_and_says_there_is_no_wall_meter() -> None:
    sources, missing = discover_sources(hw="cpu", root=RAPL_ROOT)
    assert [(s.name, s.kind) for s in sources] == [
        ("cpu-package-0", "cpu"),
        ("dram-0", "dram"),
        ("cpu-package-1", "cpu"),
        ("dram-1", "dram"),
    ]
    assert missing == [("wall", NO_WALL_METER)]


def test_nvidia_target_without_a_driver_keeps_rapl_and_the_meter(
    no_nvidia_driver: Any, tmp_path: Path
) -> None:
    log = tmp_path / "meter.csv"
    log.write_text("timestamp,watts\n")
    sources, missing = discover_sources(
        hw="nvidia", root=tmp_path, external_command=["echo", "700"], external_csv=log
    )
    assert [s.name for s in sources] == ["wall"]
    assert [m[0] for m in missing] == ["rapl", "nvml", "wall"]
    assert missing[1][1].startswith("no NVIDIA driver: libnvidia-ml.so.1 not found")
    assert missing[2] == ("wall", "a second wall meter was given; only the first is used")
    no_nvidia_driver.nvmlInit.assert_called_once_with()


def test_rocm_target_without_amdsmi(mocker: MockerFixture, tmp_path: Path) -> None:
    mocker.patch.dict(sys.modules, {"amdsmi": None})
    sources, missing = discover_sources(hw="rocm", root=RAPL_ROOT, external_command=["false"])
    assert len(sources) == 4
    reasons = dict(missing)
    assert reasons["amdsmi"].endswith("pip install 'beyond-tops[rocm]'")
    assert reasons["wall"] == "wall: meter command exited 1"  # false's status


def test_gpu_sources_are_not_probed_for_the_cpu_target(no_nvidia_driver: Any) -> None:
    discover_sources(hw="cpu", root=RAPL_ROOT)
    no_nvidia_driver.nvmlInit.assert_not_called()


def test_unknown_target_is_a_config_error() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown hardware target 'tpu' \(allowed: cpu, nvidia, rocm\)"
    ):
        discover_sources(hw="tpu")
    with pytest.raises(ConfigError):
        gpu_inventory("tpu")


def test_gpu_inventory_per_target(no_nvidia_driver: Any, mocker: MockerFixture) -> None:
    assert gpu_inventory("cpu") == ([], [])
    gpus, [(source, _)] = gpu_inventory("nvidia")
    assert (gpus, source) == ([], "nvml")
    mocker.patch.dict(sys.modules, {"amdsmi": None})
    gpus, [(source, _)] = gpu_inventory("rocm")
    assert (gpus, source) == ([], "amdsmi")


def test_close_sources_closes_those_holding_a_session() -> None:
    class Held(FakeSource):
        closed = 0

        def close(self) -> None:
            self.closed += 1

    held = Held()
    close_sources([held, FakeSource("cpu-package-0", "cpu")])
    assert held.closed == 1


def test_import_starts_no_thread_and_touches_no_vendor_library() -> None:
    code = (
        "import sys, threading\n"
        "import harness.telemetry\n"
        "import pynvml\n"
        "assert threading.active_count() == 1, threading.enumerate()\n"
        "assert 'amdsmi' not in sys.modules\n"
        "assert pynvml.nvmlLib is None\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
