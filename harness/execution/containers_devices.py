"""Docker devices per target: GPU and ROCm device requests, the daemon's GPU probe, its errors."""

from __future__ import annotations

import grp
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict

from harness.errors import DeviceError
from harness.execution.images import ImageRef, explain, image_gone, import_docker
from harness.hardware import get_target
from harness.strictjson import Json, JsonObject

GPU_ENV = "CUDA_VISIBLE_DEVICES"  # the host's choice of GPUs, honoured as `--gpus device=...`
ROCM_DEVICES = ("/dev/kfd", "/dev/dri")
ROCM_GROUPS = ("video", "render")
NVIDIA_GPU_FIX = (
    "install the NVIDIA Container Toolkit and restart Docker (`sudo nvidia-ctk runtime configure "
    "--runtime=docker && sudo systemctl restart docker`: dockerd looks for "
    "nvidia-container-runtime-hook only when it starts), or give Docker 25+ a CDI spec "
    "(`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`), or use --runner local"
)
NVIDIA_START_FIX = (
    "check the host driver (`nvidia-smi`) and the NVIDIA Container Toolkit "
    "(`nvidia-ctk --version`), or use --runner local"
)
NO_DEVICE_DRIVER = "could not select device driver"  # moby's incompatibleDeviceRequest


class GpuRequest(TypedDict):
    """docker.types.DeviceRequest: a dict with the Engine API's keys, read back for CLI flags."""

    Driver: str
    Count: int
    DeviceIDs: list[str]
    Capabilities: list[list[str]]
    Options: dict[str, str]


class DeviceKwargs(TypedDict, total=False):
    """What `containers.run` gets to reach a target's accelerator; none for the CPU."""

    device_requests: list[GpuRequest]  # nvidia: `--gpus` or CDI devices
    devices: list[str]  # amd: /dev/kfd and /dev/dri, `host:container:rwm`
    group_add: list[str]  # amd: the GIDs that may open them


def device_kwargs(
    hw: str, *, cdi: bool = False, environ: Mapping[str, str] | None = None
) -> DeviceKwargs:
    """How each target reaches its accelerator from inside the container (its docker_devices).

    nvidia-gpus: the GPUs CUDA_VISIBLE_DEVICES names (`--gpus device=0,1`), all when it is
    unset (`--gpus all`); with `cdi` the CDI devices `nvidia.com/gpu=0` (or `=all`).
    amd-kfd: /dev/kfd and /dev/dri, with the groups that may open them.
    """
    kind = get_target(hw).docker_devices
    if kind == "nvidia-gpus":
        return {"device_requests": [_gpu_request(cdi, visible_gpus(environ))]}
    if kind == "amd-kfd":
        missing = [path for path in ROCM_DEVICES if not os.path.exists(path)]
        if missing:
            raise DeviceError(
                f"HW={hw}: {', '.join(missing)} not found; install the amdgpu driver "
                "(ROCm) on this host, or use another HW"
            )
        return {
            "devices": [f"{path}:{path}:rwm" for path in ROCM_DEVICES],
            "group_add": rocm_groups(),
        }
    return {}


def visible_gpus(environ: Mapping[str, str] | None = None) -> list[str] | None:
    """The GPUs (indices or UUIDs) CUDA_VISIBLE_DEVICES names on the host; None: all."""
    value = (os.environ if environ is None else environ).get(GPU_ENV)
    if value is None:
        return None
    gpus = [gpu.strip() for gpu in value.split(",") if gpu.strip()]
    if not gpus:
        raise DeviceError(f"HW=nvidia: {GPU_ENV} is set but names no GPU; unset it for all")
    return gpus


def _gpu_request(cdi: bool, gpus: list[str] | None) -> GpuRequest:
    make: Callable[..., GpuRequest] = import_docker().types.DeviceRequest  # the SDK is untyped
    if cdi:  # `docker run --device nvidia.com/gpu=all`
        names = [f"nvidia.com/gpu={gpu}" for gpu in gpus or ["all"]]
        return make(driver="cdi", device_ids=names)
    if gpus is None:  # `docker run --gpus all`
        return make(count=-1, capabilities=[["gpu"]])
    return make(device_ids=gpus, capabilities=[["gpu"]])  # device=0,1


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


def nvidia_devices(client: Any, image: ImageRef) -> DeviceKwargs:
    """The device request with which this daemon gives containers the GPUs, asked of the daemon.

    `--gpus all` needs the NVIDIA Container Toolkit's nvidia-container-runtime-hook on dockerd's
    PATH, not a registered `nvidia` runtime: a registered runtime (the toolkit is installed) is a
    fast yes, anything else is settled by starting a trivial container of `image` with the
    bench's own request. CDI (`nvidia.com/gpu=all`), where the daemon has CDI spec dirs, is the
    second try. Raises a DeviceError with the fix when the daemon gives no GPU either way.
    """
    info: JsonObject = client.info()
    gpus = device_kwargs("nvidia")
    if "nvidia" in _names(info.get("Runtimes")):
        return gpus
    refusal = _refusal(client, image, gpus)
    if refusal is None:
        return gpus
    if _names(info.get("CDISpecDirs")):
        cdi = device_kwargs("nvidia", cdi=True)
        if _refusal(client, image, cdi) is None:
            return cdi
    raise _gpu_error(refusal, info)


def _refusal(client: Any, image: ImageRef, devices: DeviceKwargs) -> str | None:
    """None when the daemon starts a container with these devices, else the daemon's error."""
    docker = import_docker()
    try:
        probe = client.containers.create(image.id, command=["true"], **devices)
    except docker.errors.ImageNotFound:
        raise image_gone(image) from None
    except docker.errors.APIError as exc:
        return explain(exc)
    try:
        probe.start()  # the daemon picks a device driver, and the toolkit's hook runs, only here
    except docker.errors.APIError as exc:
        return explain(exc)
    finally:
        probe.remove(force=True)
    return None


def docker_cli_flags(devices: DeviceKwargs) -> list[str]:
    """The `docker run` flags that ask for the same devices, for scripts that use the CLI."""
    flags = []
    for request in devices.get("device_requests", []):
        if request["Driver"] == "cdi":
            flags += [f"--device={name}" for name in request["DeviceIDs"]]
        elif request["DeviceIDs"]:
            flags.append(f"--gpus=device={','.join(request['DeviceIDs'])}")
        else:
            flags.append("--gpus=all")
    return flags


def _gpu_error(text: str, info: JsonObject | None = None) -> DeviceError:
    if NO_DEVICE_DRIVER not in text:
        return DeviceError(
            f"HW=nvidia: Docker could not start a container with the GPUs ({text}); "
            + NVIDIA_START_FIX
        )
    seen = ""
    if info is not None:
        runtimes = ", ".join(sorted(_names(info.get("Runtimes")))) or "none"
        cdi = ", ".join(_names(info.get("CDISpecDirs"))) or "none"
        seen = f"; runtimes: {runtimes}; CDI spec dirs: {cdi}"
    return DeviceError(
        "HW=nvidia: Docker cannot give containers the GPUs: the daemon has no GPU device driver "
        f"({text}{seen}); " + NVIDIA_GPU_FIX
    )


def run_error(exc: BaseException, hw: str) -> DeviceError:
    """The DeviceError for a container the daemon would not start: the GPU fix where it fits."""
    text = explain(exc)
    gpus = get_target(hw).docker_devices == "nvidia-gpus"
    if gpus and ("nvidia-container-cli" in text or NO_DEVICE_DRIVER in text):
        return _gpu_error(text)
    return DeviceError(f"docker could not start the {hw} container: {text}")


def _names(value: Json) -> list[str]:
    """What the daemon's info lists, in its order: a mapping's keys (Runtimes) or a list's items."""
    if isinstance(value, dict | list):
        return [str(name) for name in value]
    return []
