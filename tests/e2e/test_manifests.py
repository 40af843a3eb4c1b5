"""The deployment manifests and the chart's renders pass the real apiserver's validation in a
restricted namespace, and the RBAC they grant lets the scheduler hold its Lease.

This is what `kubectl apply --dry-run=server` does (create with dryRun=All and strict field
validation), done through the API so the test needs no kubectl. Pod Security admission only
warns about a Deployment, so the Deployment's pod template is also submitted as a Pod, which
`enforce=restricted` rejects if it breaks the policy; warnings fail the test too.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import urllib3
import yaml

from extender.apiserver import ApiError
from tests.e2e.chart import CHART, NAMESPACE, objects, template
from tests.e2e.client import wait_for

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"


def dry_run(kube, obj: dict, ns: str) -> tuple[int, str, list[str]]:
    path = kube.collection(obj["kind"], ns)
    response = kube._pool.request(
        "POST",
        f"{kube._host}{path}?dryRun=All&fieldValidation=Strict",
        body=orjson.dumps(obj),
        headers={**kube._headers(), "Content-Type": "application/json"},
        timeout=urllib3.Timeout(connect=5, read=30),
    )
    warnings = response.headers.getlist("Warning") if hasattr(response.headers, "getlist") else []
    return response.status, response.data.decode(errors="replace")[:500], warnings


@pytest.fixture
def restricted(plane):
    kube = plane.kube
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}},
        }
    )
    try:
        yield NAMESPACE
    finally:
        kube.delete("Namespace", NAMESPACE)
        wait_for(f"namespace {NAMESPACE} to go", lambda: not namespace_exists(kube), timeout=60)


def namespace_exists(kube) -> bool:
    try:
        kube.get_obj("Namespace", NAMESPACE)
        return True
    except ApiError as exc:
        if exc.status == 404:
            return False
        raise


@pytest.mark.parametrize(
    "render",
    [
        pytest.param(lambda: (MANIFESTS / "reprieve.yaml").read_text(), id="manifests"),
        pytest.param(lambda: template(CHART / "ci" / "full-values.yaml"), id="chart-full-values"),
    ],
)
def test_renders_pass_server_dry_run_in_a_restricted_namespace(plane, restricted, render):
    kube = plane.kube
    objs = objects(render())
    assert {o["kind"] for o in objs} >= {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment", "PodDisruptionBudget"}
    # The ServiceAccount the pod runs as must exist for the Pod dry run to be admitted.
    [account] = [o for o in objs if o["kind"] == "ServiceAccount"]
    kube.create(account)
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    template_ = deployment["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "reprieve-template", "namespace": restricted, **template_["metadata"]}, "spec": template_["spec"]}
    for obj in [*objs, pod]:
        if obj["kind"] == "ServiceAccount":
            continue  # created above for real
        assert obj["metadata"].get("namespace") in (None, restricted), obj["metadata"]
        status, body, warnings = dry_run(kube, obj, restricted)
        assert status == 201, f"{obj['kind']} {obj['metadata']['name']}: HTTP {status}: {body}"
        assert not warnings, f"{obj['kind']} {obj['metadata']['name']}: {warnings}"


def allowed(kube, user: str, ns: str | None, verb: str, group: str, resource: str, name: str = "") -> bool:
    attributes = {"verb": verb, "group": group, "resource": resource, "name": name, **({"namespace": ns} if ns else {})}
    review = kube.create(
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {}, "spec": {"user": user, "resourceAttributes": attributes}}
    )
    return review["status"]["allowed"]


def test_manifest_rbac_lets_the_scheduler_hold_its_own_lease_and_reprieve_read_what_it_watches(plane, restricted):
    kube = plane.kube
    objs = objects((MANIFESTS / "reprieve.yaml").read_text())
    rbac = [o for o in objs if o["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")]
    created = []
    try:
        for obj in rbac:
            kube.create(obj)
            created.append(obj)
        [account] = [o["metadata"]["name"] for o in objs if o["kind"] == "ServiceAccount"]
        user = f"system:serviceaccount:{restricted}:{account}"
        lease = yaml.safe_load(next(o for o in objs if o["kind"] == "ConfigMap")["data"]["scheduler-config.yaml"])["leaderElection"]
        assert lease["resourceNamespace"] == restricted

        def can(verb, group, resource, name="", ns=restricted):
            return allowed(kube, user, ns, verb, group, resource, name)

        # The apiserver's RBAC authorizer learns of new roles and bindings through its own
        # informers: wait until it has (the first check), then judge every rule.
        wait_for("the new RBAC objects to reach the authorizer", lambda: can("get", "coordination.k8s.io", "leases", lease["resourceName"]), 15)
        for verb in ("get", "update"):
            assert can(verb, "coordination.k8s.io", "leases", lease["resourceName"]), verb
        assert can("create", "coordination.k8s.io", "leases")
        assert not can("update", "coordination.k8s.io", "leases", "someone-elses"), "only its own Lease"
        for resource in ("pods", "nodes"):
            assert can("watch", "", resource, ns=None), resource
        assert can("list", "policy", "poddisruptionbudgets", ns=None)
        assert can("list", "scheduling.k8s.io", "priorityclasses", ns=None)
        for group in ("scheduling.k8s.io", "scheduling.x-k8s.io", "scheduling.volcano.sh"):  # gang minimums
            assert can("watch", group, "podgroups", ns=None), group  # RBAC does not ask whether they are served
        assert can("watch", "batch", "jobs", ns=None)  # retry budgets
        assert can("create", "events.k8s.io", "events", ns="default")
        assert not can("get", "", "secrets", ns=None) and not can("delete", "", "nodes", ns=None)
    finally:
        for obj in reversed(created):
            if obj["kind"].startswith("Cluster"):
                kube.delete(obj["kind"], obj["metadata"]["name"])
