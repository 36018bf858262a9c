"""Kernel, OS release, glibc and architecture; container detection from several clues."""

from __future__ import annotations

import os
from collections.abc import Mapping

from harness.fingerprint.cgroup import proc_dir
from harness.fingerprint.probe import Probe
from harness.records.fingerprint_sections import ContainerInfo, OsInfo

# Substring of /proc/1/cgroup -> container runtime; kubepods first, its paths also say docker.
CGROUP_MARKERS = (
    ("kubepods", "kubernetes"),
    ("docker", "docker"),
    ("libpod", "podman"),
    ("containerd", "containerd"),
    ("crio", "cri-o"),
    ("lxc", "lxc"),
)
OVERLAY_TYPES = ("overlay", "fuse-overlayfs", "aufs")
IMAGE_ID_VAR = "BEYOND_TOPS_IMAGE_ID"
IMAGE_TAG_VAR = "BEYOND_TOPS_IMAGE_TAG"


def collect_os(probe: Probe) -> OsInfo:
    """Kernel release, OS name, C library version and machine architecture."""
    return OsInfo(
        kernel=probe.text("proc/sys/kernel/osrelease", "os.kernel"),
        release=_os_release(probe),
        glibc=_glibc(probe),
        arch=_arch(probe),
    )


def _os_release(probe: Probe) -> str | None:
    text = probe.optional("etc/os-release") or probe.optional("usr/lib/os-release")
    if text is None:
        probe.note("os.release", "/etc/os-release not present")
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "PRETTY_NAME":
            return value.strip().strip("\"'")
    probe.note("os.release", "no PRETTY_NAME in /etc/os-release")
    return None


def _glibc(probe: Probe) -> str | None:
    if not probe.is_live:
        probe.note("os.glibc", "only readable for the running system (root is not /)")
        return None
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        text = None
    if not text or not text.startswith("glibc "):
        probe.note("os.glibc", "the C library is not glibc (musl?)")
        return None
    return text.removeprefix("glibc ")


def _arch(probe: Probe) -> str | None:
    arch = probe.optional("proc/sys/kernel/arch")
    if arch is None and probe.is_live:
        return os.uname().machine
    if arch is None:
        probe.note("os.arch", "/proc/sys/kernel/arch not present (older kernel)")
    return arch


def collect_container(
    probe: Probe, environ: Mapping[str, str], *, pid: int | None = None
) -> ContainerInfo:
    """Whether we run in a container, with the evidence; `/.dockerenv` alone does not count."""
    evidence, runtimes = _container_clues(probe, environ, proc_dir(pid))
    ignored: list[str] = []
    if probe.exists(".dockerenv"):
        if evidence:
            evidence.append("/.dockerenv exists")
            runtimes.append("docker")
        else:
            ignored.append("/.dockerenv exists, but nothing else suggests a container")
    image_id = environ.get(IMAGE_ID_VAR)
    if evidence and image_id is None:
        probe.note(
            "container.image_id",
            f"{IMAGE_ID_VAR} not set: not started by the harness's docker runner",
        )
    return ContainerInfo(
        detected=bool(evidence),
        runtime=runtimes[0] if runtimes else None,
        evidence=tuple(evidence),
        ignored_evidence=tuple(ignored),
        image_id=image_id,
        image_tag=environ.get(IMAGE_TAG_VAR),
    )


def _container_clues(
    probe: Probe, environ: Mapping[str, str], proc: str
) -> tuple[list[str], list[str]]:
    """Evidence lines and runtime guesses from PID 1's cgroup, the root mount and markers."""
    evidence: list[str] = []
    runtimes: list[str] = []
    cgroup = probe.text("proc/1/cgroup", "container.detected")
    for marker, runtime in CGROUP_MARKERS:
        if cgroup is not None and marker in cgroup:
            evidence.append(f"/proc/1/cgroup mentions {marker}")
            runtimes.append(runtime)
    fstype = _root_fstype(probe.text(f"{proc}/mountinfo", "container.detected") or "")
    if fstype in OVERLAY_TYPES:
        evidence.append(f"root filesystem is {fstype} (/{proc}/mountinfo)")
    if probe.exists("run/.containerenv"):
        evidence.append("/run/.containerenv exists")
        runtimes.append("podman")
    if environ.get("container"):
        evidence.append(f"$container is {environ['container']!r}")
        runtimes.append(environ["container"])
    return evidence, runtimes


def _root_fstype(mountinfo: str) -> str | None:
    """The filesystem type mounted at / in a /proc/<pid>/mountinfo text."""
    fstype = None
    for line in mountinfo.splitlines():
        fields, _, tail = line.partition(" - ")
        parts = fields.split()
        if len(parts) >= 5 and parts[4] == "/" and tail:
            fstype = tail.split()[0]  # the last mount on / wins, as the kernel shows it
    return fstype
