"""Static checks of every image, including the GPU ones CI cannot build."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness import hardware

REPO = Path(__file__).resolve().parents[2]
TARGETS = {name: target.ort_package for name, target in hardware.TARGETS.items()}
ORT_PACKAGES = set(hardware.ONNXRUNTIME_BUILDS)
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+) \\$")
HASH = re.compile(r"^--hash=sha256:[0-9a-f]{64}$")
REQUIRED_LABELS = {
    "org.opencontainers.image.title",
    "org.opencontainers.image.version",
    "org.opencontainers.image.revision",
    "org.opencontainers.image.source",
    "beyond-tops.hw",
    "beyond-tops.lock-sha256",
}
GPU_LABELS = {"nvidia": {"beyond-tops.cuda", "beyond-tops.cudnn", "beyond-tops.tensorrt"}}
GPU_LABELS["rocm"] = {"beyond-tops.rocm"}


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str


def instructions(path: Path) -> list[Instruction]:
    """A Dockerfile's instructions, continuation lines joined and comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, f"{path}: ends inside a continued line"
    return [Instruction(text.split()[0].upper(), text.split(None, 1)[1]) for text in logical]


def from_images(path: Path) -> list[str]:
    """Every FROM's image, with ARG defaults substituted (stage names are not images)."""
    defaults: dict[str, str] = {}
    stages: set[str] = set()
    images = []
    for ins in instructions(path):
        if ins.keyword == "ARG" and "=" in ins.args:
            name, value = ins.args.split("=", 1)
            defaults.setdefault(name.strip(), value.strip().strip('"'))
        elif ins.keyword == "FROM":
            words = [w for w in ins.args.split() if not w.startswith("--")]
            image = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: defaults[m[1] or m[2]], words[0])
            if len(words) == 3 and words[1].upper() == "AS":
                stages.add(words[2])
            if image not in stages:
                images.append(image)
    return images


def labels(path: Path) -> set[str]:
    found = set()
    for ins in instructions(path):
        if ins.keyword == "LABEL":
            found |= set(re.findall(r'([A-Za-z0-9._-]+)="', ins.args))
    return found


def lock_entries(path: Path) -> list[tuple[str, str, list[str]]]:
    """(name, version, hash options) of each pinned package in a --require-hashes lock."""
    entries: list[tuple[str, str, list[str]]] = []
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pin = PIN.match(line)
        if pin:
            entries.append((pin[1].lower().replace("_", "-"), pin[2], []))
            continue
        assert entries, f"{path}: {line!r} comes before any pin"
        entries[-1][2].append(line.rstrip(" \\"))
    return entries


@pytest.fixture(params=sorted(TARGETS))
def hw(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def dockerfile(hw: str) -> Path:
    return REPO / "docker" / hw / "Dockerfile"


def lockfile(hw: str) -> Path:
    return REPO / "docker" / hw / "requirements.lock"


def test_every_from_is_pinned_by_digest(hw: str) -> None:
    images = from_images(dockerfile(hw))
    assert images
    for image in images:
        assert DIGEST.search(image), f"{hw}: FROM {image} is not pinned by @sha256 digest"


def test_no_latest_tags(hw: str) -> None:
    for image in from_images(dockerfile(hw)):
        name = image.split("@")[0]
        assert not name.endswith(":latest") and ":" in name.split("/")[-1], (
            f"{hw}: {image} must name a version tag next to its digest"
        )
    assert ":latest" not in dockerfile(hw).read_text()


def test_the_image_runs_as_a_non_root_user(hw: str) -> None:
    users = [
        ins.args.split(":")[0] for ins in instructions(dockerfile(hw)) if ins.keyword == "USER"
    ]
    assert users, f"{hw}: no USER"
    assert users[-1] not in ("root", "0"), f"{hw}: the last USER is {users[-1]}"


def test_labels_are_present(hw: str) -> None:
    missing = (REQUIRED_LABELS | GPU_LABELS.get(hw, set())) - labels(dockerfile(hw))
    assert not missing, f"{hw}: missing labels {sorted(missing)}"


def test_every_pip_install_is_offline_and_hash_checked(hw: str) -> None:
    runs = [ins.args for ins in instructions(dockerfile(hw)) if ins.keyword == "RUN"]
    installs = [cmd for run in runs for cmd in run.split("&&") if " install " in f" {cmd} "]
    assert installs, f"{hw}: no pip install"
    for cmd in installs:
        assert "pip" in cmd, f"{hw}: a non-pip install: {cmd.strip()}"
        for flag in ("--no-index", "--require-hashes", " -r "):
            assert flag in cmd, f"{hw}: {flag.strip()} missing from: {' '.join(cmd.split())}"


def test_no_network_package_managers(hw: str) -> None:
    text = " ".join(ins.args for ins in instructions(dockerfile(hw)) if ins.keyword == "RUN")
    for tool in ("apt-get", "apt ", "curl", "wget", "dnf", "yum"):
        assert tool not in text, f"{hw}: {tool.strip()} in a RUN would need the network"


def test_lock_lines_are_pinned_with_hashes(hw: str) -> None:
    entries = lock_entries(lockfile(hw))
    assert len(entries) >= 5
    for name, version, hashes in entries:
        assert version, name
        assert hashes and all(HASH.match(h) for h in hashes), f"{hw}: {name} has no sha256"


def test_lock_names_the_onnxruntime_of_its_target(hw: str) -> None:
    names = {name for name, _, _ in lock_entries(lockfile(hw))}
    assert TARGETS[hw] in names
    assert not (ORT_PACKAGES - {TARGETS[hw]}) & names, f"{hw}: another onnxruntime build"


def test_lock_holds_the_project_dependencies_and_pip(hw: str) -> None:
    names = {name for name, _, _ in lock_entries(lockfile(hw))}
    assert {"pip", "mlcommons-loadgen", "onnx", "numpy", "pyyaml"} <= names


def test_lock_says_how_it_was_made(hw: str) -> None:
    text = lockfile(hw).read_text()
    assert f"python scripts/lock.py {hw}" in text
    assert re.search(r"^# pip-target: .*--python-version 3\.\d+", text, re.MULTILINE)


def test_the_lock_matches_the_python_of_the_base() -> None:
    """cpu runs Debian's CPython 3.11; the NVIDIA and ROCm bases (Ubuntu 24.04) carry 3.12."""
    for hw, abi in (("cpu", "cp311"), ("nvidia", "cp312"), ("rocm", "cp312")):
        text = lockfile(hw).read_text()
        assert f"--abi {abi}" in text
        wheels = re.findall(r"^# (\S+)\.whl$", text, re.MULTILINE)
        assert len(wheels) == len(lock_entries(lockfile(hw)))
        for wheel in wheels:
            abi_tag = wheel.split("-")[-2]
            assert abi_tag in (abi, "abi3", "none"), f"{hw}: {wheel} is for another CPython"


def test_dockerignore_keeps_the_context_small() -> None:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    assert lines[lines.index("*") + 1 :].count("!build/wheels/") == 1
    assert "!.venv/" not in lines and "!results/" not in lines


def test_lock_satisfies_pyproject(hw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dependency range changed in pyproject.toml means: run `python scripts/lock.py HW`."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    for extra in _lock_script(monkeypatch).TARGETS[hw].extras:
        wanted += [Requirement(r) for r in project["optional-dependencies"][extra]]
    locked = {name: version for name, version, _ in lock_entries(lockfile(hw))}
    for req in wanted:
        name = canonicalize_name(req.name)
        if name in ORT_PACKAGES:
            continue  # each image has its own onnxruntime build, checked above
        assert name in locked, f"{hw}: {name} is not locked; run `python scripts/lock.py {hw}`"
        assert req.specifier.contains(locked[name]), (
            f"{hw}: {name}=={locked[name]} is outside {req.specifier}; "
            f"run `python scripts/lock.py {hw}`"
        )


# ---- the nvidia image's provider-library check, run against a stub ldd ----

CHECK = REPO / "docker" / "nvidia" / "check-providers.sh"
PROVIDERS = ("shared", "cuda", "tensorrt")
RESOLVED = "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0000000000)\n"


def run_check(
    tmp_path: Path, ldd_output: dict[str, str], absent: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Run the check on a fake capi directory; each fake library holds what ldd says of it."""
    capi = tmp_path / "onnxruntime" / "capi"
    capi.mkdir(parents=True)
    for name in PROVIDERS:
        if name not in absent:
            text = RESOLVED + ldd_output.get(name, "")
            (capi / f"libonnxruntime_providers_{name}.so").write_text(text)
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "ldd").write_text('#!/bin/sh\ncat "$1"\n')
    (stubs / "ldd").chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}"}
    return subprocess.run(
        ["sh", str(CHECK), str(capi)], env=env, capture_output=True, text=True, check=False
    )


def test_the_nvidia_build_runs_the_provider_check() -> None:
    steps = instructions(dockerfile("nvidia"))
    copies = [i.args for i in steps if i.keyword == "COPY" and "check-providers.sh" in i.args]
    assert copies == ["docker/nvidia/check-providers.sh /usr/local/bin/check-onnxruntime-providers"]
    runs = [i.args for i in steps if i.keyword == "RUN"]
    assert "sh /usr/local/bin/check-onnxruntime-providers" in runs
    assert not any("ldconfig -p" in run for run in runs), "the base is not what the providers load"


def test_provider_check_passes_when_every_library_resolves(tmp_path: Path) -> None:
    done = run_check(tmp_path, {})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("every library found") == 3


def test_provider_check_names_what_each_provider_misses(tmp_path: Path) -> None:
    trt = "\tlibnvinfer.so.10 => not found\n\tlibnvonnxparser.so.10 => not found\n"
    cuda = "\tlibcudnn.so.9 => not found\n\tlibcudart.so.13 => /usr/local/cuda/lib64/x\n"
    done = run_check(tmp_path, {"tensorrt": trt + "\tlibcudnn.so.9 => not found\n", "cuda": cuda})
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    lacks = "cannot load, not found:"
    assert f"libonnxruntime_providers_cuda.so {lacks} libcudnn.so.9" in lines
    assert (
        f"libonnxruntime_providers_tensorrt.so {lacks} "
        "libcudnn.so.9 libnvinfer.so.10 libnvonnxparser.so.10"
    ) in lines
    assert lines[-1].split("not found: ")[1].split() == [
        "libcudnn.so.9", "libnvinfer.so.10", "libnvonnxparser.so.10"
    ]  # fmt: skip


def test_provider_check_leaves_the_host_driver_to_the_toolkit(tmp_path: Path) -> None:
    done = run_check(tmp_path, {"cuda": "\tlibcuda.so.1 => not found\n"})
    assert done.returncode == 0, done.stdout


def test_provider_check_fails_without_the_provider_libraries(tmp_path: Path) -> None:
    done = run_check(tmp_path, {}, absent=("tensorrt",))
    assert done.returncode == 1
    assert "libonnxruntime_providers_tensorrt.so: no such file" in done.stdout


def _lock_script(monkeypatch: pytest.MonkeyPatch) -> Any:
    """scripts/lock.py, loaded from its file (it runs without the harness installed)."""
    spec = importlib.util.spec_from_file_location("lock_script", REPO / "scripts" / "lock.py")
    assert spec is not None and spec.loader is not None
    lock = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, lock)  # dataclasses look their module up
    spec.loader.exec_module(lock)
    return lock


def test_lock_script_builds_each_targets_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    """scripts/lock.py runs without the harness installed, so its table is checked here."""
    lock = _lock_script(monkeypatch)
    assert set(lock.TARGETS) == set(TARGETS)
    for hw, target in lock.TARGETS.items():
        assert canonicalize_name(Requirement(target.ort).name) == TARGETS[hw]
    assert set(lock.ORT_NAMES) == set(TARGETS.values())
    # the generative models run in the cpu and nvidia images, each on its own onnxruntime
    assert "llm" in lock.TARGETS["cpu"].extras and "llm-cuda" in lock.TARGETS["nvidia"].extras


@pytest.mark.parametrize("hw", ["cpu", "nvidia"])
def test_the_llm_images_lock_onnx_ir_and_what_it_imports(hw: str) -> None:
    """onnxruntime's MatMulNBits quantizer (the uint4 INT4 recipe) imports onnx_ir (#28)."""
    import importlib.metadata

    locked = {name for name, _, _ in lock_entries(lockfile(hw))}
    assert "onnx-ir" in locked
    needs = [Requirement(r) for r in importlib.metadata.requires("onnx-ir") or []]
    unconditional = [r for r in needs if r.marker is None]
    missing = [r.name for r in unconditional if canonicalize_name(r.name) not in locked]
    assert not missing, f"{hw}: onnx-ir needs {missing}, not in its lock"
