"""Resident memory of a served reprieve after 1,000 and after 100,000 varied requests.

    python bench/memory.py [--requests 100000] [--baseline REV]

Starts `reprieve serve --snapshot examples/cluster.yaml` on a loopback port and sends
requests that never repeat: every pod has its own name, namespace (one of 5,000), UID, label
set and quantities, every request names a node the view does not know, preempt proposes
victims by unknown UIDs; the three verbs in turn, in both nodeCacheCapable modes. Prints the
worker process's RSS (VmRSS) at checkpoints, side by side for each tree. With ``--baseline REV``
the same run is first made against ``git archive REV``, so the two columns come from one
session on one machine.
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
from tests.ports import free_port  # noqa: E402

CHECKPOINTS = (1_000, 10_000, 50_000, 100_000)


def body(i: int) -> tuple[str, bytes]:
    """The i-th request: verb and body, unlike any other."""
    pod = {
        "metadata": {
            "name": f"pod-{i}",
            "namespace": f"ns-{i % 5000}",
            "uid": f"uid-{i:08d}",
            "labels": {"app": f"app-{i}", "pod-template-hash": f"{i * 2654435761 % 16**10:010x}", "tier": "web"},
        },
        "spec": {
            "priority": i % 10_000,
            "containers": [{"name": "main", "resources": {"requests": {"cpu": f"{i % 4000 + 1}m", "memory": f"{i % 100_000 + 1}Ki"}}}],
        },
        "status": {"phase": "Pending"},
    }
    names = ["node-a", "node-b", f"gone-{i}"]
    verb, cache = ("filter", "prioritize", "preempt")[i % 3], i % 6 < 3
    if verb == "preempt":
        victims = {n: {"Pods": [{"UID": f"victim-{i}-{n}"}], "NumPDBViolations": 0} for n in names}
        if cache:
            return verb, orjson.dumps({"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": victims})
        full = {n: {"Pods": [{"metadata": {"uid": p["UID"]}} for p in v["Pods"]], "NumPDBViolations": 0} for n, v in victims.items()}
        return verb, orjson.dumps({"Pod": pod, "NodeNameToVictims": full, "NodeNameToMetaVictims": None})
    if cache:
        return verb, orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names})
    items = [{"metadata": {"name": n, "labels": {"zone": f"z-{i}"}}, "status": {"allocatable": {"cpu": "4"}}} for n in names]
    return verb, orjson.dumps({"Pod": pod, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None})


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def worker_of(server: int) -> int:
    """The process that answers, once the server is ready: the server itself (one process since
    9f459f4), or gunicorn's one worker, the master's child, in a baseline from before it."""
    children = Path(f"/proc/{server}/task/{server}/children").read_text().split()
    return int(children[0]) if children else server


def run(tree: Path, requests: int) -> dict[int, float]:
    """RSS of the worker serving from ``tree`` after 0 requests and at each checkpoint."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    server = subprocess.Popen(
        [sys.executable, "-m", "extender.cli", "serve", "--snapshot", str(tree / "examples" / "cluster.yaml"),
         "--bind", f"127.0.0.1:{port}", "--log-level", "WARNING"],
        cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        deadline = time.monotonic() + 30
        while True:
            try:
                conn.request("GET", "/readyz")
                ready = conn.getresponse()
                ready.read()
                if ready.status == 200:
                    break
            except OSError:
                conn.close()
            if time.monotonic() > deadline:
                raise SystemExit(f"reprieve from {tree} did not become ready")
            time.sleep(0.2)
        worker = worker_of(server.pid)
        seen = {0: rss_mib(worker)}
        for i in range(1, requests + 1):
            verb, data = body(i)
            conn.request("POST", f"/{verb}", body=data, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                raise SystemExit(f"{verb} #{i} got HTTP {response.status} from {tree}")
            if i in CHECKPOINTS or i == requests:
                seen[i] = rss_mib(worker)
                print(f"  {tree.name or tree}: {i:,} requests, RSS {seen[i]:.1f} MiB", file=sys.stderr)
        conn.close()
        return seen
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--baseline", help="git revision to compare against (run from its `git archive`)")
    args = parser.parse_args()

    trees: list[tuple[str, Path]] = []
    tmp = None
    if args.baseline:
        rev = subprocess.run(["git", "rev-parse", "--short", args.baseline], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
        tmp = Path(tempfile.mkdtemp(prefix="reprieve-baseline-"))
        archive = subprocess.run(["git", "archive", args.baseline], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        trees.append((f"before ({rev})", tmp))
    trees.append(("after (working tree)" if args.baseline else "working tree", ROOT))
    try:
        results = {label: run(tree, args.requests) for label, tree in trees}
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)

    labels = [label for label, _ in trees]
    print(f"RSS of the reprieve worker, MiB; {args.requests:,} varied requests (filter, prioritize, preempt; both "
          f"nodeCacheCapable modes); Python {platform.python_version()}, {os.cpu_count()} cores\n")
    print("| requests | " + " | ".join(labels) + " |")
    print("|---:|" + "---:|" * len(labels))
    points = sorted({p for seen in results.values() for p in seen})
    for point in points:
        print(f"| {point:,} | " + " | ".join(f"{results[label].get(point, float('nan')):.1f}" for label in labels) + " |")
    first, last = min(p for p in points if p > 0), max(points)
    print(f"| growth {first:,} -> {last:,} | " + " | ".join(f"{results[l][last] - results[l][first]:+.1f}" for l in labels) + " |")
    print(f"| ratio {last:,} / {first:,} | " + " | ".join(f"{results[l][last] / results[l][first]:.2f}x" for l in labels) + " |")


if __name__ == "__main__":
    main()
