"""--policy through the HTTP verbs and the CLI, on the example cluster and example policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extender import policy_file

from extender.state import snapshot
from extender.serving.app import create_app
from extender.cli import main
from extender.state.source import StaticCluster
from extender.config import Settings
from tests.contract.objects import dump, k8s_node, k8s_pod

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def victims(answer: dict, view) -> dict[str, list[str]]:
    by_uid = {p.uid: p.key for p in view.pods.values()}
    return {
        node: [by_uid[v["UID"]] for v in meta["Pods"]] for node, meta in answer["NodeNameToMetaVictims"].items()
    }


@pytest.mark.parametrize(
    "policy, expected",
    [
        # Kubernetes rules: checkout-0 (shop, priority 10000) takes the cheapest victim on
        # node-a, a batch report.
        pytest.param(None, {"node-a": ["batch/report-1"]}, id="without-policy"),
        # Example policy: shop uses 3 cpus against its 2 guaranteed, so it is not below its
        # share and may only take its own lower-priority pods: a web replica (its PDB allows 1).
        pytest.param("policy.yaml", {"node-a": ["shop/web-7d4b9c-a1"]}, id="shop-over-its-share-takes-its-own"),
    ],
)
def test_preempt_follows_the_policy(policy, expected):
    view = snapshot.load(EXAMPLES / "cluster.yaml")
    rules = policy_file.load(EXAMPLES / policy).rules if policy else None
    client = create_app(Settings(), cluster=StaticCluster(view), rules=rules).test_client()
    response = client.post("/preempt", data=(EXAMPLES / "requests" / "preempt.json").read_bytes())
    assert response.status_code == 200
    assert victims(response.get_json(), view) == expected


def test_a_policy_file_may_only_reorder_the_ranking(tmp_path, capsys):
    # Fewest Burstable victims first: on node-a the Guaranteed report-2 goes, not the Burstable
    # report-1 the default order (Guaranteed victims first) evicts; no multi-tenant rule is on.
    path = tmp_path / "ranking.yaml"
    path.write_text("ranking: [Burstable victims]\n")
    policy = policy_file.load(path)
    view = snapshot.load(EXAMPLES / "cluster.yaml")
    client = create_app(Settings(), cluster=StaticCluster(view), rules=policy.rules, order=policy.order).test_client()
    response = client.post("/preempt", data=(EXAMPLES / "requests" / "preempt.json").read_bytes())
    assert response.status_code == 200
    assert victims(response.get_json(), view) == {"node-a": ["batch/report-2"]}
    assert main(["check-policy", str(path)]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("policy valid: the ranking's order only, no multi-tenant rules\n"), shown
    assert "ranking: opted-out victims, Burstable victims, PDB violations, Jobs failed, broken gangs," in shown, shown


def test_check_policy_reports_each_queue_against_the_snapshot(capsys):
    assert main(["check-policy", str(EXAMPLES / "policy.yaml"), "--snapshot", str(EXAMPLES / "cluster.yaml")]) == 0
    out = capsys.readouterr().out
    blocks = {b.strip().splitlines()[0].strip(): b for b in out.split("\n\n")}
    shop = blocks["queue shop (in products)"]
    # shop: 3 web replicas of 1 cpu / 2Gi each, guaranteed cpu=2 memory=4Gi.
    assert "usage     cpu=3 memory=6Gi pods=3" in shop
    assert "may preempt other queues: no, not below its share" in shop
    assert "may lose pods to other queues: yes, above its share by cpu=1 memory=2Gi" in shop
    training = blocks["queue training (in research)"]
    # training: trainer-0 (nominated, counted) uses 3 of its 4 guaranteed cpus.
    assert "may preempt other queues: yes, below its share of cpu" in training
    assert "may lose pods to other queues: no, preemption disabled on analytics" in blocks["queue analytics (in products)"]


def test_check_policy_without_a_cluster_only_validates(capsys):
    assert main(["check-policy", str(EXAMPLES / "policy.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("policy valid: 7 queue(s)") and "usage     " not in out


@pytest.mark.parametrize("command", ["check-policy", "serve"])
def test_a_bad_policy_stops_the_command_naming_the_key(tmp_path, capsys, command):
    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps({"queues": [{"name": "a", "weight": -1}]}))
    argv = ["check-policy", str(bad)] if command == "check-policy" else [
        "serve", "--snapshot", str(EXAMPLES / "cluster.yaml"), "--policy", str(bad)
    ]
    assert main(argv) == 2
    assert f"reprieve: policy {bad}: queues[0] (a).weight: Input should be greater than or equal to 1" in capsys.readouterr().err


def check_policy(capsys, tmp_path, policy: dict, *objects: dict) -> dict[str, str]:
    """``reprieve check-policy`` on ``objects``: its blocks by title."""
    (tmp_path / "policy.yaml").write_text(json.dumps(policy))
    (tmp_path / "cluster.json").write_text(json.dumps(dump(*objects)))
    assert main(["check-policy", str(tmp_path / "policy.yaml"), "--snapshot", str(tmp_path / "cluster.json")]) == 0
    out = capsys.readouterr().out
    return {b.strip().splitlines()[0].strip(): b for b in out.split("\n\n")}


def test_check_policy_shows_an_inherited_guarantee_and_where_it_came_from(capsys, tmp_path):
    # YuniKorn's ParentGuaranteed: only parent is guaranteed (10); child1 uses 6 of it.
    policy = {"queues": [
        {"name": "parent", "guaranteed": {"cpu": "10"}},
        {"name": "child1", "parent": "parent", "namespaces": ["child1"], "guaranteed": {"cpu": "5"}},
        {"name": "child2", "parent": "parent", "namespaces": ["child2"]},
    ]}
    blocks = check_policy(capsys, tmp_path, policy, k8s_node("n1", cpu="10"), k8s_pod("a", "child1", node="n1", cpu="6"))
    child2 = blocks["queue child2 (in parent)"]
    assert "inherited cpu=4 from parent: its guarantee cpu=10 less cpu=6 used by its other queues" in child2, child2
    assert "share     cpu=4" in child2
    assert "may preempt other queues: yes, below its share of cpu, for a pod short of it on the node" in child2
    child1 = blocks["queue child1 (in parent)"]
    assert "inherited" not in child1  # its own guarantee names cpu


def test_check_policy_says_which_resources_protect_a_queue(capsys, tmp_path):
    # The qa: 7 cpus and 7G used, deserving 5 cpus and its whole memory demand.
    policy = {"queues": [{"name": "qa", "namespaces": ["qa"], "weight": 1}, {"name": "qb", "namespaces": ["qb"], "weight": 1}]}
    pods = [k8s_pod(f"low-{i}", "qa", node="n1", cpu="1", memory="1G", minute=i) for i in range(7)]
    pending = k8s_pod("high-0", "qb", cpu="2", memory="1G", priority=1000)
    blocks = check_policy(capsys, tmp_path, policy, k8s_node("n1", cpu="7", memory="16Gi"), *pods, pending)
    qa = blocks["queue qa"]
    assert "may lose pods to other queues: yes, above its share by cpu=2; not to pods short of memory on the node" in qa, qa
