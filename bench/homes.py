"""policy.homes at scale: how long home() takes on a 5,000-node, 150,000-pod view.

    python bench/homes.py [--nodes 5000] [--pods-per-node 30] [--shapes 200] [--views 5] [--seed 1]

Nodes of 32 cpu / 128 Gi / 110 pods, a tenth of them a tainted GPU pool; pods of 250m-2 cpu,
three priorities, from ``--shapes`` templates (some with a node selector, a required affinity
or the GPU toleration). Per scene, on new views:

* the first question of a view: of a view made from nothing (it sorts the nodes by free room of
  the resources asked), and of the next view as the live store makes it (10 nodes changed, the
  free room of the others carried over in the view's memo);
* the first question of each other shape (a probe of the view's first 32 nodes; else a walk
  of the nodes with enough room, or of those that admit it);
* the same questions again (a dict lookup per victim), and ``homeless`` over 3 victims.

Scenes: ``roomy`` (nodes 60-90% used), ``packed`` (every node within 200m of full: most
shapes have no home), ``pinned`` (every shape selects a 50-node pool), ``tainted`` (nine
nodes in ten tainted, shapes without the toleration). Prints a Markdown table of microseconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policy import homes  # noqa: E402
from policy.view import ClusterView  # noqa: E402
from tests.builders import node, pod, term, tolerate  # noqa: E402

GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"


def scene(kind: str, args, rng: random.Random):
    nodes = []
    for n in range(args.nodes):
        pool = f"pool-{n % 100}"  # 100 pools of 50 nodes
        tainted = n % 10 == 0 if kind != "tainted" else n % 10 != 0
        nodes.append(node(f"node-{n:04d}", cpu=32, mem=128, labels={"pool": pool, "zone": f"z{n % 3}"},
                          taints=(GPU_TAINT,) if tainted else ()))
    templates = []
    for t in range(args.shapes):
        constraints = {}
        if kind == "pinned" or t % 7 == 0:
            constraints["node_selector"] = {"pool": f"pool-{t % 100}"}
        elif t % 7 == 1:
            constraints["affinity"] = (term(("zone", "In", f"z{t % 3}")),)
        if kind != "tainted" and t % 5 == 0:
            constraints["tolerations"] = (tolerate("nvidia.com/gpu"),)
        templates.append((rng.choice([0.25, 0.5, 1, 1.5, 2]), rng.choice([0, 100, 1000]), constraints))
    pods = []
    for n, nd in enumerate(nodes):
        budget = 32 * (rng.uniform(0.6, 0.9) if kind != "packed" else 1)
        used = 0.0
        for i in range(args.pods_per_node):
            cpu, priority, constraints = templates[rng.randrange(len(templates))]
            if kind == "packed" and i == args.pods_per_node - 1:
                cpu = max(0.0, round(32 - used - rng.choice([0, 0.1, 0.2]), 3))
            elif used + cpu > budget:
                cpu = 0
            used += cpu
            pods.append(pod(f"p{n}-{i}", node=nd.name, cpu=cpu, mem=1, priority=priority, kind="ReplicaSet", **constraints))
    victims = {}
    for p in pods:  # one victim per shape
        victims.setdefault((tuple(p.requests.items()), p.priority, p.placement), p)
    return nodes, pods, list(victims.values())


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=30)
    parser.add_argument("--shapes", type=int, default=200)
    parser.add_argument("--views", type=int, default=5, help="views of each kind (new, next) per scene")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"{args.nodes} nodes, {args.nodes * args.pods_per_node} pods, {args.shapes} templates, seed {args.seed}, "
          f"Python {sys.version.split()[0]}\n")
    print(
        "| scene | shapes | homeless | first of a view: new / next | first per shape p50 / p99 / max "
        "| repeated p50 / p99 | homeless(3) p50 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind in ("roomy", "packed", "pinned", "tainted"):
        nodes, pods, victims = scene(kind, args, rng)
        firsts, nexts, per_shape, repeated, triples = [], [], [], [], []
        names = [n.name for n in nodes]
        v = None
        for round_ in range(2 * args.views):
            previous = v
            v = ClusterView.build(nodes=nodes, pods=pods)
            if round_ % 2:  # the next view: 10 nodes changed, the rest of the memo carried
                v = dataclasses.replace(v, memo=previous.carry_memo(dirty_nodes=rng.sample(names, 10), budgets_changed=False))
            gc.collect()
            gc.freeze()  # as the server does once its view is loaded
            h = homes.of(v)
            order = victims[:]
            rng.shuffle(order)
            (nexts if round_ % 2 else firsts).append(timed(lambda: h.home(order[0], excluding=order[0].node_name)))
            for victim in order[1:]:
                per_shape.append(timed(lambda: h.home(victim, excluding=victim.node_name)))
            for victim in order:
                repeated.append(timed(lambda: h.home(victim, excluding=victim.node_name)))
            for i in range(0, len(order) - 2, 3):
                triples.append(timed(lambda: homes.homeless(order[i : i + 3], h, node=order[i].node_name)))
        without = sum(h.home(victim, excluding=victim.node_name) is None for victim in victims)  # every view alike
        q = lambda xs, p: statistics.quantiles(xs, n=100)[p - 1]  # noqa: E731
        print(
            f"| {kind} | {len(victims)} | {without} | {statistics.median(firsts):.0f} / {statistics.median(nexts):.0f} "
            f"| {q(per_shape, 50):.0f} / {q(per_shape, 99):.0f} / {max(per_shape):.0f} "
            f"| {q(repeated, 50):.1f} / {q(repeated, 99):.1f} | {q(triples, 50):.1f} |"
        )


if __name__ == "__main__":
    main()
