"""harness.execution.images against autospec'd Docker SDK objects: no daemon needed."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest
from docker.models.images import Image, ImageCollection
from pytest_mock import MockerFixture

import docker
from harness.errors import DependencyError, DeviceError
from harness.execution import images as hi

IMAGE_ID = "sha256:" + "ab" * 32


@pytest.fixture
def client(mocker: MockerFixture) -> Any:
    """A DockerClient whose every call is checked against the real SDK's signatures."""
    client = mocker.create_autospec(docker.DockerClient, instance=True)
    client.api = mocker.create_autospec(docker.APIClient, instance=True)
    client.images = mocker.create_autospec(ImageCollection, instance=True)
    image = mocker.create_autospec(Image, instance=True)
    image.id = IMAGE_ID
    image.labels = {"beyond-tops.hw": "cpu"}
    client.images.get.return_value = image
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
    own.write_text(f"# source-sha256: {hi.source_digest(tmp_path)}\nbeyond-tops==0 \\\n")
    return tmp_path


# ---- build ----


def test_build_runs_without_network_and_passes_the_label_arguments(client: Any, repo: Path) -> None:
    client.api.build.return_value = iter([{"stream": "Step 1/1 : FROM scratch\n"}])
    ref = hi.build_image("cpu", base_image="stand-in:1", tag="t:1", repo=repo, client=client)
    kwargs = client.api.build.call_args.kwargs
    assert kwargs["network_mode"] == "none"
    assert kwargs["dockerfile"] == "docker/cpu/Dockerfile"
    assert kwargs["tag"] == "t:1" and kwargs["custom_context"] is True
    args = kwargs["buildargs"]
    assert args["BASE_IMAGE"] == "stand-in:1"
    assert args["HARNESS_VERSION"] and args["GIT_COMMIT"] == "unknown"  # tmp_path is no git repo
    assert len(args["LOCK_SHA256"]) == 64
    assert ref == hi.ImageRef(id=IMAGE_ID, tag="t:1", labels={"beyond-tops.hw": "cpu"})


def test_the_source_label_carries_no_credentials_of_the_remote(
    client: Any, repo: Path, mocker: MockerFixture
) -> None:
    remote = "https://user:ghp_SECRET@github.com/org/beyond-tops.git"
    mocker.patch("harness.execution.images.git_output", return_value=remote)
    client.api.build.return_value = iter([])
    hi.build_image("cpu", tag="t:1", repo=repo, client=client)
    source = client.api.build.call_args.kwargs["buildargs"]["SOURCE_URL"]
    assert source == "https://github.com/org/beyond-tops.git"


@pytest.mark.parametrize(
    ("remote", "shown"),
    [
        ("https://user:pass@host/x", "https://host/x"),
        ("https://oauth2:tok@gitlab.example:8443/g/r.git?private_token=t#f",
         "https://gitlab.example:8443/g/r.git"),
        ("ssh://git@github.com:22/org/r.git", "ssh://github.com:22/org/r.git"),
        ("git@github.com:org/r.git", "github.com/org/r.git"),
        ("deploy:pw@host.example:/srv/r.git", "host.example/srv/r.git"),
        ("https://github.com/org/r.git", "https://github.com/org/r.git"),
        ("/srv/git/r@2.git", "/srv/git/r@2.git"),
        ("unknown", "unknown"),
    ],
)  # fmt: skip
def test_public_url_strips_userinfo(remote: str, shown: str) -> None:
    assert hi.public_url(remote) == shown


def test_build_context_leaves_out_other_targets_wheels(repo: Path) -> None:
    excludes = hi._context_excludes("cpu", repo)
    assert excludes[:3] == ["*", "!docker/", "!build/wheels/"]
    assert "build/wheels/nvidia" in excludes and "build/wheels/rocm-*" in excludes
    assert not any(e.startswith("build/wheels/cpu") for e in excludes)


def test_build_without_base_override_keeps_the_pinned_base(client: Any, repo: Path) -> None:
    client.api.build.return_value = iter([])
    hi.build_image("cpu", tag="t:1", repo=repo, client=client)
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
        hi.build_image("cpu", tag="t:1", repo=repo, client=client, progress=progress)
    message = str(err.value)
    assert "Step 6/24 : RUN pip install x" in message and "exit code 1" in message
    assert "last output: ERROR: THESE PACKAGES DO NOT MATCH THE HASHES" in message
    assert "\n" not in message
    assert "Step 6/24" in progress.getvalue()


def test_a_base_that_cannot_be_pulled_says_how_to_get_it(client: Any, repo: Path) -> None:
    client.api.build.return_value = iter(
        [
            {"stream": "Step 1/20 : FROM python:3.11@sha256:00\n"},
            {"error": "pull access denied for python, repository does not exist"},
        ]
    )
    with pytest.raises(DeviceError, match=r"`docker load` it .* --base-image$"):
        hi.build_image("cpu", tag="t:1", repo=repo, client=client)


def test_build_needs_the_wheelhouse(client: Any, repo: Path) -> None:
    (repo / "build" / "wheels" / "cpu" / "pip-1-py3-none-any.whl").unlink()
    with pytest.raises(DeviceError, match=r"run `make wheels HW=cpu` first"):
        hi.build_image("cpu", repo=repo, client=client)
    client.api.build.assert_not_called()


def test_build_refuses_a_harness_wheel_of_other_sources(client: Any, repo: Path) -> None:
    (repo / "harness" / "cli.py").write_text("print('changed')\n")
    with pytest.raises(DeviceError, match=r"other sources than this tree's; run `make wheels"):
        hi.build_image("cpu", repo=repo, client=client)
    client.api.build.assert_not_called()


def test_source_digest_follows_the_wheels_inputs(repo: Path) -> None:
    before = hi.source_digest(repo)
    (repo / "harness" / "schemas").mkdir()
    (repo / "harness" / "schemas" / "r.json").write_text("{}")
    after = hi.source_digest(repo)
    assert after != before
    (repo / "scenarios").mkdir()
    (repo / "scenarios" / "q.yaml").write_text("x: 1\n")  # copied into the image, not the wheel
    assert hi.source_digest(repo) == after


def test_unknown_target_has_no_image(client: Any, repo: Path) -> None:
    with pytest.raises(DeviceError, match=r"HW=tpu: no image"):
        hi.build_image("tpu", repo=repo, client=client)


# ---- ensure and find ----


def test_ensure_image_reuses_this_commits_image(client: Any, mocker: MockerFixture) -> None:
    mocker.patch.object(hi, "git_commit", return_value="c" * 40)
    build = mocker.patch.object(hi, "build_image")
    ref = hi.ensure_image("cpu", client=client)
    assert ref.tag == f"beyond-tops/cpu:{hi.harness.__version__}-{'c' * 12}"
    build.assert_not_called()


def test_ensure_image_builds_a_missing_image(client: Any, mocker: MockerFixture) -> None:
    mocker.patch.object(hi, "git_commit", return_value="c" * 40)
    client.images.get.side_effect = docker.errors.ImageNotFound("no such image")
    build = mocker.patch.object(hi, "build_image")
    hi.ensure_image("cpu", client=client)
    assert build.call_args.kwargs["tag"].endswith("-" + "c" * 12)


def test_a_dirty_tree_always_rebuilds(client: Any, mocker: MockerFixture) -> None:
    mocker.patch.object(hi, "git_commit", return_value="c" * 40 + "-dirty")
    build = mocker.patch.object(hi, "build_image")
    hi.ensure_image("cpu", client=client)
    assert build.call_args.kwargs["tag"].endswith("-cccccccccccc-dirty")
    client.images.get.assert_not_called()


def test_a_named_image_must_exist(client: Any) -> None:
    assert hi.named_image(client, "beyond-tops/cpu:ci").id == IMAGE_ID
    client.images.get.side_effect = docker.errors.ImageNotFound("no such image")
    with pytest.raises(DeviceError, match=r"^no image x:1; build it with `harness image build`"):
        hi.named_image(client, "x:1")


# ---- connecting ----

FETCH = "Error while fetching server API version: ('Connection aborted.', {})"


def test_no_docker_package(mocker: MockerFixture) -> None:
    mocker.patch.dict(sys.modules, {"docker": None})
    with pytest.raises(DependencyError, match=r"the `docker` Python package is missing"):
        hi.connect()


def test_docker_not_installed(mocker: MockerFixture) -> None:
    error = FETCH.format("FileNotFoundError(2, 'No such file or directory')")
    mocker.patch("docker.from_env", side_effect=docker.errors.DockerException(error))
    mocker.patch.object(hi.shutil, "which", return_value=None)
    with pytest.raises(DeviceError, match=r"^Docker is not installed .*--runner local$"):
        hi.connect()


def test_daemon_stopped_with_its_socket_gone(mocker: MockerFixture) -> None:
    error = FETCH.format("FileNotFoundError(2, 'No such file or directory')")
    mocker.patch("docker.from_env", side_effect=docker.errors.DockerException(error))
    mocker.patch.object(hi.shutil, "which", return_value="/usr/bin/dockerd")
    with pytest.raises(DeviceError, match=r"daemon is not running .*systemctl start docker"):
        hi.connect()


def test_daemon_not_answering(mocker: MockerFixture) -> None:
    error = FETCH.format("ConnectionRefusedError(111, 'Connection refused')")
    mocker.patch("docker.from_env", side_effect=docker.errors.DockerException(error))
    with pytest.raises(DeviceError, match=r"daemon is not running"):
        hi.connect()


def test_socket_permission_denied(mocker: MockerFixture) -> None:
    error = FETCH.format("PermissionError(13, 'Permission denied')")
    mocker.patch("docker.from_env", side_effect=docker.errors.DockerException(error))
    with pytest.raises(DeviceError, match=r"permission denied .*`docker` group"):
        hi.connect()


def test_three_errors_have_three_messages(mocker: MockerFixture) -> None:
    messages = set()
    for cause, which in (("FileNotFoundError", None), ("ConnectionRefusedError", "/x")):
        mocker.patch("docker.from_env", side_effect=docker.errors.DockerException(cause))
        mocker.patch.object(hi.shutil, "which", return_value=which)
        with pytest.raises(DeviceError) as err:
            hi.connect()
        messages.add(str(err.value))
    mocker.patch.dict(sys.modules, {"docker": None})
    with pytest.raises(DependencyError) as missing:
        hi.connect()
    messages.add(str(missing.value))
    assert len(messages) == 3
