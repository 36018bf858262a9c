"""Provider chains, the three CPU-fallback paths, option recording and the IO-binding data path.

onnxruntime is faked at its seam (`harness.runtime.session.ort.InferenceSession` and
`get_available_providers`) where a GPU is needed; the data paths run for real on the CPU.
"""

from __future__ import annotations

import ctypes
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ort_fakes import CPU, FakeSession

from harness.config import RuntimeConfig
from harness.errors import ConfigError, DeviceError
from harness.models.registry import zoo_model_path
from harness.runtime import session as session_mod
from harness.runtime.executors import DeviceExecutor, HostExecutor
from harness.runtime.session import (
    SessionRequest,
    create_helper_session,
    create_session,
    node_placement,
    placement_warnings,
)
from harness.runtime.targets import TARGETS, get_target

GPU_EPS = ["TensorrtExecutionProvider", "CUDAExecutionProvider", CPU]


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
        "CUDAExecutionProvider": {"cudnn_conv_algo_search": "HEURISTIC"},
    }
    create_session(request("nvidia", tmp_path, provider_options=options))
    chain = dict(fake_ort.built[0].chain)
    assert chain["TensorrtExecutionProvider"]["trt_fp16_enable"] == "True"
    assert chain["CUDAExecutionProvider"]["cudnn_conv_algo_search"] == "HEURISTIC"


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
    (warning,) = placement_warnings(session)
    assert "2 of 12 nodes ran on CPUExecutionProvider" in warning


def test_the_always_appended_cpu_provider_is_not_a_fallback(
    fake_ort: type[FakeSession], tmp_path: Path
) -> None:
    # onnxruntime lists CPUExecutionProvider in every session; the placement ban judges nodes.
    session = create_session(request("nvidia", tmp_path))
    assert session.providers == (*GPU_EPS[:2], CPU)
    assert config_entry(fake_ort.built[0], "session.disable_cpu_ep_fallback") == "1"


def test_tensorrt_cache_directories_exist_before_the_session(
    fake_ort: type[FakeSession], tmp_path: Path
) -> None:
    create_session(request("nvidia", tmp_path))
    trt = dict(fake_ort.built[0].chain)["TensorrtExecutionProvider"]
    assert Path(trt["trt_engine_cache_path"]).is_dir()
    assert Path(trt["trt_timing_cache_path"]).is_dir()


def test_migraphx_compiles_into_the_engine_cache(
    fake_ort: type[FakeSession], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        session_mod.ort, "get_available_providers", lambda: ["MIGraphXExecutionProvider", CPU]
    )
    create_session(request("rocm", tmp_path))
    migraphx = dict(fake_ort.built[0].chain)["MIGraphXExecutionProvider"]
    assert migraphx["migraphx_model_cache_dir"] == f"{tmp_path}/engines/migraphx"
    assert Path(migraphx["migraphx_model_cache_dir"]).is_dir()


def test_an_unwritable_cache_directory_is_a_config_error(
    fake_ort: type[FakeSession], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")
    options = {"TensorrtExecutionProvider": {"trt_engine_cache_path": str(tmp_path / "file/x")}}
    with pytest.raises(ConfigError, match=r"TensorrtExecutionProvider\.trt_engine_cache_path"):
        create_session(request("nvidia", tmp_path, provider_options=options))
    assert fake_ort.built == []


def test_runtime_providers_selects_cuda_alone(fake_ort: type[FakeSession], tmp_path: Path) -> None:
    session = create_session(request("nvidia", tmp_path, providers=("CUDAExecutionProvider",)))
    assert [name for name, _ in fake_ort.built[0].chain] == ["CUDAExecutionProvider"]
    assert session.settings["requested_providers"] == ["CUDAExecutionProvider"]
    assert not (tmp_path / "engines" / "tensorrt").exists()  # TensorRT is not in this chain


@pytest.mark.parametrize(
    ("providers", "message"),
    [
        (("ROCMExecutionProvider",), "not in HW=nvidia's chain"),
        (("CUDAExecutionProvider", "TensorrtExecutionProvider"), "must keep HW=nvidia's order"),
    ],
)
def test_runtime_providers_must_be_part_of_the_chain(
    fake_ort: type[FakeSession], tmp_path: Path, providers: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        create_session(request("nvidia", tmp_path, providers=providers))


def test_options_for_a_provider_left_out_of_the_chain(
    fake_ort: type[FakeSession], tmp_path: Path
) -> None:
    options = {"TensorrtExecutionProvider": {"trt_fp16_enable": True}}
    with pytest.raises(ConfigError, match="does not use this provider here"):
        create_session(
            request(
                "nvidia", tmp_path, providers=("CUDAExecutionProvider",), provider_options=options
            )
        )


@pytest.mark.parametrize(
    ("runtime", "message"),
    [
        (  # TensorRT first: nodes it takes never reach CUDA, so CUDA cannot capture them all
            {"provider_options": {"CUDAExecutionProvider": {"enable_cuda_graph": 1}}},
            r"chain is TensorrtExecutionProvider then CUDAExecutionProvider.*"
            r"runtime\.providers: \[CUDAExecutionProvider\]",
        ),
        (  # CUDA behind TensorRT would take what TensorRT declines, outside its graphs
            {"provider_options": {"TensorrtExecutionProvider": {"trt_cuda_graph_enable": "True"}}},
            r"runtime\.providers: \[TensorrtExecutionProvider\]",
        ),
        (
            {
                "providers": ("CUDAExecutionProvider",),
                "allow_cpu_fallback": True,
                "provider_options": {"CUDAExecutionProvider": {"enable_cuda_graph": "1"}},
            },
            "allow_cpu_fallback: true lets nodes run on the CPU",
        ),
    ],
)
def test_cuda_graphs_are_refused_where_they_cannot_work(
    fake_ort: type[FakeSession], tmp_path: Path, runtime: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        create_session(request("nvidia", tmp_path, **runtime))
    assert fake_ort.built == []


def test_cuda_graphs_on_a_single_provider_chain(
    fake_ort: type[FakeSession], tmp_path: Path
) -> None:
    runtime = {
        "providers": ("CUDAExecutionProvider",),
        "provider_options": {"CUDAExecutionProvider": {"enable_cuda_graph": 1}},
    }
    session = create_session(request("nvidia", tmp_path, **runtime))
    assert session.cuda_graphs and session.settings["cuda_graphs"] is True
    assert not create_session(request("nvidia", tmp_path)).cuda_graphs


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
    assert [t.telemetry for t in TARGETS.values()] == [
        ("rapl",),
        ("rapl", "nvml"),
        ("rapl", "amdsmi"),
    ]
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


def test_device_gather_session_has_concrete_shapes_is_warm_and_built_once(tmp_path: Path) -> None:
    session = real_session(tmp_path, 4)
    arrays = samples(10)
    device = DeviceExecutor(session, include_host_copies=False)
    device.attach(arrays)
    gather = device._gather["input"]
    shapes = {i.name: i.shape for i in gather._session.get_inputs()}
    assert shapes == {"samples": [10, 3, 32, 32], "indices": [4]}
    # Warmed at attach: the helper already ran once (rows 0) before any timed query.
    np.testing.assert_array_equal(gather.output.numpy(), arrays["input"][[0, 0, 0, 0]])
    device.attach({})
    device.attach(arrays)  # a second load of the same size reuses the compiled helper
    assert device._gather["input"]._session is gather._session
    assert len(device._gather_sessions) == 1


def test_device_gather_helper_takes_the_main_sessions_options(
    fake_ort: type[FakeSession], tmp_path: Path
) -> None:
    main = create_session(request("nvidia", tmp_path, intra_op_threads=3))
    create_helper_session(main, b"model")
    helper = fake_ort.built[-1]
    assert [name for name, _ in helper.chain] == ["CUDAExecutionProvider"]  # no engine build
    assert dict(helper.chain)["CUDAExecutionProvider"]["cudnn_conv_algo_search"] == "EXHAUSTIVE"
    assert config_entry(helper, "session.disable_cpu_ep_fallback") == "1"
    assert helper.options.intra_op_num_threads == 3
    assert helper.enable_fallback == 0


class BindSpy:
    """Wraps a real IOBinding and records every (re)binding made through it."""

    def __init__(self, binding: Any) -> None:
        self.binding, self.binds = binding, []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("bind"):
            self.binds.append(name)
        return getattr(self.binding, name)


@pytest.mark.parametrize(("graphs", "copies"), [(True, False), (True, True), (False, False)])
def test_cuda_graph_sessions_never_rebind_in_the_timed_path(
    tmp_path: Path, graphs: bool, copies: bool
) -> None:
    session = real_session(tmp_path, 1)
    session.cuda_graphs = graphs
    arrays = samples(5)
    host, device = (
        HostExecutor(real_session(tmp_path, 1)),
        DeviceExecutor(session, include_host_copies=copies),
    )
    host.attach(arrays)
    device.attach(arrays)
    spy = device._binding = BindSpy(device._binding)
    for row in (3, 0, 4):
        device.run_single(row)
        out = spy.binding.copy_outputs_to_cpu()[0]
        np.testing.assert_allclose(out.ravel(), read(*host.run_single(row)), rtol=1e-5)
    # A replayed CUDA graph reads the addresses it recorded: nothing may be bound anew.
    assert (spy.binds == []) == graphs


def test_cuda_graphs_refuse_outputs_without_a_fixed_shape(tmp_path: Path) -> None:
    session = real_session(tmp_path, 1)
    session.outputs = (replace(session.outputs[0], shape=("batch", 10)),)
    session.cuda_graphs = True
    with pytest.raises(ConfigError, match="cannot live at a fixed address"):
        DeviceExecutor(session, include_host_copies=False)
