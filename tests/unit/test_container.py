"""harness.container against autospec'd Docker SDK objects: no daemon needed."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from docker.models.containers import Container, ContainerCollection
from docker.models.images import Image, ImageCollection
from pytest_mock import MockerFixture

import docker
from harness import container as hc
from harness.errors import DeviceError
from harness.models import registry
from harness.runtime.targets import TARGETS, resolve_options

IMAGE_ID = "sha256:" + "ab" * 32


@pytest.fixture
def client(mocker: MockerFixture) -> Any:
    """A DockerClient whose every call is checked against the real SDK's signatures."""
    client = mocker.create_autospec(docker.DockerClient, instance=True)
    client.api = mocker.create_autospec(docker.APIClient, instance=True)
    client.images = mocker.create_autospec(ImageCollection, instance=True)
    client.containers = mocker.create_autospec(ContainerCollection, instance=True)
    image = mocker.create_autospec(Image, instance=True)
    image.id = IMAGE_ID
    image.labels = {"beyond-tops.hw": "cpu"}
    client.images.get.return_value = image
    client.info.return_value = {"Runtimes": {"runc": {}, "nvidia": {}}}
    return client


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a Dockerfile, a lock and a filled wheelhouse for cpu."""
    (tmp_path / "docker" / "cpu").mkdir(parents=True)
    (tmp_path / "docker" / "cpu" / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "docker" / "cpu" / "requirements.lock").write_text("pip==1 \\\n  --hash=x\n")
    for name in ("cpu", "cpu-harness", "nvidia"):
        (tmp_path / "build" / "wheels" / name).mkdir(parents=True)
    (tmp_path / "build" / "wheels" / "cpu" / "pip-1-py3-none-any.whl").write_bytes(b"w")
    (tmp_path / ".dockerignore").write_text("# comment\n*\n!docker/\n!build/wheels/\n")
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "cli.py").write_text("print()\n")
    own = tmp_path / "build" / "wheels" / "cpu-harness" / "harness.lock"
    own.write_text(f"# source-sha256: {hc.source_digest(tmp_path)}\nbeyond-tops==0 \\\n")
    return tmp_path


def image_ref(tag: str = "beyond-tops/cpu:t") -> hc.ImageRef:
    return hc.ImageRef(id=IMAGE_ID, tag=tag, labels={})


# ---- build ----


def test_build_runs_without_network_and_passes_the_label_arguments(client: Any, repo: Path) -> None:
    client.api.build.return_value = iter([{"stream": "Step 1/1 : FROM scratch\n"}])
    ref = hc.build_image("cpu", base_image="stand-in:1", tag="t:1", repo=repo, client=client)
    kwargs = client.api.build.call_args.kwargs
    assert kwargs["network_mode"] == "none"
    assert kwargs["dockerfile"] == "docker/cpu/Dockerfile"
    assert kwargs["tag"] == "t:1" and kwargs["custom_context"] is True
    args = kwargs["buildargs"]
    assert args["BASE_IMAGE"] == "stand-in:1"
    assert args["HARNESS_VERSION"] and args["GIT_COMMIT"] == "unknown"  # tmp_path is no git repo
    assert len(args["LOCK_SHA256"]) == 64
    assert ref == hc.ImageRef(id=IMAGE_ID, tag="t:1", labels={"beyond-tops.hw": "cpu"})


def test_build_context_leaves_out_other_targets_wheels(repo: Path) -> None:
    excludes = hc._context_excludes("cpu", repo)
    assert excludes[:3] == ["*", "!docker/", "!build/wheels/"]
    assert "build/wheels/nvidia" in excludes and "build/wheels/rocm-*" in excludes
    assert not any(e.startswith("build/wheels/cpu") for e in excludes)


def test_build_without_base_override_keeps_the_pinned_base(client: Any, repo: Path) -> None:
    client.api.build.return_value = iter([])
    hc.build_image("cpu", tag="t:1", repo=repo, client=client)
    assert "BASE_IMAGE" not in client.api.build.call_args.kwargs["buildargs"]


def test_a_failed_build_names_the_step_and_its_last_output(client: Any, repo: Path) -> None:
    client.api.build.return_value = iter(
        [
            {"stream": "Step 6/24 : RUN pip install x\n"},
            {"stream": " ---> Running in 1234\n"},
            {"stream": "\x1b[91mERROR: THESE PACKAGES DO NOT MATCH THE HASHES\n\x1b[0m"},
            {"stream": "Removing intermediate container 1234\n"},
            {"error": "The command '/bin/sh -c pip install x' returned a non-zero code: 1"},
        ]
    )
    progress = io.StringIO()
    with pytest.raises(DeviceError) as err:
        hc.build_image("cpu", tag="t:1", repo=repo, client=client, progress=progress)
    message = str(err.value)
    assert "Step 6/24 : RUN pip install x" in message and "exit code 1" in message
    assert "last output: ERROR: THESE PACKAGES DO NOT MATCH THE HASHES" in message
    assert "\n" not in message
    assert "Step 6/24" in progress.getvalue()


def test_build_needs_the_wheelhouse(client: Any, repo: Path) -> None:
    (repo / "build" / "wheels" / "cpu" / "pip-1-py3-none-any.whl").unlink()
    with pytest.raises(DeviceError, match=r"run `make wheels HW=cpu` first"):
        hc.build_image("cpu", repo=repo, client=client)
    client.api.build.assert_not_called()


def test_build_refuses_a_harness_wheel_of_other_sources(client: Any, repo: Path) -> None:
    (repo / "harness" / "cli.py").write_text("print('changed')\n")
    with pytest.raises(DeviceError, match=r"other sources than this tree's; run `make wheels"):
        hc.build_image("cpu", repo=repo, client=client)
    client.api.build.assert_not_called()


def test_source_digest_follows_the_wheels_inputs(repo: Path) -> None:
    before = hc.source_digest(repo)
    (repo / "harness" / "schemas").mkdir()
    (repo / "harness" / "schemas" / "r.json").write_text("{}")
    after = hc.source_digest(repo)
    assert after != before
    (repo / "scenarios").mkdir()
    (repo / "scenarios" / "q.yaml").write_text("x: 1\n")  # copied into the image, not the wheel
    assert hc.source_digest(repo) == after


def test_unknown_target_has_no_image(client: Any, repo: Path) -> None:
    with pytest.raises(DeviceError, match=r"HW=tpu: no image"):
        hc.build_image("tpu", repo=repo, client=client)


def test_ensure_image_reuses_this_commits_image(client: Any, mocker: MockerFixture) -> None:
    mocker.patch.object(hc, "git_commit", return_value="c" * 40)
    build = mocker.patch.object(hc, "build_image")
    ref = hc.ensure_image("cpu", client=client)
    assert ref.tag == f"beyond-tops/cpu:{hc.harness.__version__}-{'c' * 12}"
    build.assert_not_called()


def test_ensure_image_builds_a_missing_image(client: Any, mocker: MockerFixture) -> None:
    mocker.patch.object(hc, "git_commit", return_value="c" * 40)
    client.images.get.side_effect = docker.errors.ImageNotFound("no such image")
    build = mocker.patch.object(hc, "build_image")
    hc.ensure_image("cpu", client=client)
    assert build.call_args.kwargs["tag"].endswith("-" + "c" * 12)


def test_a_dirty_tree_always_rebuilds(client: Any, mocker: MockerFixture) -> None:
    mocker.patch.object(hc, "git_commit", return_value="c" * 40 + "-dirty")
    build = mocker.patch.object(hc, "build_image")
    hc.ensure_image("cpu", client=client)
    assert build.call_args.kwargs["tag"].endswith("-cccccccccccc-dirty")
    client.images.get.assert_not_called()


# ---- run ----


def test_run_mounts_results_and_cache_as_the_host_user(tmp_path: Path) -> None:
    run = hc.SuiteRun(hw="cpu", suite="quick", profile="quick", extra_env={"X": "1"})
    kwargs = hc.run_kwargs(run, image_ref(), tmp_path / "runs", tmp_path / "cache")
    assert kwargs["command"] == [
        "harness", "bench", "quick", "--hw", "cpu", "--out", "/work/results/runs",
        "--profile", "quick",
    ]  # fmt: skip
    assert kwargs["user"] == f"{os.getuid()}:{os.getgid()}"
    assert kwargs["volumes"] == {
        str(tmp_path / "runs"): {"bind": "/work/results/runs", "mode": "rw"},
        str(tmp_path / "cache"): {"bind": "/cache", "mode": "rw"},
    }
    env = kwargs["environment"]
    assert env["BEYOND_TOPS_IMAGE_ID"] == IMAGE_ID
    assert env["BEYOND_TOPS_IMAGE_TAG"] == "beyond-tops/cpu:t"
    assert env["BEYOND_TOPS_CACHE"] == "/cache" and env["X"] == "1"
    assert "device_requests" not in kwargs and "devices" not in kwargs


def test_nvidia_asks_for_all_gpus(tmp_path: Path) -> None:
    kwargs = hc.run_kwargs(hc.SuiteRun(hw="nvidia"), image_ref(), tmp_path, tmp_path)
    (request,) = kwargs["device_requests"]
    assert isinstance(request, docker.types.DeviceRequest)
    assert request["Count"] == -1 and request["Capabilities"] == [["gpu"]]


def test_rocm_passes_kfd_dri_and_their_groups(tmp_path: Path, mocker: MockerFixture) -> None:
    mocker.patch.object(hc.os.path, "exists", return_value=True)
    mocker.patch.object(hc, "rocm_groups", return_value=["44", "109"])
    kwargs = hc.run_kwargs(hc.SuiteRun(hw="rocm"), image_ref(), tmp_path, tmp_path)
    assert kwargs["devices"] == ["/dev/kfd:/dev/kfd:rwm", "/dev/dri:/dev/dri:rwm"]
    assert kwargs["group_add"] == ["44", "109"]


def test_rocm_groups_by_name_and_by_device_owner(tmp_path: Path, mocker: MockerFixture) -> None:
    (tmp_path / "dri").mkdir()
    for device in ("kfd", "dri/renderD128", "dri/card0"):
        (tmp_path / device).touch()
    groups = {"video": 44}  # no "render" group on this host
    mocker.patch.object(
        hc.grp, "getgrnam", side_effect=lambda name: mocker.Mock(gr_gid=groups[name])
    )
    owner = {os.getgid()} - {0}  # root's group is never worth adding
    assert hc.rocm_groups(tmp_path) == [str(g) for g in sorted({44} | owner)]


def test_rocm_without_kfd_says_so(mocker: MockerFixture) -> None:
    mocker.patch.object(hc.os.path, "exists", return_value=False)
    with pytest.raises(DeviceError, match=r"HW=rocm: /dev/kfd, /dev/dri not found"):
        hc.device_kwargs("rocm")


def started(client: Any, mocker: MockerFixture, chunks: list[Any], code: int = 0) -> Any:
    container = mocker.create_autospec(Container, instance=True)
    container.attach.return_value = iter(chunks)
    container.wait.return_value = {"StatusCode": code}
    client.containers.run.return_value = container
    return container


def test_run_streams_output_and_maps_run_dirs_to_the_host(
    client: Any, mocker: MockerFixture, tmp_path: Path
) -> None:
    chunks = [
        (b"resnet50: VALID\n  run dir     /work/results/runs/20261130T1-a\n", None),
        (None, b"== progress\n"),
        (b"/work/results/runs/20261130T1-a\n/work/results/", None),
        (b"runs/20261130T2-b\n", None),
    ]
    container = started(client, mocker, chunks, code=1)
    out, err = io.StringIO(), io.StringIO()
    run = hc.SuiteRun(hw="cpu", results_dir=tmp_path / "runs", cache_dir=tmp_path / "cache")
    code, run_dirs = hc.run_suite_in_container(run, image_ref(), client=client, out=out, err=err)
    runs = tmp_path / "runs"
    assert code == 1
    assert run_dirs == [runs / "20261130T1-a", runs / "20261130T2-b"]
    assert f"  run dir     {runs}/20261130T1-a" in out.getvalue().splitlines()
    assert err.getvalue() == "== progress\n"
    assert (tmp_path / "cache").is_dir()
    container.attach.assert_called_once_with(
        stdout=True, stderr=True, stream=True, logs=True, demux=True
    )
    container.remove.assert_called_once_with(force=True)
    assert client.containers.run.call_args.args == (IMAGE_ID,)


def test_interrupt_stops_the_run_cleanly(
    client: Any, mocker: MockerFixture, tmp_path: Path
) -> None:
    container = started(client, mocker, [])
    container.wait.side_effect = [KeyboardInterrupt, {"StatusCode": 130}]
    with pytest.raises(KeyboardInterrupt):
        hc.run_suite_in_container(hc.SuiteRun(hw="cpu", results_dir=tmp_path), image_ref(),
                                  client=client)  # fmt: skip
    container.kill.assert_called_once_with(signal="SIGINT")
    container.remove.assert_called_once_with(force=True)


NO_DRIVER = 'could not select device driver "" with capabilities: [[gpu]]'


def nvidia_host(
    client: Any, mocker: MockerFixture, *, refuse: dict[str, str], cdi_dirs: list[str]
) -> Any:
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


def run_nvidia(client: Any, tmp_path: Path) -> tuple[int, list[Path]]:
    return hc.run_suite_in_container(hc.SuiteRun(hw="nvidia", results_dir=tmp_path),
                                     image_ref(), client=client)  # fmt: skip


def test_a_registered_nvidia_runtime_needs_no_probe(
    client: Any, mocker: MockerFixture, tmp_path: Path
) -> None:
    started(client, mocker, [])
    run_nvidia(client, tmp_path)
    client.containers.create.assert_not_called()
    assert client.containers.run.call_args.kwargs["device_requests"] == [
        docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])
    ]


def test_the_toolkit_hook_without_an_nvidia_runtime_is_enough(
    client: Any, mocker: MockerFixture, tmp_path: Path
) -> None:
    """`--gpus` needs nvidia-container-runtime-hook on dockerd's PATH, not a runtime entry."""
    probes = nvidia_host(client, mocker, refuse={}, cdi_dirs=[])
    started(client, mocker, [])
    run_nvidia(client, tmp_path)
    (probe,) = probes
    probed = client.containers.create.call_args
    assert probed.args == (IMAGE_ID,)
    assert probed.kwargs["device_requests"] == hc.device_kwargs("nvidia")["device_requests"]
    probe.start.assert_called_once_with()
    probe.remove.assert_called_once_with(force=True)
    assert (
        client.containers.run.call_args.kwargs["device_requests"]
        == probed.kwargs["device_requests"]
    )


def test_a_daemon_without_a_gpu_driver_is_one_clear_error(
    client: Any, mocker: MockerFixture, tmp_path: Path
) -> None:
    probes = nvidia_host(client, mocker, refuse={"": NO_DRIVER}, cdi_dirs=[])
    with pytest.raises(DeviceError) as err:
        run_nvidia(client, tmp_path)
    message = str(err.value)
    assert message.startswith("HW=nvidia: Docker cannot give containers the GPUs")
    assert NO_DRIVER in message and "runtimes: runc; CDI spec dirs: none" in message
    assert "nvidia-container-runtime-hook" in message and "nvidia-ctk cdi generate" in message
    assert "\n" not in message
    probes[0].remove.assert_called_once_with(force=True)
    client.containers.run.assert_not_called()


def test_cdi_is_used_where_gpus_is_refused(
    client: Any, mocker: MockerFixture, tmp_path: Path
) -> None:
    probes = nvidia_host(client, mocker, refuse={"": NO_DRIVER}, cdi_dirs=["/etc/cdi"])
    started(client, mocker, [])
    run_nvidia(client, tmp_path)
    assert len(probes) == 2
    (request,) = client.containers.run.call_args.kwargs["device_requests"]
    assert request == docker.types.DeviceRequest(driver="cdi", device_ids=["nvidia.com/gpu=all"])
    assert hc.docker_cli_flags({"device_requests": [request]}) == ["--device=nvidia.com/gpu=all"]


def test_neither_gpus_nor_cdi_reports_the_gpus_refusal(
    client: Any, mocker: MockerFixture, tmp_path: Path
) -> None:
    unresolvable = "CDI device injection failed: unresolvable CDI devices nvidia.com/gpu=all"
    nvidia_host(client, mocker, refuse={"": NO_DRIVER, "cdi": unresolvable}, cdi_dirs=["/etc/cdi"])
    with pytest.raises(DeviceError, match=r"no GPU device driver .*CDI spec dirs: /etc/cdi\)"):
        run_nvidia(client, tmp_path)
    client.containers.run.assert_not_called()


def test_a_driver_found_but_failing_says_to_check_the_driver(
    client: Any, mocker: MockerFixture, tmp_path: Path
) -> None:
    failure = (
        "failed to create task for container: OCI runtime create failed: nvidia-container-cli: "
        "initialization error: nvml error: driver not loaded"
    )
    nvidia_host(client, mocker, refuse={"": failure}, cdi_dirs=[])
    with pytest.raises(DeviceError) as err:
        run_nvidia(client, tmp_path)
    assert "could not start a container with the GPUs" in str(err.value)
    assert "driver not loaded" in str(err.value) and "`nvidia-smi`" in str(err.value)


def test_a_probe_of_a_removed_image_says_so(client: Any, tmp_path: Path) -> None:
    client.info.return_value = {"Runtimes": {"runc": {}}}
    client.containers.create.side_effect = docker.errors.ImageNotFound("no such image")
    with pytest.raises(DeviceError, match=r"is gone; run `make image`"):
        run_nvidia(client, tmp_path)


def test_could_not_select_device_driver_at_run_names_the_fix(client: Any, tmp_path: Path) -> None:
    client.containers.run.side_effect = docker.errors.APIError(
        "500 Server Error", explanation=NO_DRIVER
    )
    with pytest.raises(DeviceError) as err:
        run_nvidia(client, tmp_path)
    assert "Docker cannot give containers the GPUs" in str(err.value)
    assert "nvidia-ctk runtime configure" in str(err.value)


def test_gpus_flags_for_the_docker_cli() -> None:
    assert hc.docker_cli_flags(hc.device_kwargs("nvidia")) == ["--gpus=all"]
    assert hc.docker_cli_flags(hc.device_kwargs("cpu")) == []


def test_the_cache_root_is_mounted_where_the_harness_looks(
    tmp_path: Path, mocker: MockerFixture
) -> None:
    """Compiled engines (TensorRT, MIGraphX) live under the cache root, so on the host volume."""
    mocker.patch.object(hc.os.path, "exists", return_value=True)
    mocker.patch.object(hc, "rocm_groups", return_value=[])
    kwargs = hc.run_kwargs(hc.SuiteRun(hw="rocm"), image_ref(), tmp_path / "r", tmp_path / "c")
    assert kwargs["volumes"][str(tmp_path / "c")]["bind"] == str(hc.CONTAINER_CACHE)
    mocker.patch.dict(os.environ, {"BEYOND_TOPS_CACHE": kwargs["environment"]["BEYOND_TOPS_CACHE"]})
    root = registry.cache_root()
    assert root == Path(hc.CONTAINER_CACHE)
    for target in (TARGETS["rocm"], TARGETS["nvidia"]):
        for spec in target.providers:
            for key, value in resolve_options(spec, {}, str(root / "engines")).items():
                if "{cache}" in spec.options[key]:
                    assert Path(value).is_relative_to(root), (target.name, key, value)


# ---- connecting ----

FETCH = "Error while fetching server API version: ('Connection aborted.', {})"


def test_no_docker_package(mocker: MockerFixture) -> None:
    mocker.patch.dict(sys.modules, {"docker": None})
    with pytest.raises(DeviceError, match=r"the `docker` Python package is missing"):
        hc.connect()


def test_docker_not_installed(mocker: MockerFixture) -> None:
    error = FETCH.format("FileNotFoundError(2, 'No such file or directory')")
    mocker.patch("docker.from_env", side_effect=docker.errors.DockerException(error))
    mocker.patch.object(hc.shutil, "which", return_value=None)
    with pytest.raises(DeviceError, match=r"^Docker is not installed .*RUNNER=local$"):
        hc.connect()


def test_daemon_stopped_with_its_socket_gone(mocker: MockerFixture) -> None:
    error = FETCH.format("FileNotFoundError(2, 'No such file or directory')")
    mocker.patch("docker.from_env", side_effect=docker.errors.DockerException(error))
    mocker.patch.object(hc.shutil, "which", return_value="/usr/bin/dockerd")
    with pytest.raises(DeviceError, match=r"daemon is not running .*systemctl start docker"):
        hc.connect()


def test_daemon_not_answering(mocker: MockerFixture) -> None:
    error = FETCH.format("ConnectionRefusedError(111, 'Connection refused')")
    mocker.patch("docker.from_env", side_effect=docker.errors.DockerException(error))
    with pytest.raises(DeviceError, match=r"daemon is not running"):
        hc.connect()


def test_socket_permission_denied(mocker: MockerFixture) -> None:
    error = FETCH.format("PermissionError(13, 'Permission denied')")
    mocker.patch("docker.from_env", side_effect=docker.errors.DockerException(error))
    with pytest.raises(DeviceError, match=r"permission denied .*`docker` group"):
        hc.connect()


def test_three_errors_have_three_messages(mocker: MockerFixture) -> None:
    messages = set()
    for cause, which in (("FileNotFoundError", None), ("ConnectionRefusedError", "/x")):
        mocker.patch("docker.from_env", side_effect=docker.errors.DockerException(cause))
        mocker.patch.object(hc.shutil, "which", return_value=which)
        with pytest.raises(DeviceError) as err:
            hc.connect()
        messages.add(str(err.value))
    mocker.patch.dict(sys.modules, {"docker": None})
    with pytest.raises(DeviceError) as err:
        hc.connect()
    messages.add(str(err.value))
    assert len(messages) == 3


# ---- CLI ----


def test_cli_prints_one_error_line_and_exits_4(
    mocker: MockerFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    mocker.patch.dict(sys.modules, {"docker": None})
    assert hc.main(["bench", "--hw", "cpu"]) == 4
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: the `docker` Python package is missing")


def test_cli_gpus_prints_the_docker_run_flags_the_daemon_accepted(
    client: Any, mocker: MockerFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    nvidia_host(client, mocker, refuse={"": NO_DRIVER}, cdi_dirs=["/etc/cdi"])
    mocker.patch.object(hc, "connect", return_value=client)
    assert hc.main(["gpus", "--image", "beyond-tops/nvidia:t"]) == 0
    assert capsys.readouterr().out == "--device=nvidia.com/gpu=all\n"
    assert client.containers.create.call_args.args == (IMAGE_ID,)
