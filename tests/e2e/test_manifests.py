"""The deployment manifests pass the real apiserver's validation in a restricted namespace.

This is what `kubectl apply --dry-run=server` does (create with dryRun=All and strict field
validation), done through the API so the test needs no kubectl. Pod Security admission only
warns about a Deployment, so the Deployment's pod template is also submitted as a Pod, which
`enforce=restricted` rejects if it breaks the policy; warnings fail the test too.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import urllib3
import yaml


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


def test_manifests_pass_server_dry_run_in_a_restricted_namespace(plane):
    kube = plane.kube
    ns = "reprieve"
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": ns, "labels": {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}},
        }
    )
    try:
        # The ServiceAccount the pod runs as must exist for the Pod dry run to be admitted.
        kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reprieve", "namespace": ns}})
        objects = [o for o in yaml.safe_load_all((MANIFESTS / "reprieve.yaml").read_text()) if o]
        config = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "reprieve-scheduler-config"},
            "data": {"scheduler-config.yaml": (MANIFESTS / "scheduler-config.yaml").read_text()},
        }
        deployment = next(o for o in objects if o["kind"] == "Deployment")
        template = deployment["spec"]["template"]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "reprieve-template", **template["metadata"]}, "spec": template["spec"]}
        assert {o["kind"] for o in objects} >= {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment"}
        for obj in [*objects, config, pod]:
            if obj["kind"] == "ServiceAccount":
                continue  # created above for real
            status, body, warnings = dry_run(kube, obj, ns)
            assert status == 201, f"{obj['kind']} {obj['metadata']['name']}: HTTP {status}: {body}"
            assert not warnings, f"{obj['kind']} {obj['metadata']['name']}: {warnings}"
    finally:
        kube.delete("Namespace", ns)
