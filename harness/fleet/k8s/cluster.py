"""The cluster: its configuration found as kubectl finds it, the Job created, its indexes' state."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from harness.errors import ConfigError, SchedulerError
from harness.fleet.k8s.extra import one_line, require
from harness.fleet.k8s.job import job_name

if TYPE_CHECKING:
    from kubernetes.client import ApiException, BatchV1Api, Configuration, V1Job

_INDEX_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")


def load_configuration(
    kubeconfig: str | None = None, *, environ: Mapping[str, str] | None = None
) -> Configuration:
    """The client's configuration, found as kubectl finds it.

    `kubeconfig`, else $KUBECONFIG, else ~/.kube/config; inside a pod with none of those, the
    pod's service account (in-cluster configuration). No global state is changed.

    Raises:
        SchedulerError: there is no configuration, or it cannot be read.
    """
    require("kubernetes")
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
            f"no usable Kubernetes configuration in {path} ({one_line(str(exc))}); set "
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
    name = job_name(job)
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
            f"({one_line(str(exc))}); check its address with `kubectl cluster-info`"
        ) from None


def explain_api_error(exc: ApiException, *, action: str, name: str, namespace: str) -> str:
    """One line for an API error: what failed, the HTTP status and reason, and the fix."""
    said = _server_message(exc.body)
    head = f"cannot {action} in namespace {namespace}: {exc.status} {one_line(str(exc.reason))}"
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
        return one_line(str(body))
    message = status.get("message") if isinstance(status, dict) else None
    return one_line(str(message)) if message else ""
