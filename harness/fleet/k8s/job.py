"""The fleet's Indexed Job built from the client's typed models, and its YAML manifest."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml

from harness.errors import ConfigError
from harness.files import atomic_write_text
from harness.fleet.k8s.extra import require
from harness.fleet.k8s.spec import HARDWARE, K8sJobSpec, ResultsVolume
from harness.fleet.placement import NODE_ENV, POD_ENV
from harness.records.layout import K8S_MANIFEST
from harness.strictjson import JsonObject

if TYPE_CHECKING:
    from kubernetes.client import V1Job

NAMESPACE_ENV: Final = "BEYOND_TOPS_NAMESPACE"  # read by harness.fleet.placement
CONTAINER_NAME: Final = "harness"
VOLUME_NAME: Final = "results"
BENCH_GID: Final = 10001  # the `bench` user's group in the harness images (docker/*/Dockerfile)
FLEET_LABEL: Final = "beyond-tops/fleet"
FLEET_DIR_ANNOTATION: Final = "beyond-tops/fleet-dir"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"  # put on a Job's pods by Kubernetes


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
    require("kubernetes")
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


def manifest_dict(job: V1Job) -> JsonObject:
    """The Job as the API server receives it: camelCase keys, no unset fields."""
    require("kubernetes")
    from kubernetes.client import ApiClient

    with ApiClient() as client:
        data = client.sanitize_for_serialization(job)
    if not isinstance(data, dict):
        raise TypeError(f"a Job serialized to {type(data).__name__}, not a mapping")
    return data


def manifest_yaml(job: V1Job, *, filename: str = K8S_MANIFEST) -> str:
    """The Job as YAML, after comments saying how to create it by hand from `filename`."""
    namespace = job.metadata.namespace if job.metadata else None
    where = f" -n {namespace}" if namespace else ""
    header = (
        f"# A beyond-tops fleet Job. Create it by hand with: kubectl apply -f {filename}\n"
        f"# Its state: kubectl get job {job_name(job)}{where}\n"
    )
    return header + yaml.safe_dump(manifest_dict(job), sort_keys=False)


def write_manifest(job: V1Job, path: Path) -> None:
    """Write the Job's YAML to `path`, atomically."""
    atomic_write_text(path, manifest_yaml(job, filename=path.name))


def job_name(job: V1Job) -> str:
    """The Job's metadata.name; a Job without one is a ConfigError."""
    name = job.metadata.name if job.metadata else None
    if not name:
        raise ConfigError("the Job has no metadata.name; build it with build_job")
    return name
