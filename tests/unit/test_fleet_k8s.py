"""harness.fleet.k8s: the Indexed Job, its strict offline validation, apply and status.

The manifests are checked against the real Kubernetes schemas kubernetes-validate ships; the
API is an autospec'd BatchV1Api, so a misspelled call or argument fails as it would for real.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest.mock import create_autospec

import pytest
import yaml
from kubernetes.client import (
    ApiException,
    BatchV1Api,
    V1Job,
    V1JobCondition,
    V1JobSpec,
    V1JobStatus,
    V1ObjectMeta,
    V1PodTemplateSpec,
)
from urllib3.exceptions import MaxRetryError

from harness.errors import ConfigError, DependencyError, SchedulerError
from harness.fleet.k8s.cluster import apply_job, job_status, load_configuration, parse_index_ranges
from harness.fleet.k8s.job import build_job, manifest_yaml, resource_amounts, write_manifest
from harness.fleet.k8s.spec import K8sJobSpec, ResultsVolume, dns_label_like
from harness.fleet.k8s.validate import (
    KUBERNETES_VERSION,
    OLDEST_KUBERNETES_VERSION,
    field_path,
    validate_manifest,
)

FLEET_DIR = "/results/fleet-20260101-quick"


def make_spec(hw: str = "cpu", **changes: Any) -> K8sJobSpec:
    values: dict[str, Any] = {
        "name": "fleet-quick",
        "namespace": "bench",
        "image": f"registry.example.com/beyond-tops/{hw}:0.9",
        "hw": hw,
        "completions": 3,
        "parallelism": 2,
        "fleet_dir": FLEET_DIR,
        "volume": ResultsVolume(claim="results-rwx"),
    }
    return K8sJobSpec(**{**values, **changes})


def rendered(spec: K8sJobSpec) -> dict[str, Any]:
    data = yaml.safe_load(manifest_yaml(build_job(spec)))
    assert isinstance(data, dict)
    return data


def pod_of(manifest: dict[str, Any]) -> dict[str, Any]:
    pod = manifest["spec"]["template"]["spec"]
    assert isinstance(pod, dict)
    return pod


def api_error(status: int, reason: str, message: str = "") -> ApiException:
    body = json.dumps({"kind": "Status", "status": "Failure", "message": message, "code": status})
    return ApiException(status=status, reason=reason, body=body)


@pytest.fixture
def api() -> Any:
    return create_autospec(BatchV1Api, instance=True)


# ---- import ----


def test_importing_the_modules_imports_neither_kubernetes_nor_the_validator() -> None:
    code = (
        "import importlib, pkgutil, sys, harness.fleet.k8s as package; "
        "names = [m.name for m in pkgutil.iter_modules(package.__path__, 'harness.fleet.k8s.')]; "
        "assert len(names) >= 5, names; "
        "[importlib.import_module(name) for name in names]; "
        "assert 'kubernetes' not in sys.modules, 'kubernetes'; "
        "assert 'kubernetes_validate' not in sys.modules, 'kubernetes_validate'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_missing_client_is_a_dependency_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    with pytest.raises(DependencyError, match=r"`kubernetes`.*\.\[fleet\]"):
        build_job(make_spec())


# ---- the manifest, per hardware ----


@pytest.mark.parametrize(
    ("hw", "gpus", "gpu_limit", "selector"),
    [
        ("cpu", 1, None, {"kubernetes.io/os": "linux"}),
        ("nvidia", 2, ("nvidia.com/gpu", "2"), {"nvidia.com/gpu.present": "true"}),
        ("rocm", 1, ("amd.com/gpu", "1"), {"feature.node.kubernetes.io/amd-gpu": "true"}),
    ],
)
def test_each_hardware_manifest_validates_strictly_and_says_what_it_should(
    hw: str, gpus: int, gpu_limit: tuple[str, str] | None, selector: dict[str, str]
) -> None:
    spec = make_spec(hw, gpus=gpus, cpu="8", memory="32Gi")
    text = manifest_yaml(build_job(spec))
    for version in (KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION):
        validate_manifest(text, where="job.yaml", kubernetes_version=version)

    manifest = yaml.safe_load(text)
    assert (manifest["apiVersion"], manifest["kind"]) == ("batch/v1", "Job")
    assert manifest["metadata"]["name"] == "fleet-quick"
    assert manifest["metadata"]["namespace"] == "bench"
    job = manifest["spec"]
    assert job["completionMode"] == "Indexed"
    assert (job["completions"], job["parallelism"]) == (3, 2)
    assert job["backoffLimitPerIndex"] == 0
    assert job["backoffLimit"] == 3  # one failure per index before the Job-wide limit
    pod = pod_of(manifest)
    assert pod["restartPolicy"] == "Never"
    assert pod["nodeSelector"] == selector
    (container,) = pod["containers"]
    assert container["image"] == spec.image
    assert container["command"] == ["harness", "fleet", "task", FLEET_DIR]
    limits = container["resources"]["limits"]
    assert container["resources"]["requests"] == limits  # Guaranteed QoS
    expected = {"cpu": "8", "memory": "32Gi"} | (dict([gpu_limit]) if gpu_limit else {})
    assert limits == expected
    assert pod["volumes"] == [
        {"name": "results", "persistentVolumeClaim": {"claimName": "results-rwx"}}
    ]
    assert container["volumeMounts"] == [{"name": "results", "mountPath": "/results"}]
    env = {item["name"]: item["valueFrom"]["fieldRef"]["fieldPath"] for item in container["env"]}
    assert env == {
        "BEYOND_TOPS_NODE_NAME": "spec.nodeName",
        "BEYOND_TOPS_POD_NAME": "metadata.name",
        "BEYOND_TOPS_NAMESPACE": "metadata.namespace",
    }
    tolerations = pod.get("tolerations")
    if gpu_limit is None:
        assert tolerations is None
    else:
        assert tolerations == [{"key": gpu_limit[0], "operator": "Exists", "effect": "NoSchedule"}]


def test_the_yaml_starts_with_how_to_apply_it_by_hand() -> None:
    text = manifest_yaml(build_job(make_spec()))
    first, second = text.splitlines()[:2]
    assert first.startswith("#") and "kubectl apply -f job.yaml" in first
    assert second == "# Its state: kubectl get job fleet-quick -n bench"


def test_shards_spread_over_hosts_and_labels_name_the_fleet() -> None:
    manifest = rendered(make_spec(labels={"team": "perf"}))
    (spread,) = pod_of(manifest)["topologySpreadConstraints"]
    assert spread == {
        "labelSelector": {"matchLabels": {"batch.kubernetes.io/job-name": "fleet-quick"}},
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "ScheduleAnyway",
    }
    labels = {
        "team": "perf",
        "app.kubernetes.io/name": "beyond-tops",
        "beyond-tops/fleet": "fleet-quick",
    }
    assert manifest["metadata"]["labels"] == labels
    assert manifest["spec"]["template"]["metadata"]["labels"] == labels
    assert manifest["metadata"]["annotations"] == {"beyond-tops/fleet-dir": FLEET_DIR}


def test_options_change_the_manifest_as_documented() -> None:
    spec = make_spec(
        volume=ResultsVolume(host_path="/mnt/shared", mount_path="/data"),
        fleet_dir="/data/fleet-1",
        node_selector={},
        spread=False,
        backoff_limit=2,
        active_deadline_s=7200,
        ttl_after_finished_s=None,
        supplemental_groups=(44, 992),
    )
    text = manifest_yaml(build_job(spec))
    validate_manifest(text, where="job.yaml")
    manifest = yaml.safe_load(text)
    pod = pod_of(manifest)
    assert pod["volumes"] == [
        {"name": "results", "hostPath": {"path": "/mnt/shared", "type": "Directory"}}
    ]
    assert pod["containers"][0]["volumeMounts"] == [{"name": "results", "mountPath": "/data"}]
    assert "resources" not in pod["containers"][0]  # no cpu, memory or GPU asked for
    assert "nodeSelector" not in pod and "topologySpreadConstraints" not in pod
    assert pod["securityContext"]["supplementalGroups"] == [44, 992]
    assert manifest["spec"]["backoffLimitPerIndex"] == 2
    assert manifest["spec"]["backoffLimit"] == 3 * 3
    assert manifest["spec"]["activeDeadlineSeconds"] == 7200
    assert "ttlSecondsAfterFinished" not in manifest["spec"]


def test_a_given_node_selector_replaces_the_hardware_default() -> None:
    pod = pod_of(rendered(make_spec("nvidia", node_selector={"nvidia.com/gpu.product": "H200"})))
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "H200"}


def test_write_manifest_writes_a_valid_file_naming_itself(tmp_path: Path) -> None:
    path = tmp_path / "fleet-job.yaml"
    write_manifest(build_job(make_spec("rocm")), path)
    text = path.read_text()
    assert "kubectl apply -f fleet-job.yaml" in text.splitlines()[0]
    validate_manifest(text, where=str(path))
    assert [p.name for p in tmp_path.iterdir()] == ["fleet-job.yaml"]  # no temp file left


# ---- validation ----


def _broken(change: Any) -> str:
    manifest = rendered(make_spec("nvidia"))
    change(manifest)
    return yaml.safe_dump(manifest)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda m: m["spec"]["template"]["spec"]["containers"][0].update(gpuCount=1),
            r"^job\.yaml: spec\.template\.spec\.containers\[0\]\.gpuCount: unknown field "
            r"\(Kubernetes 1\.37 schema\)$",
        ),
        (
            lambda m: m["spec"].update(parallelism="two"),
            r"^job\.yaml: spec\.parallelism: 'two' is not of type 'integer'",
        ),
        (
            lambda m: m["spec"]["template"]["spec"].update(nodeSelector=["gpu"]),
            r"^job\.yaml: spec\.template\.spec\.nodeSelector: \['gpu'\] is not of type 'object'",
        ),
    ],
)
def test_a_broken_manifest_is_one_line_naming_the_field(change: Any, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected) as caught:
        validate_manifest(_broken(change), where="job.yaml")
    assert "\n" not in str(caught.value)


def test_validation_never_touches_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("validation tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    validate_manifest(manifest_yaml(build_job(make_spec())), where="job.yaml")


@pytest.mark.parametrize(
    ("text", "version", "expected"),
    [
        ("spec: [", KUBERNETES_VERSION, r"^job\.yaml: not YAML \("),
        ("- 1\n- 2\n", KUBERNETES_VERSION, r"^job\.yaml: not a Kubernetes object"),
        ("apiVersion: batch/v9\nkind: Job\n", KUBERNETES_VERSION, r"^job\.yaml: .*batch/v9"),
        ("apiVersion: batch/v1\nkind: Job\n", "1.20.0", r"'1\.20\.0'.*1\.25\.0 to 1\.37\.0"),
        ("apiVersion: batch/v1\nkind: Job\n", "1.99", r"'1\.99'.*pick one"),
    ],
)
def test_what_cannot_be_validated_is_said_in_one_line(
    text: str, version: str, expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected) as caught:
        validate_manifest(text, where="job.yaml", kubernetes_version=version)
    assert "\n" not in str(caught.value)


def test_field_paths_read_as_people_write_them() -> None:
    parts = ["spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"]
    assert field_path(parts) == 'spec.containers[0].resources.limits["nvidia.com/gpu"]'
    assert field_path([]) == ""


# ---- refused specs ----


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"name": "f" * 64}, r"^--name: 'f{64}' is not a DNS-1123 label .*use e\.g\. 'f{63}'$"),
        ({"name": "Fleet_Quick"}, r"^--name: 'Fleet_Quick' .*use e\.g\. 'fleet-quick'$"),
        ({"name": "-fleet"}, r"^--name: '-fleet' is not a DNS-1123 label"),
        ({"namespace": "Bench"}, r"^--namespace: 'Bench'"),
        ({"completions": 0}, r"^completions \(one per shard\): must be 1\.\.100000, got 0$"),
        ({"parallelism": 4}, r"^--parallelism: must be 1\.\.3, got 4$"),
        ({"parallelism": 0}, r"^--parallelism: must be 1\.\.3, got 0$"),
        ({"hw": "nvidia", "gpus": 0}, r"^--gpus: must be >= 1, got 0$"),
        ({"hw": "tpu"}, r"^--hw: 'tpu' is not one of cpu, nvidia, rocm$"),
        ({"backoff_limit": 11}, r"^--backoff-limit: must be 0\.\.10, got 11$"),
        ({"active_deadline_s": 0}, r"^--active-deadline: must be >= 1, got 0$"),
        ({"cpu": "eight"}, r"^--cpu: 'eight' is not a quantity"),
        ({"memory": "32GB"}, r"^--memory: '32GB' is not a quantity"),
        ({"image": "has space:1"}, r"^--image: "),
        ({"fleet_dir": "/tmp/fleet"}, r"not on the results volume \(/results\)"),
        ({"fleet_dir": "/results/../tmp"}, r"not on the results volume"),
        ({"node_selector": {"bad key!": "x"}}, r"^--node-selector: 'bad key!' is not a label key"),
        ({"labels": {"team": "-perf"}}, r"^--label: team='-perf': a label value"),
        ({"supplemental_groups": (-1,)}, r"^--supplemental-group: "),
    ],
)
def test_bad_values_are_refused_with_the_fix(changes: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        make_spec(**changes)


def test_cpu_ignores_gpus_and_a_63_character_name_is_fine() -> None:
    spec = make_spec("cpu", gpus=0, name="f" * 63)
    assert resource_amounts(spec) == {}


@pytest.mark.parametrize(
    ("volume", "expected"),
    [
        ({"claim": "rwx", "host_path": "/mnt/x"}, r"exactly one of .* got both$"),
        ({}, r"exactly one of .* got neither$"),
        ({"claim": "Results_RWX"}, r"^--claim: 'Results_RWX' is not a claim name"),
        ({"host_path": "mnt/x"}, r"^--host-path: 'mnt/x' must be an absolute path"),
        (
            {"claim": "rwx", "mount_path": "results"},
            r"^--mount-path: 'results' must be an absolute",
        ),
        ({"claim": "rwx", "mount_path": "/"}, r"^--mount-path: '/' would hide the image"),
    ],
)
def test_a_results_volume_is_exactly_one_kind_at_an_absolute_path(
    volume: dict[str, str], expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected):
        ResultsVolume(**volume)


def test_dns_label_like_suggests_a_valid_name() -> None:
    assert dns_label_like("My_Fleet 2026!") == "my-fleet-2026"
    assert dns_label_like("___") == "fleet"


# ---- apply ----


def test_apply_creates_the_job_once_in_the_namespace(api: Any) -> None:
    job = build_job(make_spec("nvidia", gpus=2))
    api.create_namespaced_job.return_value = V1Job(metadata=V1ObjectMeta(name="fleet-quick"))
    assert apply_job(job, namespace="bench", api=api) == "fleet-quick"
    api.create_namespaced_job.assert_called_once()
    kwargs = api.create_namespaced_job.call_args.kwargs
    assert kwargs["namespace"] == "bench"
    body = kwargs["body"]
    assert isinstance(body, V1Job)
    assert body.spec == build_job(make_spec("nvidia", gpus=2)).spec
    assert body.spec is not None and body.spec.completion_mode == "Indexed"


def test_apply_refuses_a_job_built_for_another_namespace(api: Any) -> None:
    job = build_job(make_spec())
    with pytest.raises(ConfigError, match=r"for namespace 'bench', not 'other'"):
        apply_job(job, namespace="other", api=api)
    api.create_namespaced_job.assert_not_called()


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            api_error(409, "Conflict", 'jobs.batch "fleet-quick" already exists'),
            r"^cannot create Job fleet-quick in namespace bench: 409 Conflict "
            r"\(jobs\.batch \"fleet-quick\" already exists\); the Job already exists; delete it "
            r"with `kubectl delete job fleet-quick -n bench` or pick another --name$",
        ),
        (
            api_error(403, "Forbidden", 'User "ann" cannot create resource "jobs"'),
            r"403 Forbidden .*RBAC does not allow it.*`kubectl auth can-i create jobs -n bench`",
        ),
        (
            api_error(404, "Not Found", 'namespaces "bench" not found'),
            r"404 Not Found .*namespace bench does not exist; .*`kubectl create namespace bench`",
        ),
        (
            api_error(422, "Unprocessable Entity", "spec.parallelism: Invalid value: -1"),
            r"422 Unprocessable Entity \(spec\.parallelism: Invalid value: -1\); .*fix the field",
        ),
        (ApiException(status=0, reason="SSLError\ncertificate verify failed"), r"0 SSLError cert"),
        (
            MaxRetryError(None, "https://10.0.0.1:6443/apis"),
            r"did not answer .*kubectl cluster-info",
        ),
    ],
)
def test_api_errors_become_one_line_scheduler_errors(
    api: Any, error: Exception, expected: str
) -> None:
    api.create_namespaced_job.side_effect = error
    with pytest.raises(SchedulerError, match=expected) as caught:
        apply_job(build_job(make_spec()), namespace="bench", api=api)
    assert "\n" not in str(caught.value)
    assert caught.value.__suppress_context__  # the CLI prints the line, never a traceback


# ---- configuration ----


def test_no_kubeconfig_and_no_pod_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-such-kubeconfig"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(SchedulerError, match=rf"^no usable Kubernetes configuration in {missing}"):
        apply_job(build_job(make_spec()), namespace="bench")
    with pytest.raises(SchedulerError) as caught:
        job_status("fleet-quick", namespace="bench")
    assert "\n" not in str(caught.value) and "set KUBECONFIG" in str(caught.value)
    assert caught.value.__suppress_context__


def test_in_a_pod_without_a_kubeconfig_the_service_account_is_tried(tmp_path: Path) -> None:
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "HOME": str(tmp_path)}
    with pytest.raises(SchedulerError, match=r"in the pod's service account \(Service "):
        load_configuration(environ=environ)


def write_kubeconfig(path: Path, server: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_kubeconfig_is_read_without_changing_the_global_default(tmp_path: Path) -> None:
    from kubernetes.client import Configuration

    path = write_kubeconfig(tmp_path / "kubeconfig", "https://k8s.example.com:6443")
    before = Configuration.get_default_copy().host
    configuration = load_configuration(str(path), environ={})
    assert configuration.host == "https://k8s.example.com:6443"
    assert Configuration.get_default_copy().host == before


def test_kubectls_order_given_then_kubeconfig_env_then_home(tmp_path: Path) -> None:
    write_kubeconfig(tmp_path / ".kube" / "config", "https://home.example.com")
    env_file = write_kubeconfig(tmp_path / "env.yaml", "https://env.example.com")
    given = write_kubeconfig(tmp_path / "given.yaml", "https://given.example.com")
    in_pod = {"HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    with_env = {**in_pod, "KUBECONFIG": str(env_file)}
    assert load_configuration(environ=in_pod).host == "https://home.example.com"
    assert load_configuration(environ=with_env).host == "https://env.example.com"
    assert load_configuration(str(given), environ=with_env).host == "https://given.example.com"


# ---- status ----


@pytest.mark.parametrize(
    ("text", "indexes"),
    [
        ("0-2,5", {0, 1, 2, 5}),
        ("7", {7}),
        ("1-1,3-4", {1, 3, 4}),
        ("", set()),
        (None, set()),
    ],
)
def test_index_ranges_parse(text: str | None, indexes: set[int]) -> None:
    assert parse_index_ranges(text) == indexes


@pytest.mark.parametrize("text", ["2-1", "a", "1,,2", "-3", "1-"])
def test_bad_index_ranges_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a list of indexes"):
        parse_index_ranges(text)


def _job_with(status: V1JobStatus, completions: int = 6) -> V1Job:
    spec = V1JobSpec(completions=completions, template=V1PodTemplateSpec())
    return V1Job(metadata=V1ObjectMeta(name="fleet-quick"), spec=spec, status=status)


def test_job_status_reads_each_index(api: Any) -> None:
    status = V1JobStatus(completed_indexes="0-2", failed_indexes="4", active=2)
    api.read_namespaced_job_status.return_value = _job_with(status)
    states = job_status("fleet-quick", namespace="bench", api=api)
    api.read_namespaced_job_status.assert_called_once_with(name="fleet-quick", namespace="bench")
    assert states == {
        0: "Succeeded",
        1: "Succeeded",
        2: "Succeeded",
        3: "Unknown",
        4: "Failed",
        5: "Unknown",
    }


def test_once_the_job_failed_no_unfinished_index_is_unknown(api: Any) -> None:
    failed = V1JobCondition(type="Failed", status="True", reason="DeadlineExceeded")
    status = V1JobStatus(completed_indexes="0", conditions=[failed])
    api.read_namespaced_job_status.return_value = _job_with(status, completions=3)
    states = job_status("fleet-quick", namespace="bench", api=api)
    assert states == {0: "Succeeded", 1: "Failed", 2: "Failed"}


def test_a_job_with_no_status_yet_is_all_unknown(api: Any) -> None:
    api.read_namespaced_job_status.return_value = _job_with(V1JobStatus(), completions=2)
    assert job_status("fleet-quick", namespace="bench", api=api) == {
        0: "Unknown",
        1: "Unknown",
    }


def test_a_gone_job_says_so_in_one_line(api: Any) -> None:
    api.read_namespaced_job_status.side_effect = api_error(404, "Not Found", "not found")
    with pytest.raises(
        SchedulerError,
        match=r"^cannot read Job fleet-quick .*404.*no Job fleet-quick there .*ttlSecondsAfter",
    ):
        job_status("fleet-quick", namespace="bench", api=api)


def test_a_garbled_index_list_from_the_api_is_a_scheduler_error(api: Any) -> None:
    status = V1JobStatus(completed_indexes="3-1")
    api.read_namespaced_job_status.return_value = _job_with(status)
    with pytest.raises(SchedulerError, match=r"Job fleet-quick in namespace bench: '3-1'"):
        job_status("fleet-quick", namespace="bench", api=api)
