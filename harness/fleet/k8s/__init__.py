"""Kubernetes: the fleet's Indexed Job, its offline schema check, its creation and its state.

Each pod of the Job runs one fleet task, `harness fleet task FLEET_DIR`, and reads its index
from JOB_COMPLETION_INDEX, which Kubernetes sets in an Indexed Job's pods. The Job is built
from the `kubernetes` client's typed models (job.py, from spec.py's K8sJobSpec) and checked,
with no network, against the API's JSON schema by `kubernetes-validate` in strict mode (an
unknown field fails; validate.py); cluster.py creates it and reads its state. Both packages
come with the `fleet` extra and are imported only when used (extra.py): importing any module
of this package imports neither.
"""
