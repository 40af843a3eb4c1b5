"""Victim choice on one node: the greedy orders alone against greedy plus policy.exact's search.

    python bench/victims.py [--nodes 400] [--seed 1]

For nodes of 4 to 80 lower-priority pods (random priorities 0-5, all QoS classes, sizes of
250m-3 cpu, a third under a budget that allows one disruption, a preemptor that needs 1-8 cpu),
each node is solved twice, interleaved: greedy orders only, then with the search (every set up
to policy.exact.EXACT_LIMIT candidates, one swap pass above). Prints, per node size, how often
the search found a cheaper set than every greedy order and on which criterion, and the time per
node of both (median and p99, ms) with their ratio.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policy import exact  # noqa: E402
from policy.qos import QoS  # noqa: E402
from policy.victims import Choosing, VictimSelection, select_victims  # noqa: E402
from tests.builders import node, pdb, pod, view  # noqa: E402

SIZES = (4, 8, 12, 16, 24, 40, 80)


def scene(size: int, rng: random.Random):
    pods = []
    for i in range(size):
        qos = rng.choice([QoS.GUARANTEED, QoS.BURSTABLE, QoS.BEST_EFFORT])
        cpu = 0 if qos == QoS.BEST_EFFORT else rng.choice([0.25, 0.5, 1, 1.5, 2, 3])
        pods.append(
            pod(
                f"p{i}", node="n1", cpu=cpu, priority=rng.randint(0, 5), qos=qos, start=rng.random() * 1000,
                labels={"app": "a" if rng.random() < 0.33 else f"x{i}"},
            )
        )
    used = sum(p.requests.get("cpu", 0) for p in pods) / 1000
    v = view([node("n1", cpu=used + rng.choice([0, 0.5, 1]), pods=size + 10)], pods, [pdb("a", allowed=1, match={"app": "a"})])
    return v, pod("pre", cpu=rng.randint(1, 8), priority=10)


def solve(v, preemptor):
    started = time.perf_counter()
    chosen = select_victims(node=v.nodes["n1"], choosing=Choosing(preemptor, v.budgets_covering), reservations=())
    return chosen, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=400, help="nodes per size")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"{args.nodes} nodes per size, seed {args.seed}, EXACT_LIMIT {exact.EXACT_LIMIT}\n")
    print("| pods | solvable | search cheaper | on criterion | greedy ms p50/p99 | with search ms p50/p99 | ratio p50 |")
    print("|---:|---:|---:|---|---:|---:|---:|")
    for size in SIZES:
        plain, searched, won, solvable = [], [], [], 0
        criteria: dict[str, int] = {}
        for _ in range(args.nodes):
            v, preemptor = scene(size, rng)
            with mock.patch.object(exact, "EXACT_LIMIT", -1), mock.patch.object(exact, "improve", lambda **_: None):
                greedy, t_greedy = solve(v, preemptor)
            best, t_best = solve(v, preemptor)
            plain.append(t_greedy)
            searched.append(t_best)
            if not isinstance(best, VictimSelection):
                continue
            solvable += 1
            a, b = greedy.cost, best.cost
            assert b.key <= a.key, (a.key, b.key)
            if b.key < a.key:
                won.append(1)
                step = next(i for i, (x, y) in enumerate(zip(a.key, b.key)) if x != y)
                name = a.layout.criteria[step].name
                criteria[name] = criteria.get(name, 0) + 1
        p = lambda xs, q: statistics.quantiles(xs, n=100)[q - 1] * 1000  # noqa: E731
        on = ", ".join(f"{name} {count}" for name, count in sorted(criteria.items(), key=lambda kv: -kv[1])) or "-"
        print(
            f"| {size} | {solvable} | {len(won)} ({len(won) / max(solvable, 1):.1%}) | {on} "
            f"| {p(plain, 50):.2f} / {p(plain, 99):.2f} | {p(searched, 50):.2f} / {p(searched, 99):.2f} "
            f"| {statistics.median(searched) / statistics.median(plain):.2f}x |"
        )


if __name__ == "__main__":
    main()
