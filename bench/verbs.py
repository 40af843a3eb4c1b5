"""In-process latency of each verb on a large synthetic cluster.

    python bench/verbs.py [--nodes 500] [--pods 10000] [--rounds 300]

Builds a snapshot-sized cluster (nodes of 32 cpu / 128Gi, pods of mixed priority, QoS and
PDB coverage, some nominated pods), then times complete requests through the Flask app
(body parsing, policy, serialisation) with the app's test client: filter and prioritize
over every node (nodeCacheCapable: true), preempt over 100 candidate nodes with 3 proposed
victims each; then preempt again under a multi-tenant policy (5 weighted queues with
guarantees, by namespace), and the cost of assessing queue usage once per new view (what a
live cluster pays after each publication that a preempt call reads). Prints a Markdown table of
p50/p99/max in milliseconds.
"""

from __future__ import annotations

import argparse
import gc
import platform
import random
import statistics
import time

import orjson

from extender.serving.app import create_app
from extender.state.source import StaticCluster
from extender.config import Settings
from extender.policy_file import parse as parse_policy
from extender.state.snapshot import from_documents
from policy import tenancy

PRIORITIES = [0, 100, 1000, 10000]


def cluster(nodes: int, pods: int, rng: random.Random) -> list[dict]:
    items: list[dict] = []
    for n in range(nodes):
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{n:04d}"},
                "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}},
            }
        )
    for i in range(pods):
        cpu = rng.choice(["250m", "500m", "1", "1500m"])
        guaranteed = rng.random() < 0.4
        resources = {"requests": {"cpu": cpu, "memory": "1Gi"}}
        resources["limits"] = dict(resources["requests"]) if guaranteed else {"memory": "2Gi"}
        nominated = i % 500 == 0
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"pod-{i}",
                "namespace": f"ns-{i % 50}",
                "uid": f"uid-{i}",
                "labels": {"app": f"app-{i % 200}"},
            },
            "spec": {
                "priority": rng.choice(PRIORITIES[:3]),
                "containers": [{"name": "c", "resources": resources}],
            },
            "status": {"startTime": f"2026-11-{1 + i % 20:02d}T10:00:00Z"},
        }
        if nominated:
            pod["status"]["nominatedNodeName"] = f"node-{i % nodes:04d}"
        else:
            pod["spec"]["nodeName"] = f"node-{i % nodes:04d}"
        items.append(pod)
    for a in range(200):
        items.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": f"app-{a}", "namespace": f"ns-{a % 50}"},
                "spec": {"selector": {"matchLabels": {"app": f"app-{a}"}}},
                "status": {"disruptionsAllowed": a % 3},
            }
        )
    return items


def preemptor(cpu: str) -> dict:
    return {
        "metadata": {"name": "incoming", "namespace": "ns-0", "uid": "uid-incoming", "labels": {"app": "app-0"}},
        "spec": {"priority": 10000, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "2Gi"}}}]},
        "status": {"phase": "Pending"},
    }


def timed(client, path: str, body: bytes, rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        response = client.post(path, data=body)
        samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.data
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--freeze", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    rng = random.Random(7)
    view = from_documents(cluster(args.nodes, args.pods, rng), source="bench")
    client = create_app(Settings(), cluster=StaticCluster(view)).test_client()
    if args.freeze:
        gc.freeze()
    names = sorted(view.nodes)
    filter_body = orjson.dumps({"Pod": preemptor("2"), "Nodes": None, "NodeNames": names})
    # 100 candidates with 3 proposed victims each: the lowest-priority pods on the node.
    meta = {}
    for name in names[:100]:
        low = sorted(view.nodes[name].pods, key=lambda p: p.priority)[:3]
        meta[name] = {"Pods": [{"UID": p.uid} for p in low], "NumPDBViolations": 0}
    preempt_body = orjson.dumps({"Pod": preemptor("24"), "NodeNameToVictims": None, "NodeNameToMetaVictims": meta})

    rules = parse_policy(
        {
            "queues": [
                {"name": f"q{q}", "namespaces": [f"ns-{n}" for n in range(q, 50, 5)], "weight": q + 1, "guaranteed": {"cpu": "500"}}
                for q in range(5)
            ]
        }
    )
    with_policy = create_app(Settings(), cluster=StaticCluster(view), rules=rules).test_client()

    rows = []
    for verb, body, app in (
        ("filter", filter_body, client),
        ("prioritize", filter_body, client),
        ("preempt", preempt_body, client),
        ("preempt --policy", preempt_body, with_policy),
    ):
        path = "/" + verb.split()[0]
        timed(app, path, body, 20)  # warm up
        samples = sorted(timed(app, path, body, args.rounds))
        p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
        rows.append((verb, statistics.median(samples), p99, samples[-1]))
    assess = []
    for _ in range(max(10, args.rounds // 10)):
        started = time.perf_counter()
        tenancy.assess(rules, view)
        assess.append((time.perf_counter() - started) * 1000)
    assess.sort()
    rows.append(("assess queues (once per view)", statistics.median(assess), assess[min(len(assess) - 1, int(len(assess) * 0.99))], assess[-1]))
    answer = orjson.loads(client.post("/preempt", data=preempt_body).data)["NodeNameToMetaVictims"]
    victims = sum(len(v["Pods"]) for v in answer.values())

    print(f"{args.nodes} nodes, {args.pods} pods, {args.rounds} rounds; Python {platform.python_version()} on {platform.machine()}")
    print(f"preempt: 100 candidates x 3 proposed victims -> {len(answer)} node(s) offered, {victims} victim(s)\n")
    print("| verb | p50 ms | p99 ms | max ms |")
    print("|---|---:|---:|---:|")
    for verb, p50, p99, worst in rows:
        print(f"| {verb} | {p50:.2f} | {p99:.2f} | {worst:.2f} |")


if __name__ == "__main__":
    main()
