"""Per-hardware Docker images and the suite run inside them: the only module importing docker."""

from __future__ import annotations

import argparse
import grp
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

import harness
from harness.errors import DeviceError, run_reporting_errors

HW_TARGETS = ("cpu", "nvidia", "rocm")
IMAGE_REPO = "beyond-tops"
CONTAINER_RUNS = PurePosixPath("/work/results/runs")
CONTAINER_CACHE = PurePosixPath("/cache")
ROCM_DEVICES = ("/dev/kfd", "/dev/dri")
ROCM_GROUPS = ("video", "render")
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
BUILDER_CHATTER = (" ---> ", "Removing intermediate container", "Successfully ")
PULL_HINT = (
    "; the base image could not be pulled: `docker load` it from a machine that can reach "
    "its registry, or build on another base with --base-image"
)
NVIDIA_GPU_FIX = (
    "install the NVIDIA Container Toolkit and restart Docker (`sudo nvidia-ctk runtime configure "
    "--runtime=docker && sudo systemctl restart docker`: dockerd looks for "
    "nvidia-container-runtime-hook only when it starts), or give Docker 25+ a CDI spec "
    "(`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`), or use RUNNER=local"
)
NVIDIA_START_FIX = (
    "check the host driver (`nvidia-smi`) and the NVIDIA Container Toolkit "
    "(`nvidia-ctk --version`), or use RUNNER=local"
)
NO_DEVICE_DRIVER = "could not select device driver"  # moby's incompatibleDeviceRequest


@dataclass(frozen=True, kw_only=True)
class ImageRef:
    """A built image: its content ID, the tag it was built under, and its labels."""

    id: str
    tag: str
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class SuiteRun:
    """What to run in the container and where its files go on the host."""

    hw: str
    suite: str = "quick"
    profile: str | None = None
    results_dir: Path = Path("results/runs")
    cache_dir: Path | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)


def connect() -> Any:
    """A Docker Engine API client, or a DeviceError that says what is missing and the fix."""
    docker = _import_docker()
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        raise _connection_error(exc) from None
    return client


def _import_docker() -> Any:
    try:
        import docker
    except ImportError:
        raise DeviceError(
            "the `docker` Python package is missing; install it with "
            "`.venv/bin/pip install -e '.[host]'` (or use RUNNER=local)"
        ) from None
    return docker


def _connection_error(exc: BaseException) -> DeviceError:
    text = _exception_text(exc)
    socket = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if "PermissionError" in text or "Permission denied" in text:
        return DeviceError(
            f"Docker: permission denied on {socket}; add yourself to the `docker` group "
            "(`sudo usermod -aG docker $USER`, then log in again)"
        )
    if ("FileNotFoundError" in text or "No such file" in text) and not _docker_installed():
        return DeviceError(
            "Docker is not installed (no `docker` or `dockerd` on PATH and no socket at "
            f"{socket}); install Docker Engine, or use RUNNER=local"
        )
    return DeviceError(
        f"the Docker daemon is not running (nothing answers on {socket}); start it with "
        "`sudo systemctl start docker`, or use RUNNER=local"
    )


def _exception_text(exc: BaseException | None) -> str:
    """The exception, its causes and their arguments, as text to look for OS errors in."""
    parts = []
    while exc is not None:
        parts.append(f"{type(exc).__name__}: {exc!r}")
        exc = exc.__cause__ or exc.__context__
    return " | ".join(parts)


def _docker_installed() -> bool:
    return shutil.which("dockerd") is not None or shutil.which("docker") is not None


def build_image(
    hw: str,
    *,
    base_image: str | None = None,
    tag: str | None = None,
    repo: Path = Path("."),
    client: Any = None,
    progress: IO[str] | None = None,
) -> ImageRef:
    """Build docker/<hw> from the wheelhouse, with no network, and return the image."""
    _check_hw(hw)
    _check_wheelhouse(hw, repo)
    client = client if client is not None else connect()
    tag = tag or default_tag(hw, repo=repo)
    buildargs = build_args(hw, repo=repo, base_image=base_image)
    docker = _import_docker()
    context = docker.utils.tar(
        str(repo), exclude=_context_excludes(hw, repo), dockerfile=(f"docker/{hw}/Dockerfile", None)
    )
    try:
        stream = client.api.build(
            fileobj=context,
            custom_context=True,
            dockerfile=f"docker/{hw}/Dockerfile",
            tag=tag,
            buildargs=buildargs,
            network_mode="none",
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
        )
        _follow_build(stream, tag, progress)
    except docker.errors.APIError as exc:
        raise DeviceError(f"docker build of {tag} failed: {_explain(exc)}") from None
    finally:
        context.close()
    return _image_ref(client.images.get(tag), tag)


def _check_hw(hw: str) -> None:
    if hw not in HW_TARGETS:
        raise DeviceError(f"HW={hw}: no image for this target (images: {', '.join(HW_TARGETS)})")


def _check_wheelhouse(hw: str, repo: Path) -> None:
    wheels = repo / "build" / "wheels"
    own = wheels / f"{hw}-harness" / "harness.lock"
    if not any((wheels / hw).glob("pip-*.whl")) or not own.is_file():
        raise DeviceError(
            f"{wheels / hw}: no wheelhouse to build the {hw} image from; "
            f"run `make wheels HW={hw}` first (it needs the network, the build does not)"
        )
    if f"# source-sha256: {source_digest(repo)}" not in own.read_text().splitlines():
        raise DeviceError(
            f"{own.parent}: the harness wheel was built from other sources than this tree's; "
            f"run `make wheels HW={hw}` again"
        )


def source_digest(repo: Path = Path(".")) -> str:
    """sha256 over what goes into the harness wheel, to tell a stale wheel from a fresh one."""
    digest = hashlib.sha256()
    files = [repo / "pyproject.toml", *(repo / "harness").rglob("*.py")]
    files += (repo / "harness").rglob("*.json")
    for path in sorted(files):
        digest.update(path.relative_to(repo).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _context_excludes(hw: str, repo: Path) -> list[str]:
    """.dockerignore, plus the other targets' wheelhouses (up to gigabytes each)."""
    ignore = repo / ".dockerignore"
    lines = ignore.read_text().splitlines() if ignore.is_file() else []
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    others = [name for name in HW_TARGETS if name != hw]
    return patterns + [f"build/wheels/{name}{suffix}" for name in others for suffix in ("", "-*")]


def _follow_build(stream: Iterator[Mapping[str, Any]], tag: str, progress: IO[str] | None) -> None:
    """Print the build log as it comes; a failed step becomes one line that names it."""
    step, last = "its start", "(none)"
    for chunk in stream:
        if "error" in chunk:
            code = re.search(r"returned a non-zero code: (\d+)", str(chunk["error"]))
            what = f"exit code {code.group(1)}" if code else " ".join(str(chunk["error"]).split())
            hint = PULL_HINT if " FROM " in step and not code else ""
            raise DeviceError(
                f"docker build of {tag} failed at {_shorten(step)}: {what}; last output: {last}"
                + hint
            )
        for line in ANSI_ESCAPE.sub("", str(chunk.get("stream", ""))).splitlines():
            if progress is not None:
                print(line, file=progress, flush=True)
            if line.startswith("Step "):
                step = line.strip()
            elif line.strip() and not line.startswith(BUILDER_CHATTER):
                last = line.strip()


def _shorten(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def build_args(hw: str, *, repo: Path, base_image: str | None = None) -> dict[str, str]:
    """The build arguments that end up as the image's OCI and beyond-tops labels."""
    lock = repo / "docker" / hw / "requirements.lock"
    args = {
        "HARNESS_VERSION": harness.__version__,
        "GIT_COMMIT": git_commit(repo),
        "LOCK_SHA256": hashlib.sha256(lock.read_bytes()).hexdigest(),
        "SOURCE_URL": _git(repo, "remote", "get-url", "origin") or "unknown",
    }
    if base_image:
        args["BASE_IMAGE"] = base_image
    return args


def git_commit(repo: Path) -> str:
    """HEAD's commit, with "-dirty" when the work tree has changes; "unknown" outside git."""
    commit = _git(repo, "rev-parse", "HEAD")
    if commit is None:
        return "unknown"
    return commit + ("-dirty" if _git(repo, "status", "--porcelain") else "")


def _git(repo: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip()


def default_tag(hw: str, *, repo: Path) -> str:
    """beyond-tops/<hw>:<version>-<commit>: a new commit means a new image."""
    commit = git_commit(repo)
    short = "nogit" if commit == "unknown" else commit[:12] + commit[40:]
    return f"{IMAGE_REPO}/{hw}:{harness.__version__}-{short}"


def ensure_image(
    hw: str, *, repo: Path = Path("."), client: Any = None, progress: IO[str] | None = None
) -> ImageRef:
    """The image for this commit, built first if missing (always rebuilt from a dirty tree)."""
    client = client if client is not None else connect()
    tag = default_tag(hw, repo=repo)
    docker = _import_docker()
    if not tag.endswith("-dirty"):
        try:
            return _image_ref(client.images.get(tag), tag)
        except docker.errors.ImageNotFound:
            pass
    return build_image(hw, tag=tag, repo=repo, client=client, progress=progress)


def _image_ref(image: Any, tag: str) -> ImageRef:
    return ImageRef(id=str(image.id), tag=tag, labels=dict(image.labels or {}))


def run_suite_in_container(
    run: SuiteRun,
    image: ImageRef,
    *,
    client: Any = None,
    out: IO[str] = sys.stdout,
    err: IO[str] = sys.stderr,
) -> tuple[int, list[Path]]:
    """Run `harness bench` in the image; returns its exit code and the host run directories."""
    client = client if client is not None else connect()
    devices = nvidia_devices(client, image) if run.hw == "nvidia" else device_kwargs(run.hw)
    results = run.results_dir.resolve()
    cache = (run.cache_dir or default_cache_dir()).resolve()
    results.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    docker = _import_docker()
    kwargs = run_kwargs(run, image, results, cache, devices=devices)
    try:
        container = client.containers.run(image.id, **kwargs)
    except docker.errors.ImageNotFound:
        raise _image_gone(image) from None
    except docker.errors.APIError as exc:
        raise _run_error(exc, run.hw) from None
    try:
        mapper = RunDirMapper(results)
        _stream(container, mapper, out, err)
        code = int(container.wait()["StatusCode"])
    except KeyboardInterrupt:
        container.kill(signal="SIGINT")  # the harness marks its run INCOMPLETE and exits
        container.wait(timeout=120)
        raise
    finally:
        container.remove(force=True)
    return code, mapper.run_dirs


def run_kwargs(
    run: SuiteRun,
    image: ImageRef,
    results: Path,
    cache: Path,
    *,
    devices: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything `containers.run` gets besides the image: command, mounts, user, devices.

    `devices` is what `nvidia_devices` found the daemon accepts; by default `device_kwargs`.
    """
    command = ["harness", "bench", run.suite, "--hw", run.hw, "--out", str(CONTAINER_RUNS)]
    if run.profile:
        command += ["--profile", run.profile]
    kwargs: dict[str, Any] = {
        "command": command,
        "detach": True,
        "init": True,
        "user": f"{os.getuid()}:{os.getgid()}",  # files written to the mounts are the user's
        "working_dir": "/work",
        "environment": {
            **run.extra_env,
            "BEYOND_TOPS_IMAGE_ID": image.id,
            "BEYOND_TOPS_IMAGE_TAG": image.tag,
            "BEYOND_TOPS_CACHE": str(CONTAINER_CACHE),
            "HOME": "/tmp",
        },
        "volumes": {
            str(results): {"bind": str(CONTAINER_RUNS), "mode": "rw"},
            str(cache): {"bind": str(CONTAINER_CACHE), "mode": "rw"},
        },
    }
    kwargs.update(device_kwargs(run.hw) if devices is None else devices)
    return kwargs


def device_kwargs(hw: str, *, cdi: bool = False) -> dict[str, Any]:
    """How each target reaches its accelerator from inside the container.

    nvidia: `--gpus all`, or with `cdi` the CDI device `nvidia.com/gpu=all`.
    """
    if hw == "nvidia":
        docker = _import_docker()
        if cdi:  # `docker run --device nvidia.com/gpu=all`
            request = docker.types.DeviceRequest(driver="cdi", device_ids=["nvidia.com/gpu=all"])
        else:  # `docker run --gpus all`
            request = docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])
        return {"device_requests": [request]}
    if hw == "rocm":
        missing = [path for path in ROCM_DEVICES if not os.path.exists(path)]
        if missing:
            raise DeviceError(
                f"HW=rocm: {', '.join(missing)} not found; install the amdgpu driver "
                "(ROCm) on this host, or use another HW"
            )
        return {
            "devices": [f"{path}:{path}:rwm" for path in ROCM_DEVICES],
            "group_add": rocm_groups(),
        }
    return {}


def rocm_groups(dev: Path = Path("/dev")) -> list[str]:
    """GIDs that may open /dev/kfd and /dev/dri: video and render by name, and the devices'."""
    gids: set[int] = set()
    for name in ROCM_GROUPS:
        try:
            gids.add(grp.getgrnam(name).gr_gid)
        except KeyError:
            continue
    for path in (dev / "kfd", *sorted((dev / "dri").glob("render*"))):
        try:
            gids.add(path.stat().st_gid)
        except OSError:
            continue
    return [str(gid) for gid in sorted(gids - {0})]


def default_cache_dir() -> Path:
    """The host's model and engine cache, the same one a local run uses."""
    root = os.environ.get("BEYOND_TOPS_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "beyond-tops"


def nvidia_devices(client: Any, image: ImageRef) -> dict[str, Any]:
    """The device request with which this daemon gives containers the GPUs, asked of the daemon.

    `--gpus all` needs the NVIDIA Container Toolkit's nvidia-container-runtime-hook on dockerd's
    PATH, not a registered `nvidia` runtime: a registered runtime (the toolkit is installed) is a
    fast yes, anything else is settled by starting a trivial container of `image` with the
    bench's own request. CDI (`nvidia.com/gpu=all`), where the daemon has CDI spec dirs, is the
    second try. Raises a DeviceError with the fix when the daemon gives no GPU either way.
    """
    info = client.info()
    gpus = device_kwargs("nvidia")
    if "nvidia" in (info.get("Runtimes") or {}):
        return gpus
    refusal = _refusal(client, image, gpus)
    if refusal is None:
        return gpus
    if info.get("CDISpecDirs"):
        cdi = device_kwargs("nvidia", cdi=True)
        if _refusal(client, image, cdi) is None:
            return cdi
    raise _gpu_error(refusal, info)


def _refusal(client: Any, image: ImageRef, devices: Mapping[str, Any]) -> str | None:
    """None when the daemon starts a container with these devices, else the daemon's error."""
    docker = _import_docker()
    try:
        probe = client.containers.create(image.id, command=["true"], **devices)
    except docker.errors.ImageNotFound:
        raise _image_gone(image) from None
    except docker.errors.APIError as exc:
        return _explain(exc)
    try:
        probe.start()  # the daemon picks a device driver, and the toolkit's hook runs, only here
    except docker.errors.APIError as exc:
        return _explain(exc)
    finally:
        probe.remove(force=True)
    return None


def docker_cli_flags(devices: Mapping[str, Any]) -> list[str]:
    """The `docker run` flags that ask for the same devices, for scripts that use the CLI."""
    flags = []
    for request in devices.get("device_requests", []):
        if request["Driver"] == "cdi":
            flags += [f"--device={name}" for name in request["DeviceIDs"]]
        else:
            flags.append("--gpus=all")
    return flags


def _gpu_error(text: str, info: Mapping[str, Any] | None = None) -> DeviceError:
    if NO_DEVICE_DRIVER not in text:
        return DeviceError(
            f"HW=nvidia: Docker could not start a container with the GPUs ({text}); "
            + NVIDIA_START_FIX
        )
    seen = ""
    if info is not None:
        runtimes = ", ".join(sorted(info.get("Runtimes") or {})) or "none"
        cdi = ", ".join(info.get("CDISpecDirs") or []) or "none"
        seen = f"; runtimes: {runtimes}; CDI spec dirs: {cdi}"
    return DeviceError(
        "HW=nvidia: Docker cannot give containers the GPUs: the daemon has no GPU device driver "
        f"({text}{seen}); " + NVIDIA_GPU_FIX
    )


def _image_gone(image: ImageRef) -> DeviceError:
    return DeviceError(f"image {image.tag} ({image.id}) is gone; run `make image`")


def _run_error(exc: BaseException, hw: str) -> DeviceError:
    text = _explain(exc)
    if hw == "nvidia" and ("nvidia-container-cli" in text or NO_DEVICE_DRIVER in text):
        return _gpu_error(text)
    return DeviceError(f"docker could not start the {hw} container: {text}")


def _explain(exc: BaseException) -> str:
    explanation = getattr(exc, "explanation", None) or str(exc)
    return " ".join(str(explanation).split())


class RunDirMapper:
    """Rewrites container run paths to host paths and collects the run directories listed."""

    def __init__(self, results: Path) -> None:
        self.results = results
        self.run_dirs: list[Path] = []
        self._pending = {"out": "", "err": ""}

    def feed(self, stream: str, data: str) -> list[str]:
        """Complete lines of one stream (out or err), rewritten; partial lines are held."""
        text = self._pending[stream] + data
        *lines, self._pending[stream] = text.split("\n")
        return [self._line(line, stream) for line in lines]

    def flush(self, stream: str) -> list[str]:
        """Whatever partial line a stream still holds."""
        rest, self._pending[stream] = self._pending[stream], ""
        return [self._line(rest, stream)] if rest else []

    def _line(self, line: str, stream: str) -> str:
        bare = line.strip()
        prefix = f"{CONTAINER_RUNS}/"
        if stream == "out" and bare.startswith(prefix) and not any(c.isspace() for c in bare):
            host = self.results / PurePosixPath(bare).relative_to(CONTAINER_RUNS)
            if host not in self.run_dirs:
                self.run_dirs.append(host)
        return line.replace(str(CONTAINER_RUNS), str(self.results))


def _stream(container: Any, mapper: RunDirMapper, out: IO[str], err: IO[str]) -> None:
    chunks = container.attach(stdout=True, stderr=True, stream=True, logs=True, demux=True)
    for stdout, stderr in chunks:
        for name, data, sink in (("out", stdout, out), ("err", stderr, err)):
            if data:
                _write(mapper.feed(name, data.decode(errors="replace")), sink)
    _write(mapper.flush("out"), out)
    _write(mapper.flush("err"), err)


def _write(lines: Sequence[str], sink: IO[str]) -> None:
    for line in lines:
        print(line, file=sink, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m harness.container build|bench`: what `make image` and `make bench` call."""
    args = _parser().parse_args(argv)
    return run_reporting_errors(lambda: int(args.func(args)))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness.container", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    build = verbs.add_parser("build", help="build docker/<hw> from build/wheels/<hw>")
    build.add_argument("--hw", choices=HW_TARGETS, default="cpu")
    build.add_argument("--base-image", help="override the Dockerfile's pinned BASE_IMAGE")
    build.add_argument("--tag", help="image tag (default: beyond-tops/<hw>:<version>-<commit>)")
    build.set_defaults(func=_build)
    ensure = verbs.add_parser("ensure", help="print this commit's image, building it if missing")
    ensure.add_argument("--hw", choices=HW_TARGETS, default="cpu")
    ensure.set_defaults(func=_ensure)
    digest = verbs.add_parser("source-digest", help="sha256 of the harness wheel's sources")
    digest.set_defaults(func=_print_source_digest)
    gpus = verbs.add_parser(
        "gpus", help="check that Docker gives containers the GPUs; print the `docker run` flags"
    )
    gpus.add_argument("--image", help="image to probe with (default: this commit's nvidia image)")
    gpus.set_defaults(func=_gpus)
    bench = verbs.add_parser("bench", help="run a suite inside the image (built if missing)")
    bench.add_argument("--hw", choices=HW_TARGETS, default="cpu")
    bench.add_argument("--suite", default="quick")
    bench.add_argument("--profile", choices=("quick", "submission"))
    bench.add_argument("--image", help="run this image tag instead of this commit's")
    bench.add_argument("--results", type=Path, default=Path("results/runs"))
    bench.add_argument("--cache", type=Path, help="model cache (default: BEYOND_TOPS_CACHE)")
    bench.set_defaults(func=_bench)
    return parser


def _build(args: argparse.Namespace) -> int:
    image = build_image(args.hw, base_image=args.base_image, tag=args.tag, progress=sys.stderr)
    print(f"{image.id} {image.tag}")
    return 0


def _print_source_digest(args: argparse.Namespace) -> int:
    print(source_digest())
    return 0


def _ensure(args: argparse.Namespace) -> int:
    image = ensure_image(args.hw, progress=sys.stderr)
    print(f"{image.id} {image.tag}")
    return 0


def _gpus(args: argparse.Namespace) -> int:
    client = connect()
    if args.image:
        image = _named_image(client, args.image)
    else:
        image = ensure_image("nvidia", client=client, progress=sys.stderr)
    print(" ".join(docker_cli_flags(nvidia_devices(client, image))))
    return 0


def _bench(args: argparse.Namespace) -> int:
    client = connect()
    if args.image:
        image = _named_image(client, args.image)
    else:
        image = ensure_image(args.hw, client=client, progress=sys.stderr)
    print(f"== image {image.tag} ({image.id})", file=sys.stderr)
    run = SuiteRun(
        hw=args.hw,
        suite=args.suite,
        profile=args.profile,
        results_dir=args.results,
        cache_dir=args.cache,
    )
    # The harness lists its run directories last; they arrive already mapped to host paths.
    code, _ = run_suite_in_container(run, image, client=client)
    return code


def _named_image(client: Any, tag: str) -> ImageRef:
    docker = _import_docker()
    try:
        return _image_ref(client.images.get(tag), tag)
    except docker.errors.ImageNotFound:
        raise DeviceError(f"no image {tag}; build it with `make image`") from None


if __name__ == "__main__":
    raise SystemExit(main())
