"""Where preempt's time goes at scale: bench/verbs.py's cluster and preempt request, decided
with and without the lower bounds (policy.bounds) in one process, then profiled.

    python bench/preempt_profile.py [--nodes 5000] [--pods 150000] [--candidates 500]

Prints how many candidates the bound leaves to solve, how far the victims chosen on each node
are above the bound's violation count, both timings side by side (p50 of 10), and a cProfile
of the fast path by cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.verbs import cluster, preemptor  # noqa: E402
from extender.state import kube, translate  # noqa: E402
from extender.state.snapshot import from_documents  # noqa: E402
from policy import bounds, ranking  # noqa: E402
from policy.causes import Cause  # noqa: E402
from policy.preempt import Proposal, decide  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--candidates", type=int, default=500)
    args = parser.parse_args()
    view = from_documents(cluster(args.nodes, args.pods, random.Random(7)), source="bench")
    gc.freeze()
    names = sorted(view.nodes)[: args.candidates]
    proposals = {
        n: Proposal(tuple(p.uid for p in sorted(view.nodes[n].pods, key=lambda p: p.priority)[:3]), 0) for n in names
    }
    pod = translate.pod_record(kube.Pod.model_validate(preemptor("24")), view.priority_classes)
    fast = decide(view=view, preemptor=pod, proposals=proposals)
    full = decide(view=view, preemptor=pod, proposals=proposals, exhaustive=True)
    assert fast.answer == full.answer, "the fast path must answer as solving every node does"
    unsolved = sum(o.cause is Cause.NOT_SOLVED for o in fast.outcomes)
    print(f"solved {len(names) - unsolved} of {len(names)} candidates; {full.reasons[0]}")
    at = ranking.DEFAULT.position(ranking.PDB_VIOLATIONS)
    gaps = [
        o.cost.value(ranking.PDB_VIOLATIONS) - bounds.floor(view, view.nodes[o.node], pod, view.reservations(o.node, pod=pod))[at]
        for o in full.outcomes
        if o.cost is not None
    ]
    if gaps:
        print(f"PDB violations chosen minus the bound's: mean {sum(gaps) / len(gaps):.1f}, min {min(gaps)}, max {max(gaps)}")
    for label, exhaustive in (("every node solved", True), ("with the bound", False)) * 2:
        samples = []
        for _ in range(10):
            started = time.perf_counter()
            decide(view=view, preemptor=pod, proposals=proposals, exhaustive=exhaustive)
            samples.append((time.perf_counter() - started) * 1000)
        print(f"{label}: p50 {sorted(samples)[5]:.1f} ms")
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(5):
        decide(view=view, preemptor=pod, proposals=proposals)
    profile.disable()
    pstats.Stats(profile).sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
