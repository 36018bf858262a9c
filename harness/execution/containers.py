"""Jobs in containers: the pipeline's Launcher that runs each job's worker in its hardware's image.

A container is just another place to start `python -m harness.execution.worker JOB.json`.
Paths are the same inside and outside: the results root and the job's input files are mounted
at their own paths and the working directory is the caller's, so neither the job file nor
anything the worker writes needs rewriting, and the parent reads the run directory as it would
locally.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, Literal, TypedDict

from harness.errors import STOP_SIGNALS, ConfigError, HarnessError, stop_signal
from harness.execution.containers_devices import (
    DeviceKwargs,
    device_kwargs,
    docker_cli_flags,
    nvidia_devices,
    run_error,
)
from harness.execution.images import (
    ImageRef,
    check_hw,
    connect,
    ensure_image,
    explain,
    image_gone,
    import_docker,
    named_image,
)
from harness.files import mark_incomplete
from harness.hardware import get_target
from harness.paths import CACHE_ENV, cache_root
from harness.records.job import Job, read_job
from harness.telemetry.external import ALLOW_METER_ENV

CONTAINER_CACHE = PurePosixPath("/cache")
STOP_TIMEOUT_S = 120  # for the worker to mark its run INCOMPLETE after Ctrl-C
PIDS_LIMIT = 4096  # onnxruntime's and LoadGen's threads, with room; a fork bomb stops here


class Mount(TypedDict):
    """A host path as a container sees it: where, and whether it may write there."""

    bind: str
    mode: Literal["ro", "rw"]


class ContainerKwargs(DeviceKwargs):
    """Everything `containers.run` gets besides the image, and the devices of its target."""

    command: list[str]
    detach: bool
    init: bool
    network_mode: str
    cap_drop: list[str]
    security_opt: list[str]
    pids_limit: int
    user: str
    working_dir: str
    environment: dict[str, str]
    volumes: dict[str, Mount]


@dataclass(frozen=True, kw_only=True)
class DockerRun:
    """Where containers run jobs: the target, its image and the host directories they see."""

    hw: str
    results: Path  # the results root: every job's run directory lies under it
    image: str | None = None  # a tag or ID; None: this commit's image, built if missing
    cache: Path | None = None  # None: harness.paths.cache_root(), the one local runs use


class DockerLauncher:
    """The pipeline's Launcher for Docker: one container per job file, removed when it ends.

    Constructing it does nothing; `prepare` (or the first launch) connects to the daemon,
    finds or builds the image and asks the daemon how it gives containers the GPUs.
    """

    def __init__(
        self,
        run: DockerRun,
        *,
        client: Any = None,
        out: IO[str] | None = None,
        err: IO[str] | None = None,
    ) -> None:
        self.run = run
        self._client = client
        self._out, self._err = out, err
        self._image: ImageRef | None = None
        self._devices: DeviceKwargs = {}

    def prepare(self) -> ImageRef:
        """Connect, find or build the image and settle the device request; once."""
        if self._image is None:
            check_hw(self.run.hw)
            if self._client is None:
                self._client = connect()
            if self.run.image:
                image = named_image(self._client, self.run.image)
            else:
                image = ensure_image(self.run.hw, client=self._client, progress=self._stderr())
            if get_target(self.run.hw).docker_devices == "nvidia-gpus":
                self._devices = nvidia_devices(self._client, image)
            else:
                self._devices = device_kwargs(self.run.hw)
            print(f"== image {image.tag} ({image.id})", file=self._stderr(), flush=True)
            self._image = image
        return self._image

    def __call__(self, job_path: Path) -> int:
        """Run the job's worker in a container; its exit code, as a local worker's would be."""
        job = read_job(job_path)
        try:
            image = self.prepare()
            kwargs = container_kwargs(job_path, job, self.run, image, self._devices)
        except HarnessError as exc:
            return _not_started(job, exc)
        # A stop signal that comes while the daemon starts the container waits until this
        # process holds it, so that whatever stops the run also removes the container.
        with _stops_deferred() as stops:
            try:
                container = self._start(image, kwargs)
            except HarnessError as exc:
                return _not_started(job, exc)
            try:
                stops.release()  # one that came meanwhile is raised here
                _stream(container, self._out or sys.stdout, self._stderr())
                return exit_code(int(container.wait()["StatusCode"]))
            except KeyboardInterrupt as exc:  # the signal reached this process, not the worker
                _stop(container, signal.Signals(stop_signal(exc)).name)
                raise
            finally:
                stops.hold()  # a second signal must not leave the container behind
                _remove(container, self._stderr())

    def _start(self, image: ImageRef, kwargs: ContainerKwargs) -> Any:
        for host, mount in kwargs["volumes"].items():
            if mount["mode"] == "rw":  # the results root and the cache
                Path(host).mkdir(parents=True, exist_ok=True)
        docker = import_docker()
        try:
            return self._client.containers.run(image.id, **kwargs)
        except docker.errors.ImageNotFound:
            raise image_gone(image) from None
        except docker.errors.APIError as exc:
            raise run_error(exc, self.run.hw) from None

    def _stderr(self) -> IO[str]:
        return self._err or sys.stderr


class _DeferredStops:
    """Stop signals held back (blocked) while the launcher starts or removes a container.

    A mask is per thread: this holds in the CLI's parent, which runs no other thread.
    """

    def __init__(self) -> None:
        self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)

    def hold(self) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)

    def release(self) -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)


@contextlib.contextmanager
def _stops_deferred() -> Iterator[_DeferredStops]:
    stops = _DeferredStops()
    try:
        yield stops
    finally:
        stops.release()


def _not_started(job: Job, exc: HarnessError) -> int:
    """The worker never started: say why in its run directory, as it would have."""
    mark_incomplete(job.run_dir, f"failed: {exc}", exc.exit_code)
    return exc.exit_code


def _stop(container: Any, signal_name: str) -> None:
    """Pass the stop signal on to the worker and give it time to mark its run INCOMPLETE.

    The init process forwards the signal; the caller removes the container, stopped or not.
    """
    with contextlib.suppress(import_docker().errors.APIError):
        container.kill(signal=signal_name)
        container.wait(timeout=STOP_TIMEOUT_S)


def _remove(container: Any, err: IO[str]) -> None:
    """Remove the container, killing it if it still runs; say so if the daemon refuses."""
    try:
        container.remove(force=True)
    except import_docker().errors.APIError as exc:
        print(f"warning: container {container.id} not removed: {explain(exc)}", file=err)


def container_kwargs(
    job_path: Path, job: Job, run: DockerRun, image: ImageRef, devices: DeviceKwargs
) -> ContainerKwargs:
    """Everything `containers.run` gets besides the image: command, mounts, user, devices."""
    results = run.results.resolve()
    job_file = job_path.resolve()
    if not (job_file.is_relative_to(results) and job.run_dir.is_relative_to(results)):
        raise ConfigError(
            f"{job_path}: its run directory {job.run_dir} is outside {results}, the results "
            "directory containers see; write run directories under --out"
        )
    cwd = Path.cwd()
    volumes: dict[str, Mount] = {
        str(path): {"bind": str(path), "mode": "ro"} for path in input_paths(job, cwd)
    }
    volumes[str(results)] = {"bind": str(results), "mode": "rw"}
    cache = (run.cache or cache_root()).resolve()
    volumes[str(cache)] = {"bind": str(CONTAINER_CACHE), "mode": "rw"}
    return {
        "command": ["python", "-m", "harness.execution.worker", str(job_file)],
        "detach": True,
        "init": True,  # forwards the stop signal (SIGINT, SIGTERM, SIGHUP) to the worker
        "network_mode": "none",  # a measurement needs no network: models come from the cache
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "pids_limit": PIDS_LIMIT,
        "user": f"{os.getuid()}:{os.getgid()}",  # files written to the mounts are the user's
        "working_dir": str(cwd),  # relative paths in the job mean what they mean here
        "environment": {
            # observe.image_info records these in result.json; the fingerprint reads the ID
            "BEYOND_TOPS_IMAGE_ID": image.id,
            "BEYOND_TOPS_IMAGE_TAG": image.tag,
            CACHE_ENV: str(CONTAINER_CACHE),
            "HOME": "/tmp",
            # The user's opt-in to a scenario's meter command reaches the worker, as locally.
            **({ALLOW_METER_ENV: "1"} if os.environ.get(ALLOW_METER_ENV) == "1" else {}),
        },
        "volumes": volumes,
        **devices,
    }


def input_paths(job: Job, cwd: Path) -> list[Path]:
    """What a job reads from the host besides the cache, absolute: model and data files.

    A missing one is not mounted (Docker would create it as a directory): the worker reports
    it as it would locally.
    """
    request = job.request
    generation = request.scenario.generation
    prompt_file = generation.path if generation is not None else None
    named = (
        request.model_override,
        request.scenario.model.path,
        request.scenario.data.dir,
        prompt_file,
    )
    paths = {Path(os.path.normpath(cwd / str(name))) for name in named if name is not None}
    return sorted(path for path in paths if path.exists())


def exit_code(status: int) -> int:
    """A container's status as Popen's return code: a death by signal N is -N."""
    stops = {stop.code for stop in STOP_SIGNALS.values()}  # the worker's own exit codes
    if status > 128 and status not in stops:  # 128 + N from the init process
        return 128 - status
    return status


def gpu_flags(image: str | None = None, *, progress: IO[str] | None = None) -> list[str]:
    """The `docker run` flags with which the daemon really starts the nvidia image with GPUs."""
    client = connect()
    if image:
        ref = named_image(client, image)
    else:
        ref = ensure_image("nvidia", client=client, progress=progress)
    return docker_cli_flags(nvidia_devices(client, ref))


def _stream(container: Any, out: IO[str], err: IO[str]) -> None:
    """Copy the container's stdout and stderr to ours as they come: for people, not parsed."""
    sinks = (out, err)
    decoders = [codecs.getincrementaldecoder("utf-8")(errors="replace") for _ in sinks]
    chunks = container.attach(stdout=True, stderr=True, stream=True, logs=True, demux=True)
    for pair in chunks:
        for data, decoder, sink in zip(pair, decoders, sinks, strict=True):
            if data:
                sink.write(decoder.decode(data))
                sink.flush()
    for decoder, sink in zip(decoders, sinks, strict=True):
        sink.write(decoder.decode(b"", final=True))
        sink.flush()
