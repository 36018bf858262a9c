"""What a fleet's Job asks of a cluster: hardware, the results volume, the spec and its grammar."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import Final

from harness.errors import ConfigError
from harness.fleet.grammar import check_image

# Long enough to read a finished Job's state and its pods' logs; the results are on the volume.
TTL_AFTER_FINISHED_S: Final = 7 * 24 * 3600
MAX_BACKOFF_LIMIT: Final = 10
MAX_COMPLETIONS: Final = 100_000  # Kubernetes' limit for an Indexed Job with per-index limits

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_RULE = "lower-case letters, digits and '-', starting and ending with a letter or digit"
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?")


@dataclass(frozen=True, kw_only=True)
class K8sHardware:
    """What a hardware target asks of a node: its GPU resource and the label that finds it."""

    gpu_resource: str | None  # the device plugin's extended resource; None: no accelerator
    node_selector: Mapping[str, str]


HARDWARE: Final[Mapping[str, K8sHardware]] = MappingProxyType(
    {
        "cpu": K8sHardware(gpu_resource=None, node_selector={"kubernetes.io/os": "linux"}),
        # NVIDIA's GPU Operator labels each node with an NVIDIA GPU (NFD's PCI vendor 10de)
        # nvidia.com/gpu.present=true: commonGPULabelKey in NVIDIA/gpu-operator,
        # controllers/state_manager.go. GPU Feature Discovery adds gpu.product, gpu.count, ...
        "nvidia": K8sHardware(
            gpu_resource="nvidia.com/gpu", node_selector={"nvidia.com/gpu.present": "true"}
        ),
        # AMD's GPU Operator installs the NFD NodeFeatureRule amd-gpu-label-nfd-rule
        # (ROCm/gpu-operator, helm-charts-k8s/templates/gpu-nfd-default-rule.yaml): nodes with
        # an AMD GPU get feature.node.kubernetes.io/amd-gpu=true. The device plugin's node
        # labeller (ROCm/k8s-device-plugin) writes only valued labels (amd.com/gpu.family=AI,
        # ...), none that every AMD node shares: without the operator, give a node selector.
        "rocm": K8sHardware(
            gpu_resource="amd.com/gpu",
            node_selector={"feature.node.kubernetes.io/amd-gpu": "true"},
        ),
    }
)


@dataclass(frozen=True, kw_only=True)
class ResultsVolume:
    """Where results go: a PersistentVolumeClaim (shared, ReadWriteMany) or a host path.

    Every pod writes into the fleet directory on it, so it must be the same storage on every
    node: a ReadWriteMany claim, or a shared filesystem mounted at `host_path` on each node.
    """

    claim: str | None = None  # the PersistentVolumeClaim's name, in the Job's namespace
    host_path: str | None = None  # a path on each node (a shared filesystem mounted there)
    mount_path: str = "/results"  # where the pod sees it

    def __post_init__(self) -> None:
        if (self.claim is None) == (self.host_path is None):
            given = "both" if self.claim else "neither"
            raise ConfigError(
                "results volume: give exactly one of a PersistentVolumeClaim (--claim NAME) or "
                f"a host path (--host-path DIR), got {given}"
            )
        if self.claim is not None and not is_dns_subdomain(self.claim):
            raise ConfigError(f"--claim: {self.claim!r} is not a claim name; use {_DNS_RULE}")
        _check_absolute("--host-path", self.host_path or "/")
        _check_absolute("--mount-path", self.mount_path)
        if PurePosixPath(self.mount_path) == PurePosixPath("/"):
            raise ConfigError("--mount-path: '/' would hide the image; mount at e.g. /results")


@dataclass(frozen=True, kw_only=True)
class K8sJobSpec:
    """One fleet's Indexed Job: one completion index per shard, one pod per index.

    `cpu` and `memory` are both requests and limits: a pod whose containers have requests ==
    limits for both is in the Guaranteed QoS class, the last evicted and, with whole CPUs under
    the kubelet's static CPU manager policy, given cores of its own, so a neighbour's load
    does not show in its latencies. With neither, the pod is BestEffort.
    """

    name: str  # the Job's name: a DNS-1123 label of at most 63 characters
    namespace: str
    image: str  # the harness's image for `hw`; it has `harness` on PATH
    hw: str  # "cpu" | "nvidia" | "rocm"
    completions: int  # one index per shard
    parallelism: int  # pods at once (1..completions)
    fleet_dir: str  # the fleet directory as the pod sees it: f"{mount_path}/{fleet name}"
    volume: ResultsVolume
    gpus: int = 1  # per pod, for nvidia and rocm (nvidia.com/gpu, amd.com/gpu); cpu ignores it
    cpu: str | None = None  # requests = limits, e.g. "8"; None: no CPU request or limit
    memory: str | None = None  # requests = limits, e.g. "32Gi"
    # Attempts per index beyond the first. 0: a failed benchmark is not rerun, as a rerun on
    # another node would hide a flaky one. Each index has its own limit (backoffLimitPerIndex),
    # so a failed shard never stops the others.
    backoff_limit: int = 0
    active_deadline_s: int | None = None
    ttl_after_finished_s: int | None = TTL_AFTER_FINISHED_S
    node_selector: Mapping[str, str] | None = None  # None: the hardware's default; {}: none
    # topologySpreadConstraints on kubernetes.io/hostname (ScheduleAnyway): shards go to
    # different nodes where they can, which is the point of a fleet.
    spread: bool = True
    labels: Mapping[str, str] = field(default_factory=dict)  # more labels on the Job and pods
    # GIDs that may open /dev/kfd and /dev/dri/render* on the nodes (their render and video
    # groups), as the images run as a non-root user (ROCm/k8s-device-plugin issue #39).
    supplemental_groups: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _check_dns_label("--name", self.name)
        _check_dns_label("--namespace", self.namespace)
        check_image("--image", self.image)  # Docker's reference grammar, as Slurm's --image
        if self.hw not in HARDWARE:
            raise ConfigError(f"--hw: {self.hw!r} is not one of {', '.join(HARDWARE)}")
        _check_counts(self)
        for option, amount in (("--cpu", self.cpu), ("--memory", self.memory)):
            if amount is not None and not _QUANTITY.fullmatch(amount):
                raise ConfigError(f"{option}: {amount!r} is not a quantity like 8, 500m or 32Gi")
        fleet = PurePosixPath(self.fleet_dir)
        if ".." in fleet.parts or not fleet.is_relative_to(self.volume.mount_path):
            raise ConfigError(
                f"fleet directory {self.fleet_dir!r} is not on the results volume "
                f"({self.volume.mount_path}): the pods' results would go with them"
            )
        _check_labels("--node-selector", self.node_selector or {})
        _check_labels("--label", self.labels)
        if any(gid < 0 for gid in self.supplemental_groups):
            raise ConfigError(
                f"--supplemental-group: GIDs are >= 0, got {self.supplemental_groups}"
            )


def is_dns_subdomain(value: str) -> bool:
    """Whether `value` is a DNS-1123 subdomain: dot-separated labels, 253 characters at most."""
    return len(value) <= 253 and all(_DNS_LABEL.fullmatch(part) for part in value.split("."))


def dns_label_like(value: str) -> str:
    """The DNS-1123 label nearest `value`: lower case, '-' for the rest, 63 characters."""
    return re.sub(r"[^a-z0-9-]+", "-", value.lower()).strip("-")[:63].rstrip("-") or "fleet"


def _check_dns_label(option: str, value: str) -> None:
    if len(value) > 63 or not _DNS_LABEL.fullmatch(value):
        raise ConfigError(
            f"{option}: {value!r} is not a DNS-1123 label (at most 63 {_DNS_RULE}); "
            f"use e.g. {dns_label_like(value)!r}"
        )


def _check_absolute(option: str, path: str) -> None:
    if not PurePosixPath(path).is_absolute():
        raise ConfigError(f"{option}: {path!r} must be an absolute path, like /results")


def _check_counts(spec: K8sJobSpec) -> None:
    limits = (
        ("completions (one per shard)", spec.completions, 1, MAX_COMPLETIONS),
        ("--parallelism", spec.parallelism, 1, spec.completions),
        ("--backoff-limit", spec.backoff_limit, 0, MAX_BACKOFF_LIMIT),
        ("--active-deadline", spec.active_deadline_s, 1, None),
        ("--ttl-after-finished", spec.ttl_after_finished_s, 1, None),
        ("--gpus", spec.gpus if HARDWARE[spec.hw].gpu_resource else None, 1, None),
    )
    for what, value, low, high in limits:
        if value is not None and not (low <= value and (high is None or value <= high)):
            allowed = f"{low}..{high}" if high is not None else f">= {low}"
            raise ConfigError(f"{what}: must be {allowed}, got {value}")


def _check_labels(option: str, labels: Mapping[str, str]) -> None:
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if len(name) > 63 or not _LABEL_NAME.fullmatch(name) or not is_dns_subdomain(prefix or "a"):
            raise ConfigError(f"{option}: {key!r} is not a label key like example.com/name")
        if len(value) > 63 or (value and not _LABEL_NAME.fullmatch(value)):
            raise ConfigError(
                f"{option}: {key}={value!r}: a label value is at most 63 letters, digits, "
                "'-', '_' or '.', starting and ending with a letter or digit"
            )
