"""Kubernetes: the fleet's Indexed Job, its offline schema check, its creation and its state.

Each pod of the Job runs one fleet task, `harness fleet task FLEET_DIR`, and reads its index
from JOB_COMPLETION_INDEX, which Kubernetes sets in an Indexed Job's pods. The Job is built
from the `kubernetes` client's typed models and checked, with no network, against the API's
JSON schema by `kubernetes-validate` in strict mode (an unknown field fails). Both come with
the `fleet` extra and are imported only when used: importing this module imports neither.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any, Final

import yaml

from harness.errors import ConfigError, DependencyError, SchedulerError
from harness.files import atomic_write_text
from harness.fleet.grammar import check_image
from harness.fleet.placement import NODE_ENV, POD_ENV

if TYPE_CHECKING:
    from kubernetes.client import ApiException, BatchV1Api, Configuration, V1Job

# The schema checked against: the API level of the pinned client (kubernetes==37.0.2 is
# generated from OpenAPI release-1.37), so the schema knows every field the models can set.
KUBERNETES_VERSION: Final = "1.37.0"
# The oldest cluster the Job is meant for: every field build_job sets is GA there (the newest,
# backoffLimitPerIndex, since 1.33); the tests validate against its schema too.
OLDEST_KUBERNETES_VERSION: Final = "1.33.0"
NAMESPACE_ENV: Final = "BEYOND_TOPS_NAMESPACE"  # read by harness.fleet.placement
CONTAINER_NAME: Final = "harness"
VOLUME_NAME: Final = "results"
BENCH_GID: Final = 10001  # the `bench` user's group in the harness images (docker/*/Dockerfile)
# Long enough to read a finished Job's state and its pods' logs; the results are on the volume.
TTL_AFTER_FINISHED_S: Final = 7 * 24 * 3600
MAX_BACKOFF_LIMIT: Final = 10
MAX_COMPLETIONS: Final = 100_000  # Kubernetes' limit for an Indexed Job with per-index limits
FLEET_LABEL: Final = "beyond-tops/fleet"
FLEET_DIR_ANNOTATION: Final = "beyond-tops/fleet-dir"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"  # put on a Job's pods by Kubernetes
MAX_MESSAGE_CHARS: Final = 300

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_RULE = "lower-case letters, digits and '-', starting and ending with a letter or digit"
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?")
_INDEX_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")


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


# ---- the Job ----


def job_labels(spec: K8sJobSpec) -> dict[str, str]:
    """The Job's and its pods' labels: the caller's, then ours (which win)."""
    return {**spec.labels, "app.kubernetes.io/name": "beyond-tops", FLEET_LABEL: spec.name}


def node_selector(spec: K8sJobSpec) -> dict[str, str]:
    """The node labels the pods need: as given, else the hardware's."""
    chosen = HARDWARE[spec.hw].node_selector if spec.node_selector is None else spec.node_selector
    return dict(chosen)


def resource_amounts(spec: K8sJobSpec) -> dict[str, str]:
    """Each pod's requests, equal to its limits: CPU, memory and the hardware's GPUs."""
    gpu = HARDWARE[spec.hw].gpu_resource
    amounts = {"cpu": spec.cpu, "memory": spec.memory}
    if gpu is not None:
        amounts[gpu] = str(spec.gpus)
    return {name: amount for name, amount in amounts.items() if amount is not None}


def build_job(spec: K8sJobSpec) -> V1Job:
    """The fleet's Indexed Job: one pod per index, each running that index's task."""
    _require("kubernetes")
    from kubernetes import client as k8s

    labels = job_labels(spec)
    disrupted = k8s.V1PodFailurePolicyOnPodConditionsPattern(type="DisruptionTarget", status="True")
    job_spec = k8s.V1JobSpec(
        completion_mode="Indexed",
        completions=spec.completions,
        parallelism=spec.parallelism,
        backoff_limit_per_index=spec.backoff_limit,
        # Reached only once every index has used its own limit: shards fail one by one.
        backoff_limit=spec.completions * (spec.backoff_limit + 1),
        # A pod evicted or preempted is replaced without using up its index's retries.
        pod_failure_policy=k8s.V1PodFailurePolicy(
            rules=[k8s.V1PodFailurePolicyRule(action="Ignore", on_pod_conditions=[disrupted])]
        ),
        active_deadline_seconds=spec.active_deadline_s,
        ttl_seconds_after_finished=spec.ttl_after_finished_s,
        template=k8s.V1PodTemplateSpec(
            metadata=k8s.V1ObjectMeta(labels=labels), spec=_pod_spec(spec)
        ),
    )
    metadata = k8s.V1ObjectMeta(
        name=spec.name,
        namespace=spec.namespace,
        labels=labels,
        annotations={FLEET_DIR_ANNOTATION: spec.fleet_dir},
    )
    return k8s.V1Job(api_version="batch/v1", kind="Job", metadata=metadata, spec=job_spec)


def _pod_spec(spec: K8sJobSpec) -> Any:
    from kubernetes import client as k8s

    gpu = HARDWARE[spec.hw].gpu_resource
    # GPU nodes are commonly tainted with their resource's name so only GPU pods land there.
    tolerations = [k8s.V1Toleration(key=gpu, operator="Exists", effect="NoSchedule")]
    spread = k8s.V1TopologySpreadConstraint(
        max_skew=1,
        topology_key="kubernetes.io/hostname",
        when_unsatisfiable="ScheduleAnyway",
        label_selector=k8s.V1LabelSelector(match_labels={JOB_NAME_LABEL: spec.name}),
    )
    security = k8s.V1PodSecurityContext(
        fs_group=BENCH_GID,  # a claim's volume is made writable by the images' user
        fs_group_change_policy="OnRootMismatch",
        supplemental_groups=list(spec.supplemental_groups) or None,
    )
    return k8s.V1PodSpec(
        restart_policy="Never",
        containers=[_container(spec)],
        volumes=[_volume(spec.volume)],
        node_selector=node_selector(spec) or None,
        tolerations=tolerations if gpu else None,
        topology_spread_constraints=[spread] if spec.spread else None,
        security_context=security,
        automount_service_account_token=False,  # a task never calls the API
    )


def _volume(volume: ResultsVolume) -> Any:
    from kubernetes import client as k8s

    if volume.claim is not None:
        claim = k8s.V1PersistentVolumeClaimVolumeSource(claim_name=volume.claim)
        return k8s.V1Volume(name=VOLUME_NAME, persistent_volume_claim=claim)
    host = k8s.V1HostPathVolumeSource(path=volume.host_path or "", type="Directory")
    return k8s.V1Volume(name=VOLUME_NAME, host_path=host)


def _container(spec: K8sJobSpec) -> Any:
    from kubernetes import client as k8s

    downward = {NODE_ENV: "spec.nodeName", POD_ENV: "metadata.name"}
    downward[NAMESPACE_ENV] = "metadata.namespace"
    env = [
        k8s.V1EnvVar(
            name=name,
            value_from=k8s.V1EnvVarSource(field_ref=k8s.V1ObjectFieldSelector(field_path=path)),
        )
        for name, path in downward.items()
    ]
    amounts = resource_amounts(spec)
    resources = k8s.V1ResourceRequirements(requests=amounts, limits=amounts)
    return k8s.V1Container(
        name=CONTAINER_NAME,
        image=spec.image,
        command=["harness", "fleet", "task", spec.fleet_dir],
        env=env,
        resources=resources if amounts else None,
        volume_mounts=[k8s.V1VolumeMount(name=VOLUME_NAME, mount_path=spec.volume.mount_path)],
    )


# ---- the manifest ----


def manifest_dict(job: V1Job) -> dict[str, Any]:
    """The Job as the API server receives it: camelCase keys, no unset fields."""
    _require("kubernetes")
    from kubernetes.client import ApiClient

    with ApiClient() as client:
        data = client.sanitize_for_serialization(job)
    if not isinstance(data, dict):
        raise TypeError(f"a Job serialized to {type(data).__name__}, not a mapping")
    return data


def manifest_yaml(job: V1Job, *, filename: str = "job.yaml") -> str:
    """The Job as YAML, after comments saying how to create it by hand from `filename`."""
    namespace = job.metadata.namespace if job.metadata else None
    where = f" -n {namespace}" if namespace else ""
    header = (
        f"# A beyond-tops fleet Job. Create it by hand with: kubectl apply -f {filename}\n"
        f"# Its state: kubectl get job {_name(job)}{where}\n"
    )
    return header + yaml.safe_dump(manifest_dict(job), sort_keys=False)


def write_manifest(job: V1Job, path: Path) -> None:
    """Write the Job's YAML to `path`, atomically."""
    atomic_write_text(path, manifest_yaml(job, filename=path.name))


def validate_manifest(
    text: str, *, where: str, kubernetes_version: str = KUBERNETES_VERSION
) -> None:
    """Check a manifest against the API schema of `kubernetes_version`, offline and strictly.

    Raises:
        ConfigError: one line naming `where`, the field's path and what is wrong with it.
    """
    kv = _require("kubernetes_validate", "kubernetes-validate")  # untyped: no py.typed
    _check_version(kubernetes_version, kv.utils.all_versions())
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not YAML ({_one_line(str(exc))})") from None
    if not isinstance(data, dict) or not all(
        isinstance(data.get(key), str) for key in ("apiVersion", "kind")
    ):
        raise ConfigError(f"{where}: not a Kubernetes object (it needs apiVersion and kind)")
    try:
        kv.validate(data, kubernetes_version, strict=True)
    except kv.ValidationError as exc:
        raise ConfigError(f"{where}: {_describe(exc)} (Kubernetes {exc.version} schema)") from None
    except kv.SchemaNotFoundError as exc:
        raise ConfigError(f"{where}: {exc.message}; is its apiVersion right?") from None


def _check_version(version: str, known: list[str]) -> None:
    def minor(text: str) -> tuple[int, ...]:
        match = re.fullmatch(r"v?([0-9]+)\.([0-9]+)(\.[0-9]+)?", text)
        return (int(match[1]), int(match[2])) if match else ()

    if not minor(known[0]) <= minor(version) <= minor(known[-1]) or not minor(version):
        raise ConfigError(
            f"Kubernetes version {version!r}: kubernetes-validate has the schemas of "
            f"{known[0]} to {known[-1]}; pick one of those"
        )


def _describe(exc: Any) -> str:
    """`path: problem` for a schema error; an unknown field is named in the path itself."""
    if exc.validator == "additionalProperties" and isinstance(exc.instance, dict):
        known = exc.schema.get("properties", {})
        unknown = sorted(str(key) for key in exc.instance if key not in known)
        if unknown:
            return f"{field_path([*exc.absolute_path, unknown[0]])}: unknown field"
    return f"{field_path(exc.absolute_path) or '(the document)'}: {_one_line(exc.message)}"


def field_path(parts: Any) -> str:
    """A JSON path as people write it: spec.containers[0].resources.limits["nvidia.com/gpu"]."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(part)):
            text += f".{part}" if text else str(part)
        else:
            text += f"[{json.dumps(str(part))}]"
    return text


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_MESSAGE_CHARS else flat[: MAX_MESSAGE_CHARS - 3] + "..."


# ---- the cluster ----


def load_configuration(
    kubeconfig: str | None = None, *, environ: Mapping[str, str] | None = None
) -> Configuration:
    """The client's configuration, found as kubectl finds it.

    `kubeconfig`, else $KUBECONFIG, else ~/.kube/config; inside a pod with none of those, the
    pod's service account (in-cluster configuration). No global state is changed.

    Raises:
        SchedulerError: there is no configuration, or it cannot be read.
    """
    _require("kubernetes")
    from kubernetes.client import Configuration
    from kubernetes.config import ConfigException, load_incluster_config, load_kube_config

    env = os.environ if environ is None else environ
    given = kubeconfig or env.get("KUBECONFIG")
    path = given or str(Path(env.get("HOME", "~")) / ".kube" / "config")
    configuration = Configuration()
    try:
        if not given and "KUBERNETES_SERVICE_HOST" in env and not Path(path).expanduser().exists():
            path = "the pod's service account"
            load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            load_kube_config(config_file=path, client_configuration=configuration)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError, yaml.YAMLError) as exc:
        raise SchedulerError(
            f"no usable Kubernetes configuration in {path} ({_one_line(str(exc))}); set "
            "KUBECONFIG to your cluster's kubeconfig (`kubectl config view` shows kubectl's)"
        ) from None
    return configuration


@contextmanager
def batch_api(kubeconfig: str | None = None) -> Iterator[BatchV1Api]:
    """A BatchV1Api on the configured cluster, its connections closed on exit."""
    configuration = load_configuration(kubeconfig)
    from kubernetes.client import ApiClient, BatchV1Api

    with ApiClient(configuration) as client:
        yield BatchV1Api(client)


def apply_job(
    job: V1Job, *, namespace: str, api: Any | None = None, kubeconfig: str | None = None
) -> str:
    """Create the Job in `namespace` (through `api`, else the configured cluster); its name.

    Raises:
        SchedulerError: one line with the API's status, its reason and how to fix it.
    """
    name = _name(job)
    given = job.metadata.namespace if job.metadata else None
    if given not in (None, namespace):
        raise ConfigError(f"Job {name} is for namespace {given!r}, not {namespace!r}; rebuild it")
    if api is None:
        with batch_api(kubeconfig) as batch:
            return apply_job(job, namespace=namespace, api=batch)
    with _api_errors(f"create Job {name}", name=name, namespace=namespace):
        created = api.create_namespaced_job(namespace=namespace, body=job)
    return str(getattr(created.metadata, "name", None) or name)


def job_status(
    name: str, *, namespace: str, api: Any | None = None, kubeconfig: str | None = None
) -> dict[int, str]:
    """Each completion index's state: "Succeeded", "Failed" or "Unknown" (not ended yet).

    Once the Job itself has failed (its deadline passed, say), no index that has not
    succeeded will run again, so those are "Failed" too.
    """
    if api is None:
        with batch_api(kubeconfig) as batch:
            return job_status(name, namespace=namespace, api=batch)
    with _api_errors(f"read Job {name}", name=name, namespace=namespace):
        job = api.read_namespaced_job_status(name=name, namespace=namespace)
    status = job.status
    completions = (job.spec.completions if job.spec else None) or 0
    try:
        succeeded = parse_index_ranges(status.completed_indexes if status else None)
        failed = parse_index_ranges(status.failed_indexes if status else None)
    except ValueError as exc:
        raise SchedulerError(f"Job {name} in namespace {namespace}: {exc}") from None
    if any(c.type == "Failed" and c.status == "True" for c in (status and status.conditions) or ()):
        failed = frozenset(range(completions)) - succeeded
    return {index: _index_state(index, succeeded, failed) for index in range(completions)}


def _index_state(index: int, succeeded: frozenset[int], failed: frozenset[int]) -> str:
    if index in succeeded:
        return "Succeeded"
    return "Failed" if index in failed else "Unknown"


def parse_index_ranges(text: str | None) -> frozenset[int]:
    """The indexes in a Job's completedIndexes or failedIndexes: "0-2,5" is {0, 1, 2, 5}.

    Raises:
        ValueError: `text` is not comma-separated indexes and ascending ranges.
    """
    indexes: set[int] = set()
    for part in text.split(",") if text else ():
        match = _INDEX_RANGE.fullmatch(part.strip())
        first, last = (int(match[1]), int(match[2] or match[1])) if match else (1, 0)
        if last < first:
            raise ValueError(f"{text!r} is not a list of indexes like 0-2,5")
        indexes.update(range(first, last + 1))
    return frozenset(indexes)


@contextmanager
def _api_errors(action: str, *, name: str, namespace: str) -> Iterator[None]:
    """Turn the client's exceptions into one-line SchedulerErrors that say what to do."""
    from kubernetes.client import ApiException
    from urllib3.exceptions import HTTPError

    try:
        yield
    except ApiException as exc:
        message = explain_api_error(exc, action=action, name=name, namespace=namespace)
        raise SchedulerError(message) from None
    except HTTPError as exc:
        raise SchedulerError(
            f"cannot {action}: the Kubernetes API server did not answer "
            f"({_one_line(str(exc))}); check its address with `kubectl cluster-info`"
        ) from None


def explain_api_error(exc: ApiException, *, action: str, name: str, namespace: str) -> str:
    """One line for an API error: what failed, the HTTP status and reason, and the fix."""
    said = _server_message(exc.body)
    head = f"cannot {action} in namespace {namespace}: {exc.status} {_one_line(str(exc.reason))}"
    fixes = {
        0: "the API server could not be reached; check `kubectl cluster-info`",
        401: "your credentials were refused; log in again (`kubectl get pods` should work)",
        403: f"RBAC does not allow it; ask for `jobs` (batch) create and get rights in "
        f"{namespace} (`kubectl auth can-i create jobs -n {namespace}`)",
        404: f"namespace {namespace} does not exist; create it (`kubectl create namespace "
        f"{namespace}`) or pick another --namespace"
        if action.startswith("create")
        else f"no Job {name} there (`kubectl get jobs -n {namespace}`); a finished Job is "
        "deleted once its ttlSecondsAfterFinished has passed",
        409: f"the Job already exists; delete it with `kubectl delete job {name} -n {namespace}`"
        " or pick another --name",
        422: "the API server found the Job invalid; fix the field it names",
    }
    fix = fixes.get(exc.status or 0, "retry, or create it by hand with `kubectl apply -f`")
    return f"{head}{f' ({said})' if said else ''}; {fix}"


def _server_message(body: Any) -> str:
    """The `message` of the Status object the API server sends with an error, if any."""
    try:
        status = json.loads(body) if body else None
    except (TypeError, ValueError):
        return _one_line(str(body))
    message = status.get("message") if isinstance(status, dict) else None
    return _one_line(str(message)) if message else ""


def _name(job: V1Job) -> str:
    name = job.metadata.name if job.metadata else None
    if not name:
        raise ConfigError("the Job has no metadata.name; build it with build_job")
    return name


def _require(module: str, distribution: str | None = None) -> ModuleType:
    """Import an optional dependency of fleet runs on Kubernetes, or raise DependencyError."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise DependencyError(
            f"the `{distribution or module}` package is missing; install it with "
            "`.venv/bin/pip install -e '.[fleet]'`"
        ) from None
