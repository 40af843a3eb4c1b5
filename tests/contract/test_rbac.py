"""reprieve's RBAC in manifests/reprieve.yaml is least privilege: it reads exactly what its cache
watches (reprieve-reader) and writes only its Events (reprieve-events). The scheduler's own
roles (system:kube-scheduler and the leader-election Role) are checked end to end by
SubjectAccessReview in tests/e2e/test_manifests.py."""

from __future__ import annotations

import yaml

from extender.live.changes import KINDS
from tests.conftest import ROOT


def reprieve_rules() -> list[dict]:
    objects = [o for o in yaml.safe_load_all((ROOT / "manifests" / "reprieve.yaml").read_text()) if o]
    roles = [o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] in ("reprieve-reader", "reprieve-events")]
    assert len(roles) == 2, [o["metadata"]["name"] for o in roles]
    return [rule for role in roles for rule in role["rules"]]


def granted() -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in reprieve_rules() for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


def test_reads_exactly_what_the_cache_watches_and_writes_only_events():
    watched = set()
    for kind in KINDS.values():
        parts = kind.path.strip("/").split("/")  # api/v1/pods or apis/policy/v1/poddisruptionbudgets
        group = "" if parts[0] == "api" else parts[1]
        watched |= {(group, parts[-1], verb) for verb in ("get", "list", "watch")}
    events = {("events.k8s.io", "events", "create"), ("events.k8s.io", "events", "patch")}
    assert granted() == watched | events
