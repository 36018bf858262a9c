"""Per-hardware Docker images: connect to the daemon, build, find or ensure this commit's image."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

import harness
from harness.errors import DependencyError, DeviceError
from harness.gitstate import git_output, read_git_state
from harness.hardware import HW_NAMES, TARGETS
from harness.strictjson import JsonObject

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
BUILDER_CHATTER = (" ---> ", "Removing intermediate container", "Successfully ")
PULL_HINT = (
    "; the base image could not be pulled: `docker load` it from a machine that can reach "
    "its registry, or build on another base with --base-image"
)


@dataclass(frozen=True, kw_only=True)
class ImageRef:
    """A built image: its content ID, the tag it was built under, and its labels."""

    id: str
    tag: str
    labels: Mapping[str, str] = field(default_factory=dict)


def connect() -> Any:
    """A Docker Engine API client, or a DeviceError that says what is missing and the fix."""
    docker = import_docker()
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        raise _connection_error(exc) from None
    return client


def import_docker() -> Any:
    """The Docker SDK, imported only when Docker is used (execution.containers calls this too)."""
    try:
        import docker
    except ImportError:
        raise DependencyError(
            "the `docker` Python package is missing; install it with "
            "`.venv/bin/pip install -e '.[host]'` (or use --runner local)"
        ) from None
    return docker


def explain(exc: BaseException) -> str:
    """The daemon's explanation of an API error, on one line."""
    explanation = getattr(exc, "explanation", None) or str(exc)
    return " ".join(str(explanation).split())


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
            f"{socket}); install Docker Engine, or use --runner local"
        )
    return DeviceError(
        f"the Docker daemon is not running (nothing answers on {socket}); start it with "
        "`sudo systemctl start docker`, or use --runner local"
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
    check_hw(hw)
    _check_wheelhouse(hw, repo)
    client = client if client is not None else connect()
    tag = tag or default_tag(hw, repo=repo)
    buildargs = build_args(hw, repo=repo, base_image=base_image)
    docker = import_docker()
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
        raise DeviceError(f"docker build of {tag} failed: {explain(exc)}") from None
    finally:
        context.close()
    return _image_ref(client.images.get(tag), tag)


def check_hw(hw: str) -> None:
    """A DeviceError unless `hw` has an image."""
    if hw not in HW_NAMES:
        raise DeviceError(f"HW={hw}: no image for this target (images: {', '.join(HW_NAMES)})")


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
    others = [name for name in HW_NAMES if name != hw]
    return patterns + [f"build/wheels/{name}{suffix}" for name in others for suffix in ("", "-*")]


def _follow_build(stream: Iterator[JsonObject], tag: str, progress: IO[str] | None) -> None:
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
        "SOURCE_URL": public_url(git_output(repo, "remote", "get-url", "origin") or "unknown"),
    }
    if base_image:
        args["BASE_IMAGE"] = base_image
    return args


def public_url(url: str) -> str:
    """A remote's URL without what may hold credentials: user:password@, query and fragment.

    https://user:token@host/x becomes https://host/x; the scp-like ssh form user@host:path
    becomes host/path. A URL without any of them (or a local path) stays as it is.
    """
    if "://" in url:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    userinfo, at, rest = url.partition("@")
    if not at or "/" in userinfo:
        return url  # a local path, which may contain "@" anywhere but before its first "/"
    host, _, path = rest.partition(":")
    return f"{host}/{path.lstrip('/')}" if path else host


def git_commit(repo: Path) -> str:
    """HEAD's commit, "-dirty" added by harness.gitstate's rule; "unknown" outside git.

    A tree whose state git cannot tell counts as clean here: its commit alone names it.
    """
    state = read_git_state(repo)
    if state.commit is None:
        return "unknown"
    return state.commit + ("-dirty" if state.dirty else "")


def default_tag(hw: str, *, repo: Path) -> str:
    """beyond-tops/<hw>:<version>-<commit>: a new commit means a new image."""
    check_hw(hw)
    commit = git_commit(repo)
    short = "nogit" if commit == "unknown" else commit[:12] + commit[40:]
    return f"{TARGETS[hw].image}:{harness.__version__}-{short}"


def ensure_image(
    hw: str, *, repo: Path = Path("."), client: Any = None, progress: IO[str] | None = None
) -> ImageRef:
    """The image for this commit, built first if missing (always rebuilt from a dirty tree)."""
    client = client if client is not None else connect()
    tag = default_tag(hw, repo=repo)
    docker = import_docker()
    if not tag.endswith("-dirty"):
        try:
            return _image_ref(client.images.get(tag), tag)
        except docker.errors.ImageNotFound:
            pass
    return build_image(hw, tag=tag, repo=repo, client=client, progress=progress)


def named_image(client: Any, tag: str) -> ImageRef:
    """An image that must exist already, by tag or ID."""
    docker = import_docker()
    try:
        return _image_ref(client.images.get(tag), tag)
    except docker.errors.ImageNotFound:
        raise DeviceError(f"no image {tag}; build it with `harness image build`") from None


def image_gone(image: ImageRef) -> DeviceError:
    """The error for an image removed between finding it and starting it."""
    return DeviceError(f"image {image.tag} ({image.id}) is gone; run `harness image ensure`")


def _image_ref(image: Any, tag: str) -> ImageRef:
    return ImageRef(id=str(image.id), tag=tag, labels=dict(image.labels or {}))
