"""Provider chains, the three CPU-fallback paths, option recording and the IO-binding data path.

onnxruntime is faked at its seam (`harness.runtime.session.ort.InferenceSession` and
`get_available_providers`) where a GPU is needed; the data paths run for real on the CPU.
"""

from __future__ import annotations

import ctypes
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from harness.config import RuntimeConfig
from harness.errors import ConfigError, DeviceError
from harness.models.registry import zoo_model_path
from harness.runner import _placement_warnings
from harness.runtime import session as session_mod
from harness.runtime.executors import DeviceExecutor, HostExecutor
from harness.runtime.session import SessionRequest, create_session, node_placement
from harness.runtime.targets import TARGETS, get_target

GPU_EPS = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]


@dataclass
class Arg:
    name: str
    shape: list[Any]
    type: str = "tensor(float)"


class FakeSession:
    """Stands in for onnxruntime.InferenceSession; records how it was built."""

    built: ClassVar[list[FakeSession]] = []
    fail_with: Exception | None = None
    uses: list[str] | None = None
    profile: Path | None = None

    def __init__(self, path: str, sess_options: Any, providers: Any, enable_fallback: int) -> None:
        self.path, self.options, self.chain = path, sess_options, list(providers)
        self.enable_fallback = enable_fallback
        FakeSession.built.append(self)
        if FakeSession.fail_with is not None:
            raise FakeSession.fail_with

    def get_providers(self) -> list[str]:
        return FakeSession.uses or [name for name, _ in self.chain]

    def get_provider_options(self) -> dict[str, dict[str, str]]:
        return {name: dict(options) for name, options in self.chain}

    def get_inputs(self) -> list[Arg]:
        return [Arg("input", [1, 3, 32, 32])]

    def get_outputs(self) -> list[Arg]:
        return [Arg("logits", [1, 10])]

    def run(self, names: Any, feeds: Any) -> list[np.ndarray]:
        return [np.zeros((1, 10), np.float32)]

    def end_profiling(self) -> str:
        return str(FakeSession.profile)


@pytest.fixture
def fake_ort(monkeypatch: pytest.MonkeyPatch) -> type[FakeSession]:
    FakeSession.built, FakeSession.fail_with, FakeSession.uses = [], None, None
    monkeypatch.setattr(session_mod.ort, "InferenceSession", FakeSession)
    monkeypatch.setattr(session_mod.ort, "get_available_providers", lambda: list(GPU_EPS))
    return FakeSession


def request(hw: str, tmp_path: Path, **runtime: Any) -> SessionRequest:
    return SessionRequest(
        model_path=tmp_path / "m.onnx",
        runtime=RuntimeConfig(**runtime),
        target=get_target(hw),
        dims={"batch": 1},
        cache_dir=tmp_path / "engines",
    )


def config_entry(fake: FakeSession, key: str) -> str | None:
    try:
        return str(fake.options.get_session_config_entry(key))
    except RuntimeError:  # onnxruntime's way of saying the key was never set
        return None


def test_cpu_chain_is_the_cpu_provider_alone(fake_ort: type[FakeSession], tmp_path: Path) -> None:
    session = create_session(request("cpu", tmp_path))
    (built,) = fake_ort.built
    assert built.chain == [("CPUExecutionProvider", {})]
    assert built.enable_fallback == 0
    assert session.providers == ("CPUExecutionProvider",)
    assert session.settings["requested_providers"] == ["CPUExecutionProvider"]


def test_nvidia_chain_is_tensorrt_then_cuda_with_cpu_fallback_disabled(
    fake_ort: type[FakeSession], tmp_path: Path
) -> None:
    session = create_session(request("nvidia", tmp_path))
    (built,) = fake_ort.built
    names = [name for name, _ in built.chain]
    assert names == ["TensorrtExecutionProvider", "CUDAExecutionProvider"]
    assert config_entry(built, "session.disable_cpu_ep_fallback") == "1"
    trt = dict(built.chain)["TensorrtExecutionProvider"]
    assert trt["trt_engine_cache_path"] == f"{tmp_path}/engines/tensorrt/engines"
    assert trt["trt_timing_cache_path"] == f"{tmp_path}/engines/tensorrt/timing"
    assert trt["trt_fp16_enable"] == "False"
    assert dict(built.chain)["CUDAExecutionProvider"]["cudnn_conv_algo_search"] == "EXHAUSTIVE"
    # Every option in effect is recorded for result.json.
    assert session.settings["provider_options"]["TensorrtExecutionProvider"] == trt
    assert session.settings["node_placement"] == {}


def test_scenario_provider_options_override_target_defaults(
    fake_ort: type[FakeSession], tmp_path: Path
) -> None:
    options = {
        "TensorrtExecutionProvider": {"trt_fp16_enable": True},
        "CUDAExecutionProvider": {"enable_cuda_graph": 1},
    }
    create_session(request("nvidia", tmp_path, provider_options=options))
    chain = dict(fake_ort.built[0].chain)
    assert chain["TensorrtExecutionProvider"]["trt_fp16_enable"] == "True"
    assert chain["CUDAExecutionProvider"]["enable_cuda_graph"] == "1"


def test_options_for_a_provider_the_target_does_not_use(
    fake_ort: type[FakeSession], tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"provider_options\.CUDAExecutionProvider: HW=cpu"):
        create_session(request("cpu", tmp_path, provider_options={"CUDAExecutionProvider": {}}))


def test_fallback_1_provider_not_installed(
    fake_ort: type[FakeSession], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        session_mod.ort, "get_available_providers", lambda: ["CPUExecutionProvider"]
    )
    with pytest.raises(DeviceError) as err:
        create_session(request("nvidia", tmp_path))
    message = str(err.value)
    assert "TensorrtExecutionProvider is not available" in message
    assert "onnxruntime==" in message  # what is installed instead
    assert "pip install onnxruntime-gpu" in message
    assert fake_ort.built == []  # refused before onnxruntime could warn and carry on


def test_fallback_2_provider_fails_at_creation(fake_ort: type[FakeSession], tmp_path: Path) -> None:
    fake_ort.fail_with = RuntimeError("CUDA failure 100: no CUDA-capable device is detected\nmore")
    with pytest.raises(DeviceError) as err:
        create_session(request("nvidia", tmp_path))
    message = str(err.value)
    assert "failed at session creation: CUDA failure 100" in message
    assert "no visible device" in message and "driver/CUDA mismatch" in message
    assert fake_ort.built[0].enable_fallback == 0  # onnxruntime must not retry on the CPU


def test_fallback_2_session_that_quietly_lost_its_gpu_providers(
    fake_ort: type[FakeSession], tmp_path: Path
) -> None:
    fake_ort.uses = ["CPUExecutionProvider"]
    with pytest.raises(DeviceError, match="TensorrtExecutionProvider did not load"):
        create_session(request("nvidia", tmp_path))


def test_fallback_3_nodes_placed_on_the_cpu_fail_the_session(
    fake_ort: type[FakeSession], tmp_path: Path
) -> None:
    fake_ort.fail_with = RuntimeError(
        "This session contains graph nodes that are assigned to the default CPU EP, but fallback "
        "to CPU EP has been explicitly disabled by the user."
    )
    with pytest.raises(DeviceError) as err:
        create_session(request("nvidia", tmp_path))
    assert "runtime.allow_cpu_fallback: true" in str(err.value)


def test_fallback_3_allowed_records_placement_and_flags_the_result(
    fake_ort: type[FakeSession], tmp_path: Path
) -> None:
    events = [
        {"cat": "Node", "name": f"n{i}_kernel_time", "args": {"node_index": str(i), "provider": p}}
        for i, p in enumerate(["CUDAExecutionProvider"] * 10 + ["CPUExecutionProvider"] * 2)
    ]
    fake_ort.profile = tmp_path / "profile.json"
    fake_ort.profile.write_text(json.dumps(events))
    session = create_session(request("nvidia", tmp_path, allow_cpu_fallback=True))
    main = fake_ort.built[0]
    assert [name for name, _ in main.chain][-1] == "CPUExecutionProvider"
    assert config_entry(main, "session.disable_cpu_ep_fallback") is None
    assert session.settings["node_placement"] == {
        "CUDAExecutionProvider": 10,
        "CPUExecutionProvider": 2,
    }
    (warning,) = _placement_warnings(session)
    assert "2 of 12 nodes ran on CPUExecutionProvider" in warning


def test_cpu_ep_added_without_permission_is_refused(
    fake_ort: type[FakeSession], tmp_path: Path
) -> None:
    fake_ort.uses = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    with pytest.raises(DeviceError, match="added CPUExecutionProvider"):
        create_session(request("nvidia", tmp_path))


def test_node_placement_from_a_real_profile(tmp_path: Path) -> None:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "p")
    real = ort.InferenceSession(
        str(zoo_model_path("tiny")), options, providers=["CPUExecutionProvider"]
    )
    real.run(None, {"input": np.zeros((1, 3, 32, 32), np.float32)})
    placement = node_placement(json.loads(Path(real.end_profiling()).read_text()))
    assert list(placement) == ["CPUExecutionProvider"] and placement["CPUExecutionProvider"] >= 4


def test_every_target_names_its_package_image_and_telemetry() -> None:
    assert {name: t.ort_package for name, t in TARGETS.items()} == {
        "cpu": "onnxruntime",
        "nvidia": "onnxruntime-gpu",
        "rocm": "onnxruntime-migraphx",
    }
    assert TARGETS["rocm"].provider_names == ("MIGraphXExecutionProvider",)
    assert {t.telemetry for t in TARGETS.values()} == {"rapl", "nvml", "amdsmi"}
    assert all(t.image.startswith("beyond-tops/") for t in TARGETS.values())


# --- the data paths, for real on the CPU -------------------------------------------------


def real_session(tmp_path: Path, batch: int) -> Any:
    return create_session(
        replace(request("cpu", tmp_path), model_path=zoo_model_path("tiny"), dims={"batch": batch})
    )


def samples(n: int) -> dict[str, np.ndarray]:
    return {"input": np.random.default_rng(0).standard_normal((n, 3, 32, 32), dtype=np.float32)}


def read(address: int, nbytes: int) -> np.ndarray:
    return np.frombuffer((ctypes.c_char * nbytes).from_address(address), dtype=np.float32).copy()


def test_device_path_single_matches_host_path(tmp_path: Path) -> None:
    session = real_session(tmp_path, 1)
    arrays = samples(4)
    host, device = HostExecutor(session), DeviceExecutor(session, include_host_copies=True)
    host.attach(arrays)
    device.attach(arrays)
    for row in range(4):
        expected = read(*host.run_single(row))
        np.testing.assert_allclose(read(*device.run_single(row)), expected, rtol=1e-5)
    assert device.data_path == "device+host-copies"


def test_device_gather_batches_on_the_device(tmp_path: Path) -> None:
    session = real_session(tmp_path, 4)
    arrays = samples(10)
    device = DeviceExecutor(session, include_host_copies=False)
    device.attach(arrays)
    assert device.run_batch([7, 2, 9]) == (0, 0)  # no copies back: responses carry no data
    gathered = device._gather["input"].output.numpy()
    np.testing.assert_array_equal(gathered, arrays["input"][[7, 2, 9, 9]])  # padded with the last
    host = HostExecutor(session)
    host.attach(arrays)
    base, stride = host.run_batch([7, 2, 9])
    on_device = device._binding.copy_outputs_to_cpu()[0]
    np.testing.assert_allclose(on_device[:3].ravel(), read(base, stride * 3), rtol=1e-5)
    assert device.data_path == "device"
