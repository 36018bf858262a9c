#!/usr/bin/env python3
"""Resolve each image's Python dependencies into a pip --require-hashes lock file.

Usage: python scripts/lock.py cpu|nvidia|rocm|all

Why `pip download` and not pip-compile: the GPU images run another CPython (3.12) than the
host, and every image runs on Linux x86_64 with a known glibc. pip-compile resolves for the
interpreter it runs in; `pip download --platform/--python-version/--abi` resolves for the
target and hands back the exact wheel files, whose sha256 we then record. The lock is
therefore exactly what `make wheels` will fetch and what the image installs.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
LOCAL_SOURCES = ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX", "PIP_CONFIG_FILE")
ORT_NAMES = ("onnxruntime", "onnxruntime-gpu", "onnxruntime-migraphx")


@dataclass(frozen=True, kw_only=True)
class LockTarget:
    """What one image needs: its Python, its glibc, its onnxruntime build and extras."""

    hw: str
    python: str  # the base image's CPython, major.minor
    glibc: str  # the base image's glibc, as manylinux_<glibc>_x86_64
    ort: str  # the onnxruntime distribution and version range
    extras: tuple[str, ...] = ()
    note: str = ""

    def pip_target_args(self) -> list[str]:
        """The pip options that select wheels for the image, not for this host."""
        abi = "cp" + self.python.replace(".", "")
        # pip does not widen a manylinux_2_N platform to older glibc tags: name each one.
        newest = int(self.glibc.split("_")[1])
        platforms = [f"manylinux_2_{minor}_x86_64" for minor in range(newest, 16, -1)]
        platforms += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
        return [
            "--only-binary=:all:",
            *(arg for platform in platforms for arg in ("--platform", platform)),
            "--python-version",
            self.python,
            "--implementation",
            "cp",
            "--abi",
            abi,
        ]


TARGETS = {
    "cpu": LockTarget(
        hw="cpu",
        python="3.11",
        glibc="2_36",
        ort="onnxruntime>=1.31,<1.33",
        extras=("llm",),  # onnxruntime-genai: the generative models
    ),
    "nvidia": LockTarget(
        hw="nvidia",
        python="3.12",
        glibc="2_39",
        # PyPI's onnxruntime-gpu 1.31 is the CUDA 13 build (libcudart.so.13, libnvinfer.so.10);
        # 1.31.1 is the newest onnxruntime-gpu published. CUDA, cuDNN and TensorRT come from
        # the base image, so the [cuda,cudnn] extras are not installed.
        ort="onnxruntime-gpu>=1.31,<1.33",
        extras=("nvidia", "llm-cuda"),
        note="CUDA/cuDNN/TensorRT come from the base image (see docker/nvidia/Dockerfile)",
    ),
    "rocm": LockTarget(
        hw="rocm",
        python="3.12",
        glibc="2_39",
        # onnxruntime removed its ROCm EP in 1.23; MIGraphX is the AMD path. 1.27.1 is the
        # newest onnxruntime-migraphx on PyPI, built against ROCm 7.2.4 (its RUNPATH).
        ort="onnxruntime-migraphx==1.27.1",
        extras=("rocm",),
        note="onnxruntime-migraphx 1.27.1 is below pyproject's onnxruntime range (newest on PyPI)",
    ),
}


def requirements(target: LockTarget, pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The image's top-level requirements: pyproject's, with the target's onnxruntime."""
    project = tomllib.loads(pyproject.read_text())["project"]
    reqs = ["pip"]  # bootstraps the venv in the image; locked like everything else
    for req in project["dependencies"]:
        reqs.append(target.ort if _name(req) in ORT_NAMES else req)
    for extra in target.extras:
        reqs.extend(project["optional-dependencies"][extra])
    return reqs


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    if match is None:
        raise SystemExit(f"cannot parse requirement {requirement!r}")
    return match.group(0).lower().replace("_", "-")


def resolve(target: LockTarget, reqs: list[str], dest: Path) -> None:
    """Download the target's wheels, with all transitive dependencies, into dest."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(dest)]
    command += target.pip_target_args() + reqs
    subprocess.run(command, check=True, env=index_only_env())


def index_only_env() -> dict[str, str]:
    """This environment, less any local wheel folders or extra indexes pip is configured with.

    A lock must name the files the package index serves, not a locally built wheel.
    """
    env = {k: v for k, v in os.environ.items() if k not in LOCAL_SOURCES}
    return {**env, "PIP_CONFIG_FILE": os.devnull}  # devnull: pip reads no config file


def wheel_entries(wheels: Path) -> list[tuple[str, str, str, str]]:
    """(name, version, filename, sha256) for every wheel in a directory, sorted by name."""
    entries = []
    for wheel in sorted(wheels.glob("*.whl")):
        name, version = wheel.name.split("-")[:2]
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        entries.append((name.lower().replace("_", "-"), version, wheel.name, digest))
    leftovers = [p.name for p in wheels.iterdir() if p.suffix != ".whl"]
    if leftovers:
        raise SystemExit(f"not wheels, cannot lock: {', '.join(leftovers)}")
    return sorted(entries)


def render_lock(
    target: LockTarget, reqs: list[str], entries: list[tuple[str, str, str, str]]
) -> str:
    """The lock file text: a header that says how it was made, then hashed pins."""
    pip_version = subprocess.run(
        [sys.executable, "-m", "pip", "--version"], check=True, capture_output=True, text=True
    ).stdout.split()[1]
    lines = [
        f"# docker/{target.hw}/requirements.lock: every Python package of the {target.hw} image,",
        "# pinned with its sha256. Do not edit: regenerate with",
        f"#   python scripts/lock.py {target.hw}",
        f"# which ran pip {pip_version} `download` for these requirements:",
        *(f"#   {req}" for req in reqs),
        "# and hashed the wheels it fetched. Wheels only, for the image's CPython and glibc:",
        f"# pip-target: {' '.join(target.pip_target_args())}",
    ]
    if target.note:
        lines.append(f"# note: {target.note}")
    lines.append("")
    for name, version, filename, digest in entries:
        lines += [f"# {filename}", f"{name}=={version} \\", f"    --hash=sha256:{digest}"]
    return "\n".join(lines) + "\n"


def lock(hw: str) -> Path:
    """Write docker/<hw>/requirements.lock and return its path."""
    target = TARGETS[hw]
    reqs = requirements(target)
    with tempfile.TemporaryDirectory(prefix=f"lock-{hw}-") as tmp:
        resolve(target, reqs, Path(tmp))
        entries = wheel_entries(Path(tmp))
    path = ROOT / "docker" / hw / "requirements.lock"
    path.write_text(render_lock(target, reqs, entries))
    return path


def main(argv: list[str] | None = None) -> int:
    """Lock one image, or all of them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hw", choices=[*TARGETS, "all"])
    args = parser.parse_args(argv)
    for hw in TARGETS if args.hw == "all" else [args.hw]:
        print(f"locked {lock(hw).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
