"""The CLI's Docker side: `harness image ...` and `--runner docker` on run, bench and sweep."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from docker.models.containers import Container, ContainerCollection
from docker.models.images import Image, ImageCollection
from pytest_mock import MockerFixture

import docker
from harness import cli
from harness.errors import ConfigError
from harness.execution import containers as hc
from tests.conftest import REPO

IMAGE_ID = "sha256:" + "ab" * 32


def parse(*argv: str) -> Any:
    return cli._parser().parse_args(argv)


def test_image_verbs_parse() -> None:
    build = parse("image", "build", "--hw", "nvidia", "--base-image", "base:1", "--tag", "t:1")
    assert (build.func, build.hw, build.base_image, build.tag) == (
        cli._image_build, "nvidia", "base:1", "t:1",
    )  # fmt: skip
    assert parse("image", "build").hw == "cpu"
    ensure = parse("image", "ensure", "--hw", "rocm")
    assert (ensure.func, ensure.hw) == (cli._image_ensure, "rocm")
    gpus = parse("image", "gpus", "--image", "beyond-tops/nvidia:t")
    assert (gpus.func, gpus.image) == (cli._image_gpus, "beyond-tops/nvidia:t")
    assert parse("image", "source-digest").func is cli._image_source_digest


def test_image_verbs_know_only_the_targets_with_an_image() -> None:
    with pytest.raises(SystemExit):
        parse("image", "build", "--hw", "tpu")


@pytest.mark.parametrize(
    "argv",
    [
        ("run", "scenarios/tiny-singlestream.yaml"),
        ("bench", "quick"),
        ("sweep", "scenarios/tiny-offline.yaml"),
    ],
)
def test_run_bench_and_sweep_take_a_runner(argv: tuple[str, ...]) -> None:
    args = parse(*argv, "--runner", "docker", "--image", "t:1", "--cache", "/c")
    assert (args.runner, args.image, args.cache) == ("docker", "t:1", Path("/c"))
    assert parse(*argv).runner == "local"
    with pytest.raises(SystemExit):
        parse(*argv, "--runner", "k8s")


def test_help_lists_verbs_in_workflow_order(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    verbs = [
        line.split()[0] for line in capsys.readouterr().out.splitlines() if line[:4] == " " * 4
    ]
    assert verbs[:4] == ["models", "image", "run", "bench"]


def test_docker_runner_gives_every_job_one_launcher(
    mocker: MockerFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    args = parse(
        "bench", "--runner", "docker", "--hw", "cpu", "--out", str(tmp_path), "--image", "t"
    )
    path = Path("scenarios/tiny-singlestream.yaml")
    first, second = (
        cli._campaign(path, args, "quick"),
        cli._campaign(path, args, "quick", precision="fp16"),
    )
    assert isinstance(first.launch, hc.DockerLauncher) and second.launch is first.launch
    assert first.launch.run == hc.DockerRun(hw="cpu", results=tmp_path, image="t", cache=None)
    local = parse("bench", "--out", str(tmp_path))
    assert cli._campaign(path, local, "quick").launch is None


def test_image_and_cache_need_the_docker_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    args = parse("run", "scenarios/tiny-singlestream.yaml", "--image", "t:1")
    with pytest.raises(ConfigError, match=r"^--image: only with --runner docker$"):
        cli._campaign(args.scenario, args, "quick")


def test_docker_trouble_is_one_line_before_any_run(
    mocker: MockerFixture,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(REPO)
    mocker.patch.dict(sys.modules, {"docker": None})
    out = tmp_path / "runs"
    assert cli.main(["bench", "smoke", "--runner", "docker", "--out", str(out)]) == 8
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "error: the `docker` Python package is missing; install it with "
        "`.venv/bin/pip install -e '.[host]'` (or use --runner local)"
    ]
    assert not out.exists() or not any(out.iterdir())


def test_image_source_digest_prints_the_digest(
    mocker: MockerFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    mocker.patch("harness.execution.images.source_digest", return_value="f" * 64)
    assert cli.main(["image", "source-digest"]) == 0
    assert capsys.readouterr().out == "f" * 64 + "\n"


def test_image_gpus_prints_the_docker_run_flags_the_daemon_accepted(
    mocker: MockerFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    client = mocker.create_autospec(docker.DockerClient, instance=True)
    client.images = mocker.create_autospec(ImageCollection, instance=True)
    client.containers = mocker.create_autospec(ContainerCollection, instance=True)
    image = mocker.create_autospec(Image, instance=True)
    image.id, image.labels = IMAGE_ID, {}
    client.images.get.return_value = image
    client.info.return_value = {"Runtimes": {"runc": {}}, "CDISpecDirs": ["/etc/cdi"]}

    def create(image: str, command: list[str], **kwargs: Any) -> Any:
        probe = mocker.create_autospec(Container, instance=True)
        if kwargs["device_requests"][0]["Driver"] == "":
            probe.start.side_effect = docker.errors.APIError(
                "500", explanation="could not select device driver"
            )
        return probe

    client.containers.create.side_effect = create
    mocker.patch.object(hc, "connect", return_value=client)
    assert cli.main(["image", "gpus", "--image", "beyond-tops/nvidia:t"]) == 0
    assert capsys.readouterr().out == "--device=nvidia.com/gpu=all\n"
    assert client.containers.create.call_args.args == (IMAGE_ID,)
