"""execution.containers: the Docker launcher of job files, against autospec'd Docker SDK objects."""

from __future__ import annotations

import dataclasses
import io
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from docker.models.containers import Container, ContainerCollection
from docker.models.images import Image, ImageCollection
from pytest_mock import MockerFixture

import docker
from harness.config import load_scenario
from harness.errors import ConfigError, DeviceError, Interrupted, StopSignals
from harness.execution import containers as hc
from harness.execution import containers_devices as hd
from harness.execution.campaign import is_out_of_memory
from harness.execution.images import ImageRef
from harness.execution.pipeline import WorkerError, new_run_dir, run_one
from harness.files import read_incomplete
from harness.generation import GenerationConfig
from harness.paths import CACHE_ENV, cache_root
from harness.records.job import Job, write_job
from harness.records.request import RunRequest
from harness.runtime.targets import TARGETS, resolve_options
from tests.conftest import TINY_SS, write_scenario

IMAGE_ID = "sha256:" + "ab" * 32
TAG = "beyond-tops/cpu:t"
IMAGE = ImageRef(id=IMAGE_ID, tag=TAG)
NO_DRIVER = 'could not select device driver "" with capabilities: [[gpu]]'


@pytest.fixture(autouse=True)
def all_gpus_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(hd.GPU_ENV, raising=False)


@pytest.fixture
def client(mocker: MockerFixture) -> Any:
    """A DockerClient whose every call is checked against the real SDK's signatures."""
    client = mocker.create_autospec(docker.DockerClient, instance=True)
    client.images = mocker.create_autospec(ImageCollection, instance=True)
    client.containers = mocker.create_autospec(ContainerCollection, instance=True)
    image = mocker.create_autospec(Image, instance=True)
    image.id, image.labels = IMAGE_ID, {}
    client.images.get.return_value = image
    client.info.return_value = {"Runtimes": {"runc": {}, "nvidia": {}}}
    return client


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"


@pytest.fixture
def job(tmp_path: Path, results: Path) -> Job:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    run_dir = results / "20261130T1-tiny"
    run_dir.mkdir(parents=True)
    request = RunRequest(scenario=scenario, scenario_path=Path("s.yaml"), profile="quick", hw="cpu")
    return Job(request=request, test="performance", run_dir=run_dir)


def job_file(job: Job) -> Path:
    return write_job(job, job.run_dir / "job.json")


def run_for(results: Path, hw: str = "cpu", image: str | None = TAG) -> hc.DockerRun:
    return hc.DockerRun(hw=hw, results=results, image=image, cache=results.parent / "cache")


def started(client: Any, mocker: MockerFixture, chunks: list[Any], code: int = 0) -> Any:
    container = mocker.create_autospec(Container, instance=True)
    container.attach.return_value = iter(chunks)
    container.wait.return_value = {"StatusCode": code}
    client.containers.run.return_value = container
    return container


def launcher(client: Any, run: hc.DockerRun) -> tuple[hc.DockerLauncher, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return hc.DockerLauncher(run, client=client, out=out, err=err), out, err


# ---- the container spec ----


def test_paths_are_the_same_inside_and_outside(job: Job, results: Path, tmp_path: Path) -> None:
    model = tmp_path / "models" / "my.onnx"
    model.parent.mkdir()
    model.write_bytes(b"onnx")
    job = dataclasses.replace(job, request=dataclasses.replace(job.request, model_override=model))
    kwargs = hc.container_kwargs(job_file(job), job, run_for(results), IMAGE, {})
    assert kwargs["command"] == [
        "python",
        "-m",
        "harness.execution.worker",
        str(job.run_dir / "job.json"),
    ]
    assert kwargs["volumes"] == {
        str(results): {"bind": str(results), "mode": "rw"},
        str(model): {"bind": str(model), "mode": "ro"},
        str(tmp_path / "cache"): {"bind": "/cache", "mode": "rw"},
    }
    assert kwargs["user"] == f"{os.getuid()}:{os.getgid()}"
    assert kwargs["working_dir"] == str(Path.cwd())
    assert kwargs["init"] is True and kwargs["detach"] is True
    assert kwargs["environment"] == {
        "BEYOND_TOPS_IMAGE_ID": IMAGE_ID,  # observe.image_info puts these into result.json
        "BEYOND_TOPS_IMAGE_TAG": TAG,
        "BEYOND_TOPS_CACHE": "/cache",
        "HOME": "/tmp",
    }
    assert "device_requests" not in kwargs and "devices" not in kwargs


def test_the_container_is_locked_down(job: Job, results: Path) -> None:
    kwargs = hc.container_kwargs(job_file(job), job, run_for(results), IMAGE, {})
    assert kwargs["network_mode"] == "none"
    assert kwargs["cap_drop"] == ["ALL"]
    assert kwargs["security_opt"] == ["no-new-privileges"]
    assert kwargs["pids_limit"] == hc.PIDS_LIMIT > 0


@pytest.mark.parametrize("allowed", [None, "1"])
def test_the_users_meter_opt_in_reaches_the_worker_and_nothing_else_does(
    job: Job, results: Path, monkeypatch: pytest.MonkeyPatch, allowed: str | None
) -> None:
    monkeypatch.setenv("NVIDIA_API_KEY", "nvapi-SECRET")  # the host's environment stays outside
    if allowed is None:
        monkeypatch.delenv("BEYOND_TOPS_ALLOW_METER_COMMAND", raising=False)
    else:
        monkeypatch.setenv("BEYOND_TOPS_ALLOW_METER_COMMAND", allowed)
    env = hc.container_kwargs(job_file(job), job, run_for(results), IMAGE, {})["environment"]
    assert env.get("BEYOND_TOPS_ALLOW_METER_COMMAND") == allowed
    assert "NVIDIA_API_KEY" not in env


@pytest.mark.parametrize("cdi", [False, True], ids=["gpus", "cdi"])
def test_cuda_visible_devices_selects_the_gpus_given(
    cdi: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(hd.GPU_ENV, "1, GPU-4f2a")
    (request,) = hd.device_kwargs("nvidia", cdi=cdi)["device_requests"]
    if cdi:
        assert request["DeviceIDs"] == ["nvidia.com/gpu=1", "nvidia.com/gpu=GPU-4f2a"]
    else:
        assert request["DeviceIDs"] == ["1", "GPU-4f2a"] and request["Count"] != -1
        assert request["Capabilities"] == [["gpu"]]
        assert hd.docker_cli_flags({"device_requests": [request]}) == ["--gpus=device=1,GPU-4f2a"]


def test_a_cuda_visible_devices_that_names_no_gpu_is_refused() -> None:
    with pytest.raises(DeviceError, match="CUDA_VISIBLE_DEVICES is set but names no GPU"):
        hd.device_kwargs("nvidia", environ={hd.GPU_ENV: " "})


def test_the_devices_asked_for_are_passed_on(job: Job, results: Path) -> None:
    devices = hd.device_kwargs("nvidia")
    kwargs = hc.container_kwargs(job_file(job), job, run_for(results), IMAGE, devices)
    (request,) = kwargs["device_requests"]
    assert request["Count"] == -1 and request["Capabilities"] == [["gpu"]]


def test_a_run_dir_outside_the_results_root_is_refused(
    job: Job, results: Path, tmp_path: Path
) -> None:
    elsewhere = dataclasses.replace(job, run_dir=tmp_path / "elsewhere")
    elsewhere.run_dir.mkdir()
    with pytest.raises(ConfigError, match=r"outside .*results directory containers see"):
        hc.container_kwargs(job_file(elsewhere), elsewhere, run_for(results), IMAGE, {})


def test_relative_model_and_data_paths_are_mounted_where_the_cwd_puts_them(
    job: Job, tmp_path: Path
) -> None:
    (tmp_path / "m.onnx").write_bytes(b"onnx")
    (tmp_path / "npy").mkdir()
    model = dataclasses.replace(job.request.scenario.model, zoo=None, generator=None, path="m.onnx")
    data = dataclasses.replace(job.request.scenario.data, source="npy", dir="npy")
    scenario = dataclasses.replace(job.request.scenario, model=model, data=data)
    request = dataclasses.replace(
        job.request, scenario=scenario, model_override=tmp_path / "gone.onnx"
    )
    job = dataclasses.replace(job, request=request)
    assert hc.input_paths(job, tmp_path) == [tmp_path / "m.onnx", tmp_path / "npy"]


def test_rocm_passes_kfd_dri_and_their_groups(mocker: MockerFixture) -> None:
    mocker.patch.object(hd.os.path, "exists", return_value=True)
    mocker.patch.object(hd, "rocm_groups", return_value=["44", "109"])
    kwargs = hd.device_kwargs("rocm")
    assert kwargs["devices"] == ["/dev/kfd:/dev/kfd:rwm", "/dev/dri:/dev/dri:rwm"]
    assert kwargs["group_add"] == ["44", "109"]


def test_rocm_groups_by_name_and_by_device_owner(tmp_path: Path, mocker: MockerFixture) -> None:
    (tmp_path / "dri").mkdir()
    for device in ("kfd", "dri/renderD128", "dri/card0"):
        (tmp_path / device).touch()
    groups = {"video": 44}  # no "render" group on this host
    mocker.patch.object(
        hd.grp, "getgrnam", side_effect=lambda name: mocker.Mock(gr_gid=groups[name])
    )
    owner = {os.getgid()} - {0}  # root's group is never worth adding
    assert hd.rocm_groups(tmp_path) == [str(g) for g in sorted({44} | owner)]


def test_rocm_without_kfd_says_so(mocker: MockerFixture) -> None:
    mocker.patch.object(hd.os.path, "exists", return_value=False)
    with pytest.raises(DeviceError, match=r"HW=rocm: /dev/kfd, /dev/dri not found"):
        hd.device_kwargs("rocm")


def test_the_cache_root_is_mounted_where_the_harness_looks(
    job: Job, results: Path, mocker: MockerFixture
) -> None:
    """Compiled engines (TensorRT, MIGraphX) live under the cache root, so on the host volume."""
    kwargs = hc.container_kwargs(job_file(job), job, run_for(results), IMAGE, {})
    assert kwargs["volumes"][str(results.parent / "cache")]["bind"] == str(hc.CONTAINER_CACHE)
    mocker.patch.dict(os.environ, {CACHE_ENV: kwargs["environment"][CACHE_ENV]})
    root = cache_root()
    assert root == Path(hc.CONTAINER_CACHE)
    for target in (TARGETS["rocm"], TARGETS["nvidia"]):
        for spec in target.providers:
            for key, value in resolve_options(spec, {}, str(root / "engines")).items():
                if "{cache}" in spec.options[key]:
                    assert Path(value).is_relative_to(root), (target.name, key, value)


def test_without_cache_the_local_runs_cache_is_mounted(
    job: Job, results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "local-cache"))
    run = dataclasses.replace(run_for(results), cache=None)
    kwargs = hc.container_kwargs(job_file(job), job, run, IMAGE, {})
    assert kwargs["volumes"][str(cache_root().resolve())]["bind"] == str(hc.CONTAINER_CACHE)
    assert cache_root() == tmp_path / "local-cache"


@pytest.mark.parametrize(
    ("status", "code"), [(0, 0), (1, 1), (4, 4), (129, 129), (130, 130), (143, 143), (137, -9)]
)
def test_exit_status_reads_as_a_local_workers(status: int, code: int) -> None:
    assert hc.exit_code(status) == code


# ---- launching ----


def test_a_launch_runs_the_worker_streams_its_output_and_returns_its_code(
    client: Any, mocker: MockerFixture, job: Job, results: Path
) -> None:
    chunks = [(b"tiny: VALID \xe2", None), (b"\x9c\x93\n", b"== progress\n"), (None, b"done")]
    container = started(client, mocker, chunks, code=1)
    launch, out, err = launcher(client, run_for(results))
    assert launch(job_file(job)) == 1
    assert out.getvalue() == "tiny: VALID \u2713\n"  # a character split across chunks survives
    assert err.getvalue() == f"== image {TAG} ({IMAGE_ID})\n== progress\ndone"
    (args, kwargs) = client.containers.run.call_args
    assert args == (IMAGE_ID,) and kwargs["command"][-1] == str(job.run_dir / "job.json")
    container.attach.assert_called_once_with(
        stdout=True, stderr=True, stream=True, logs=True, demux=True
    )
    container.remove.assert_called_once_with(force=True)
    assert (results.parent / "cache").is_dir()


def test_the_image_is_found_once_for_every_launch(
    client: Any, mocker: MockerFixture, job: Job, results: Path
) -> None:
    ensure = mocker.patch.object(hc, "ensure_image", return_value=IMAGE)
    launch, _, _ = launcher(client, run_for(results, image=None))
    for _ in range(2):
        started(client, mocker, [])
        assert launch(job_file(job)) == 0
    ensure.assert_called_once()
    assert ensure.call_args.args == ("cpu",)


def test_constructing_a_launcher_touches_nothing(mocker: MockerFixture, results: Path) -> None:
    connect = mocker.patch.object(hc, "connect")
    hc.DockerLauncher(run_for(results))
    connect.assert_not_called()


def test_interrupt_stops_the_worker_cleanly(
    client: Any, mocker: MockerFixture, job: Job, results: Path
) -> None:
    container = started(client, mocker, [])
    container.wait.side_effect = [KeyboardInterrupt, {"StatusCode": 130}]
    launch, _, _ = launcher(client, run_for(results))
    with pytest.raises(KeyboardInterrupt):
        launch(job_file(job))
    container.kill.assert_called_once_with(signal="SIGINT")
    container.remove.assert_called_once_with(force=True)


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["INT", "TERM", "HUP"]
)
def test_a_stop_signal_is_forwarded_and_the_container_removed(
    signum: int, client: Any, mocker: MockerFixture, job: Job, results: Path
) -> None:
    container = started(client, mocker, [])
    container.wait.side_effect = [Interrupted(signum), {"StatusCode": 128 + signum}]
    launch, _, _ = launcher(client, run_for(results))
    with pytest.raises(Interrupted):
        launch(job_file(job))
    container.kill.assert_called_once_with(signal=signal.Signals(signum).name)
    container.remove.assert_called_once_with(force=True)


def test_a_second_signal_while_stopping_still_removes_the_container(
    client: Any, mocker: MockerFixture, job: Job, results: Path
) -> None:
    container = started(client, mocker, [])
    container.wait.side_effect = [Interrupted(signal.SIGTERM), Interrupted(signal.SIGTERM)]
    launch, _, _ = launcher(client, run_for(results))
    with pytest.raises(Interrupted):
        launch(job_file(job))
    container.remove.assert_called_once_with(force=True)


def test_a_signal_while_the_container_starts_stops_and_removes_it(
    client: Any, mocker: MockerFixture, job: Job, results: Path
) -> None:
    container = started(client, mocker, [])

    def run(*args: Any, **kwargs: Any) -> Any:
        # arrives before the launcher holds the container (at this thread: other tests' threads
        # would take a process-wide one)
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        return container

    client.containers.run.side_effect = run
    container.wait.return_value = {"StatusCode": 143}
    launch, _, _ = launcher(client, run_for(results))
    with StopSignals(), pytest.raises(Interrupted):
        launch(job_file(job))
    container.kill.assert_called_once_with(signal="SIGTERM")
    container.remove.assert_called_once_with(force=True)
    container.attach.assert_not_called()


def test_a_container_the_daemon_will_not_remove_is_reported(
    client: Any, mocker: MockerFixture, job: Job, results: Path
) -> None:
    container = started(client, mocker, [], code=0)
    container.id = "c0ffee"
    container.remove.side_effect = docker.errors.APIError("500", explanation="busy")
    launch, _, err = launcher(client, run_for(results))
    assert launch(job_file(job)) == 0
    assert "warning: container c0ffee not removed: busy" in err.getvalue()


def test_a_container_that_cannot_start_fails_the_run_like_a_worker(
    client: Any, job: Job, results: Path
) -> None:
    client.containers.run.side_effect = docker.errors.APIError("500", explanation="no space")
    launch, _, _ = launcher(client, run_for(results))
    assert launch(job_file(job)) == 4
    recorded = read_incomplete(job.run_dir)
    assert recorded is not None and recorded.exit_code == 4
    assert recorded.cause == "failed: docker could not start the cpu container: no space"


def test_through_the_pipeline_a_refused_start_leaves_no_run_dir(
    client: Any, tmp_path: Path, results: Path
) -> None:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    request = RunRequest(
        scenario=scenario, scenario_path=tmp_path / "s.yaml", profile="quick", hw="cpu"
    )
    client.containers.run.side_effect = docker.errors.ImageNotFound("gone")
    launch, _, _ = launcher(client, run_for(results))
    run_dir = new_run_dir(request, results)
    with pytest.raises(WorkerError) as err:
        run_one(request, run_dir, launch=launch)
    assert err.value.exit_code == 4 and "is gone; run `harness image ensure`" in err.value.cause
    assert not run_dir.exists()


def test_a_worker_killed_by_the_oom_killer_reads_as_out_of_memory(
    client: Any, mocker: MockerFixture, tmp_path: Path, results: Path
) -> None:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    request = RunRequest(
        scenario=scenario, scenario_path=tmp_path / "s.yaml", profile="quick", hw="cpu"
    )
    started(client, mocker, [], code=137)
    launch, _, _ = launcher(client, run_for(results))
    with pytest.raises(WorkerError) as err:
        run_one(request, new_run_dir(request, results), launch=launch)
    assert is_out_of_memory(err.value)


# ---- the GPUs through Docker ----


def nvidia_host(
    client: Any, mocker: MockerFixture, *, refuse: dict[str, str], cdi_dirs: list[str]
) -> list[Any]:
    """A daemon without a registered nvidia runtime whose start answers per device driver."""
    client.info.return_value = {"Runtimes": {"runc": {}}, "CDISpecDirs": cdi_dirs}
    probes: list[Any] = []

    def create(image: str, command: list[str], **kwargs: Any) -> Any:
        (request,) = kwargs["device_requests"]
        probe = mocker.create_autospec(Container, instance=True)
        if request["Driver"] in refuse:
            probe.start.side_effect = docker.errors.APIError(
                "500 Server Error", explanation=refuse[request["Driver"]]
            )
        probes.append(probe)
        return probe

    client.containers.create.side_effect = create
    return probes


def launch_nvidia(client: Any, job: Job, results: Path) -> tuple[int, str]:
    """Launch on HW=nvidia; the exit code and the cause recorded if it failed to start."""
    launch, _, _ = launcher(client, run_for(results, hw="nvidia"))
    code = launch(job_file(job))
    recorded = read_incomplete(job.run_dir)
    return code, "" if recorded is None else recorded.cause


def test_a_registered_nvidia_runtime_needs_no_probe(
    client: Any, mocker: MockerFixture, job: Job, results: Path
) -> None:
    started(client, mocker, [])
    assert launch_nvidia(client, job, results) == (0, "")
    client.containers.create.assert_not_called()
    assert client.containers.run.call_args.kwargs["device_requests"] == [
        docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])
    ]


def test_the_toolkit_hook_without_an_nvidia_runtime_is_enough(
    client: Any, mocker: MockerFixture, job: Job, results: Path
) -> None:
    """`--gpus` needs nvidia-container-runtime-hook on dockerd's PATH, not a runtime entry."""
    probes = nvidia_host(client, mocker, refuse={}, cdi_dirs=[])
    started(client, mocker, [])
    assert launch_nvidia(client, job, results) == (0, "")
    (probe,) = probes
    probed = client.containers.create.call_args
    assert probed.args == (IMAGE_ID,)
    assert probed.kwargs["device_requests"] == hd.device_kwargs("nvidia")["device_requests"]
    probe.start.assert_called_once_with()
    probe.remove.assert_called_once_with(force=True)
    assert (
        client.containers.run.call_args.kwargs["device_requests"]
        == probed.kwargs["device_requests"]
    )


def test_a_daemon_without_a_gpu_driver_is_one_clear_error(
    client: Any, mocker: MockerFixture, results: Path
) -> None:
    probes = nvidia_host(client, mocker, refuse={"": NO_DRIVER}, cdi_dirs=[])
    launch, _, _ = launcher(client, run_for(results, hw="nvidia"))
    with pytest.raises(DeviceError) as err:
        launch.prepare()
    message = str(err.value)
    assert message.startswith("HW=nvidia: Docker cannot give containers the GPUs")
    assert NO_DRIVER in message and "runtimes: runc; CDI spec dirs: none" in message
    assert "nvidia-container-runtime-hook" in message and "nvidia-ctk cdi generate" in message
    assert "\n" not in message
    probes[0].remove.assert_called_once_with(force=True)
    client.containers.run.assert_not_called()


def test_cdi_is_used_where_gpus_is_refused(
    client: Any, mocker: MockerFixture, job: Job, results: Path
) -> None:
    probes = nvidia_host(client, mocker, refuse={"": NO_DRIVER}, cdi_dirs=["/etc/cdi"])
    started(client, mocker, [])
    assert launch_nvidia(client, job, results) == (0, "")
    assert len(probes) == 2
    (request,) = client.containers.run.call_args.kwargs["device_requests"]
    assert request == docker.types.DeviceRequest(driver="cdi", device_ids=["nvidia.com/gpu=all"])
    assert hd.docker_cli_flags({"device_requests": [request]}) == ["--device=nvidia.com/gpu=all"]


def test_neither_gpus_nor_cdi_reports_the_gpus_refusal(
    client: Any, mocker: MockerFixture, job: Job, results: Path
) -> None:
    unresolvable = "CDI device injection failed: unresolvable CDI devices nvidia.com/gpu=all"
    nvidia_host(client, mocker, refuse={"": NO_DRIVER, "cdi": unresolvable}, cdi_dirs=["/etc/cdi"])
    code, cause = launch_nvidia(client, job, results)
    assert code == 4 and "no GPU device driver" in cause and "CDI spec dirs: /etc/cdi)" in cause
    client.containers.run.assert_not_called()


def test_a_driver_found_but_failing_says_to_check_the_driver(
    client: Any, mocker: MockerFixture, job: Job, results: Path
) -> None:
    failure = (
        "failed to create task for container: OCI runtime create failed: nvidia-container-cli: "
        "initialization error: nvml error: driver not loaded"
    )
    nvidia_host(client, mocker, refuse={"": failure}, cdi_dirs=[])
    code, cause = launch_nvidia(client, job, results)
    assert code == 4 and "could not start a container with the GPUs" in cause
    assert "driver not loaded" in cause and "`nvidia-smi`" in cause


def test_a_probe_of_a_removed_image_says_so(client: Any, job: Job, results: Path) -> None:
    client.info.return_value = {"Runtimes": {"runc": {}}}
    client.containers.create.side_effect = docker.errors.ImageNotFound("no such image")
    code, cause = launch_nvidia(client, job, results)
    assert code == 4 and cause.endswith("is gone; run `harness image ensure`")


def test_could_not_select_device_driver_at_run_names_the_fix(
    client: Any, job: Job, results: Path
) -> None:
    client.containers.run.side_effect = docker.errors.APIError(
        "500 Server Error", explanation=NO_DRIVER
    )
    code, cause = launch_nvidia(client, job, results)
    assert code == 4 and "Docker cannot give containers the GPUs" in cause
    assert "nvidia-ctk runtime configure" in cause


def test_gpus_flags_for_the_docker_cli() -> None:
    assert hd.docker_cli_flags(hd.device_kwargs("nvidia")) == ["--gpus=all"]
    assert hd.docker_cli_flags(hd.device_kwargs("cpu")) == []


def test_a_generative_scenario_s_prompt_file_is_mounted(job: Job, tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text('{"prompt": "hi"}\n')
    generation = GenerationConfig(prompts="file", path="p.jsonl")
    scenario = dataclasses.replace(job.request.scenario, generation=generation)
    job = dataclasses.replace(job, request=dataclasses.replace(job.request, scenario=scenario))
    assert hc.input_paths(job, tmp_path) == [tmp_path / "p.jsonl"]
