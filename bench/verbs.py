"""In-process latency of each verb on a large synthetic cluster, beside the floor.

    python bench/verbs.py [--nodes 500] [--pods 10000] [--candidates 100] [--rounds 300]
                          [--waiting 0] [--baseline REV] [--cpu] [--profile]

Builds a snapshot-sized cluster (nodes of 32 cpu / 128Gi, pods of mixed priority, QoS and
PDB coverage, some nominated pods), then times complete requests through the Flask app
(body parsing, policy, serialisation) with the app's test client: filter and prioritize
over every node (nodeCacheCapable: true) and over 500 of them, preempt over ``--candidates``
candidate nodes with 3 proposed victims each; then preempt again under a multi-tenant policy
(5 weighted queues with guarantees, by namespace), and queue assessment: from scratch (what
a view costs without the live store's change log) and updated from the previous view's after
10 pods changed (extender.state.standings with the live store). Beside each request, the
floor: ``orjson`` parsing the same body and writing a fixed answer (filter echoes the names,
prioritize answers ``[]``, preempt echoes one node), what any extender in Python pays for the
JSON alone; the ratio is the verb's p50 over the floor's.

With ``--baseline REV`` the same measurements also run on ``git archive REV`` (extracted to a
temporary directory), each tree in its own process, and the table shows both with the ratio.
Prints a Markdown table of p50/p99 in milliseconds: elapsed, or with ``--cpu`` this process's
CPU time (what other work on a shared machine disturbs least).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, os.environ.get("REPRIEVE_TREE", str(HERE.parent.parent)))

import orjson  # noqa: E402

from extender.config import Settings  # noqa: E402
from extender.policy_file import parse as parse_policy  # noqa: E402
from extender.serving.app import create_app  # noqa: E402
from extender.state.ledger import Ledger  # noqa: E402
from extender.state.snapshot import from_documents  # noqa: E402
from extender.state.source import StaticCluster  # noqa: E402
from policy import tenancy  # noqa: E402

try:
    from extender.serving.collector import Collector  # noqa: E402

    COLLECTOR = Collector()
except ImportError:  # a tree before issue 31's collector (--baseline)
    COLLECTOR = None

PRIORITIES = [0, 100, 1000, 10000]


def cluster(nodes: int, pods: int, rng: random.Random, waiting: int = 0) -> list[dict]:
    """The cluster's documents; ``waiting``: that many pending pods nominated nowhere besides
    (the queue policy.criteria.pending_room reads), of the bound pods' shapes and priorities."""
    items: list[dict] = waiting_pods(waiting, random.Random(11))
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


def waiting_pods(count: int, rng: random.Random) -> list[dict]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"waiting-{i}", "namespace": f"ns-{i % 50}", "uid": f"waiting-uid-{i}"},
            "spec": {
                "priority": rng.choice(PRIORITIES[:3]),
                "containers": [{"name": "c", "resources": {"requests": {"cpu": rng.choice(["250m", "1", "4", "16"]), "memory": "1Gi"}}}],
            },
            "status": {},
        }
        for i in range(count)
    ]


def preemptor(cpu: str) -> dict:
    return {
        "metadata": {"name": "incoming", "namespace": "ns-0", "uid": "uid-incoming", "labels": {"app": "app-0"}},
        "spec": {"priority": 10000, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "2Gi"}}}]},
        "status": {"phase": "Pending"},
    }


# What a sample measures: elapsed time (the default), or with --cpu this process's CPU time,
# which other work on a shared machine disturbs much less (see docs/benchmarks.md).
CLOCK = time.perf_counter


def timed(client, path: str, body: bytes | list[bytes], rounds: int) -> list[float]:
    """Milliseconds per request; a list of bodies is sent in turn (each once, if long enough).
    Each request is taken and answered as the server does (extender.serving.collector: the
    garbage collector off while it is answered, the collection due run once the answer is
    sent, here after the clock is read); a tree without it (--baseline) collects whenever due."""
    bodies = body if isinstance(body, list) else [body]
    samples = []
    clock = CLOCK
    take, done = (COLLECTOR.take, COLLECTOR.done) if COLLECTOR else (_nothing, _nothing)
    for i in range(rounds):
        take()
        try:
            started = clock()
            COLLECTIONS.inside = True
            response = client.post(path, data=bodies[i % len(bodies)])
            COLLECTIONS.inside = False
            samples.append((clock() - started) * 1000)
        finally:
            done()
        assert response.status_code == 200, response.data
    return samples


def _nothing() -> None:
    pass


class Collections:
    """The garbage collector's passes while the requests of a row are timed (gc.callbacks), in
    the requests and between them: [full collections, milliseconds of every collection]."""

    def __init__(self) -> None:
        self.inside, self.started = False, 0.0
        self.tally = {True: [0, 0.0], False: [0, 0.0]}
        gc.callbacks.append(self._seen)

    def _seen(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.started = time.perf_counter()
            return
        tally = self.tally[self.inside]
        tally[0] += info["generation"] == 2
        tally[1] += (time.perf_counter() - self.started) * 1000

    def take(self) -> dict:
        """The passes since the last call, and start again."""
        seen = {"inside": self.tally[True], "between": self.tally[False]}
        self.tally = {True: [0, 0.0], False: [0, 0.0]}
        return seen


COLLECTIONS = Collections()


def floor(path: str, body: bytes, rounds: int) -> list[float]:
    """orjson in, a fixed answer out: the JSON cost alone."""
    samples = []
    clock = CLOCK
    for _ in range(rounds):
        started = clock()
        args = orjson.loads(body)
        if path == "/filter":
            answer = {"Nodes": None, "NodeNames": args["NodeNames"], "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": ""}
        elif path == "/prioritize":
            answer = []
        else:
            first = next(iter(args["NodeNameToMetaVictims"].items()))
            answer = {"NodeNameToMetaVictims": dict([first])}
        orjson.dumps(answer)
        samples.append((clock() - started) * 1000)
    return samples


def stats(samples: list[float]) -> dict:
    samples = sorted(samples)
    return {"p50": statistics.median(samples), "p99": samples[min(len(samples) - 1, int(len(samples) * 0.99))]}


class _Unrecorded(Ledger):
    """A ledger that records no answer."""

    def record(self, *args, **kwargs) -> None:
        pass


def first_asks(view, **kwargs):
    """An app for the preempt rows, which ask about one preemptor again and again: each request
    is decided as that preemptor's first (a recorded answer would be in flight for the next,
    its victims not named again: another decision each time). A tree before create_app took a
    ledger (--baseline) set its preemptor's own answer aside itself."""
    try:
        app = create_app(Settings(), cluster=StaticCluster(view), ledger=_Unrecorded(), **kwargs)
    except TypeError as exc:
        if "ledger" not in str(exc):
            raise
        app = create_app(Settings(), cluster=StaticCluster(view), **kwargs)
    return app.test_client()


def measure(args: argparse.Namespace) -> dict:
    rng = random.Random(7)
    view = from_documents(cluster(args.nodes, args.pods, rng, args.waiting), source="bench")
    client = create_app(Settings(), cluster=StaticCluster(view)).test_client()
    if args.freeze:
        gc.freeze()
    names = sorted(view.nodes)
    pod = preemptor("2")
    filter_body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names})
    few_body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names[:500]})
    # Candidates with 3 proposed victims each: the lowest-priority pods on the node.
    meta = {}
    for name in names[: args.candidates]:
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
    rules = getattr(rules, "rules", rules)  # a Policy since the ranking's order (a Rules before: --baseline)
    deciding = first_asks(view)
    with_policy = first_asks(view, rules=rules)

    requests = [("filter", f"filter ({len(names)} names)", filter_body, client)]
    requests.append(("prioritize", f"prioritize ({len(names)} names)", filter_body, client))
    if len(names) > 500:
        requests.append(("filter", "filter (500 names)", few_body, client))
        requests.append(("prioritize", "prioritize (500 names)", few_body, client))
    # The same request again and again finds what the view keeps per request shape
    # (ClusterView.summary's REQUEST tables): a burst of replicas. A new shape every time,
    # the cpu asked one millicore more (warm-up rounds included), pays for the tables of that
    # shape (the preemptor's priority stays: its per-priority summaries are reused).
    fresh = range(5 + args.rounds)
    requests.append(("prioritize", f"prioritize ({len(names)} names, a new pod shape each time)",
                     [orjson.dumps({"Pod": preemptor(f"{2000 + i}m"), "Nodes": None, "NodeNames": names}) for i in fresh], client))
    requests.append(("preempt", f"preempt ({len(meta)} candidates x 3 victims)", preempt_body, deciding))
    requests.append(("preempt", "preempt (new requests each time, same priority)",
                     [orjson.dumps({"Pod": preemptor(f"{24000 + i}m"), "NodeNameToVictims": None, "NodeNameToMetaVictims": meta}) for i in fresh], deciding))
    requests.append(("preempt", "preempt --policy", preempt_body, with_policy))
    rows = {}
    for verb, label, body, app in requests:
        path = "/" + verb
        warm, measured = (body[:5], body[5:]) if isinstance(body, list) else (body, body)
        timed(app, path, warm, 5)  # warm up (and, for --policy, the view's assessment)
        COLLECTIONS.take()
        rows[label] = {**stats(timed(app, path, measured, args.rounds)), "collector": COLLECTIONS.take()}
        if not isinstance(body, list):
            rows[label]["floor"] = stats(floor(path, body, args.rounds))
    rows["assess queues, from scratch"] = stats(_repeat(lambda: tenancy.assess(rules, view), max(5, args.rounds // 5)))
    updated = _reassessed(view, rules, max(5, args.rounds // 5))
    if updated is not None:
        rows["assess queues, updated after 10 pod changes"] = stats(updated)
    answer = orjson.loads(client.post("/preempt", data=preempt_body).data)["NodeNameToMetaVictims"]
    return {
        "setup": f"{args.nodes} nodes, {args.pods} pods, {args.rounds} rounds; Python {platform.python_version()} on {platform.machine()}",
        "answer": answer,
        "rows": rows,
    }


def profile(args: argparse.Namespace) -> None:
    """--profile: ``--rounds`` filter and prioritize requests over every node (the same pod each
    time, after 5 unmeasured ones), each verb under cProfile, by own time."""
    import cProfile
    import pstats

    view = from_documents(cluster(args.nodes, args.pods, random.Random(7)), source="bench")
    client = create_app(Settings(), cluster=StaticCluster(view)).test_client()
    gc.freeze()
    body = orjson.dumps({"Pod": preemptor("2"), "Nodes": None, "NodeNames": sorted(view.nodes)})
    for path in ("/filter", "/prioritize"):
        timed(client, path, body, 5)
        prof = cProfile.Profile()
        prof.enable()
        samples = timed(client, path, body, args.rounds)
        prof.disable()
        print(f"== {path}, {len(view.nodes)} names, {args.rounds} requests, p50 {stats(samples)['p50']:.2f} ms profiled")
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def _repeat(work, rounds: int) -> list[float]:
    samples = []
    clock = CLOCK
    for _ in range(rounds):
        started = clock()
        work()
        samples.append((clock() - started) * 1000)
    return samples


def _reassessed(view, rules, rounds: int) -> list[float] | None:
    """Standings over two views of the live store, 10 pods apart (None: this tree has no change log)."""
    import dataclasses

    from extender.live.store import Store
    from extender.state.standings import Standings

    if not hasattr(tenancy, "reassess"):
        return None
    store = Store(("priorityclasses", "nodes", "poddisruptionbudgets", "pods"))
    store.replace("priorityclasses", {}, "1")
    store.replace("nodes", {n: info.node for n, info in view.nodes.items()}, "1")
    store.replace("poddisruptionbudgets", {b.key: b for bs in view.budgets.values() for b in bs}, "1")
    store.replace("pods", dict(view.pods), "1")
    before = store.build_view()[2]
    pods = list(view.pods.values())
    for i, pod in enumerate(pods[:10]):  # 5 deleted, 5 moved to another node
        gone = i % 2 == 0
        store.apply("pods", pod.uid, None if gone else dataclasses.replace(pod, node_name=pods[-1 - i].node_name), "2")
    after = store.build_view()[2]
    standings = Standings(rules)
    first = standings.of(before)
    changed = after.changes.since(before.revision)
    return _repeat(lambda: tenancy.reassess(first, before, after, *changed), rounds)


def _child(tree: Path, args: argparse.Namespace) -> dict:
    env = {**os.environ, "REPRIEVE_TREE": str(tree), "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, str(HERE), "--json", "--nodes", str(args.nodes), "--pods", str(args.pods),
           "--candidates", str(args.candidates), "--rounds", str(args.rounds), "--waiting", str(args.waiting)]
    if not args.freeze:
        cmd.append("--no-freeze")
    if args.cpu:
        cmd.append("--cpu")
    result = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        sys.stderr.write(result.stderr[-4000:])
        raise SystemExit(f"measurement failed in {tree}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--waiting", type=int, default=0, help="pending pods nominated nowhere besides (the pending pods' queue)")
    parser.add_argument("--freeze", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--baseline", help="git revision to compare against (run from its `git archive`)")
    parser.add_argument("--cpu", action="store_true",
                        help="time each request in this process's CPU time instead of elapsed time")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true",
                        help="cProfile of filter and prioritize over every node (the working tree), instead of the table")
    args = parser.parse_args()
    if args.cpu:
        global CLOCK
        CLOCK = time.process_time
    if args.json:
        print(json.dumps(measure(args)))
        return
    if args.profile:
        return profile(args)
    if not args.baseline:
        after = measure(args)
        print(after["setup"])
        _answer(after)
        print("| request | p50 ms | p99 ms | floor p50 ms | p50 / floor |")
        print("|---|---:|---:|---:|---:|")
        for label, row in after["rows"].items():
            print(f"| {label} | {row['p50']:.2f} | {row['p99']:.2f} | {_floor(row)} |")
        _collector(after)
        return
    root = HERE.parent.parent
    tmp = Path(tempfile.mkdtemp(prefix="reprieve-baseline-"))
    rev = subprocess.run(["git", "rev-parse", "--short", args.baseline], cwd=root, check=True, capture_output=True, text=True).stdout.strip()
    archive = subprocess.run(["git", "archive", args.baseline], cwd=root, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
    # The baseline runs this very script (its own bench may not know every option).
    before = _child(tmp, args)
    after = _child(root, args)
    print(after["setup"] + ("; CPU time" if args.cpu else ""))
    print(f"before: {args.baseline} ({rev}); after: the working tree; one process each, before first")
    _answer(after, before)
    print("| request | before p50 | before p99 | after p50 | after p99 | after / before p99 | floor p50 | after p50 / floor |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, row in after["rows"].items():
        old = before["rows"].get(label)
        if label == "assess queues, updated after 10 pod changes":
            old = before["rows"].get("assess queues, from scratch")  # what the baseline pays per view
        was = f"{old['p50']:.2f} | {old['p99']:.2f}" if old else "- | -"
        ratio = f"{row['p99'] / old['p99']:.2f}" if old else "-"
        print(f"| {label} | {was} | {row['p50']:.2f} | {row['p99']:.2f} | {ratio} | {_floor(row)} |")
    _collector(after, before)


def _collector(after: dict, before: dict | None = None) -> None:
    """The collector's passes in each preempt row's timed requests and between them."""
    print("\ncollector | full collections in the requests, ms of all collections in them | the same between requests")
    for label, row in after["rows"].items():
        for tree, rows in (("before", before["rows"] if before else None), ("after", after["rows"])):
            seen = rows and rows.get(label, {}).get("collector")
            if seen and label.startswith("preempt"):
                (full, ms), (full_b, ms_b) = seen["inside"], seen["between"]
                print(f"{label}, {tree} | {full}, {ms:.1f} ms | {full_b}, {ms_b:.1f} ms")


def _answer(after: dict, before: dict | None = None) -> None:
    answer = after["answer"]
    victims = sum(len(v["Pods"]) for v in answer.values())
    same = "" if before is None else (", the same answer as before" if before["answer"] == answer else ", ANSWER DIFFERS FROM BEFORE")
    print(f"preempt -> {len(answer)} node(s) offered, {victims} victim(s){same}\n")


def _floor(row: dict) -> str:
    if "floor" not in row:
        return "| "
    return f"{row['floor']['p50']:.3f} | {row['p50'] / row['floor']['p50']:.0f}x"


if __name__ == "__main__":
    main()
