"""What the serving stack costs per call: CPU of a served do-nothing extender and of reprieve (issue 20).

    python bench/serving.py [--calls 3000] [--baseline REV]

One keep-alive client (as kube-scheduler's) sends the scheduler's captured requests
(tests/golden/<verb>-cache-scheduler/request.json) to ``bench/noop_extender.py`` (the do-nothing
extender on reprieve's stack) and to ``reprieve serve`` on the captured cluster
(tests/golden/filter-cache-scheduler/snapshot.yaml), and reads each server's CPU time
(utime+stime from /proc/PID/stat) over ``--calls`` calls per verb, after 200 unmeasured ones.
With ``--baseline REV`` the same is measured first in that revision (its ``git archive``), side
by side in one run. Results: docs/serving.md ("What the stack costs per call").
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
VERBS = ("filter", "prioritize", "preempt")
WARM_UP = 200


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve(tree: Path, command: list[str], port: int, calls: int) -> dict[str, float]:
    """ms of the server's CPU per call, by verb."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    server = subprocess.Popen([sys.executable, *command, "--bind", f"127.0.0.1:{port}"], cwd=tree, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = _connected(port)
        out = {}
        for verb in VERBS:
            body = (GOLDEN / f"{verb}-cache-scheduler" / "request.json").read_bytes()
            for _ in range(WARM_UP):
                _call(client, verb, body)
            before = cpu_seconds(server.pid)
            for _ in range(calls):
                _call(client, verb, body)
            out[verb] = (cpu_seconds(server.pid) - before) / calls * 1000
        return out
    finally:
        server.terminate()
        server.wait(timeout=30)


def _connected(port: int) -> http.client.HTTPConnection:
    deadline = time.monotonic() + 60
    while True:
        try:
            client = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            client.request("GET", "/healthz")
            client.getresponse().read()
            return client
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _call(client: http.client.HTTPConnection, verb: str, body: bytes) -> None:
    client.request("POST", f"/{verb}", body, {"Content-Type": "application/json"})
    response = client.getresponse()
    response.read()
    if response.status != 200:
        raise SystemExit(f"{verb}: HTTP {response.status}")


def measure(tree: Path, calls: int) -> dict[str, dict[str, float]]:
    snapshot = GOLDEN / "filter-cache-scheduler" / "snapshot.yaml"
    return {
        "do-nothing extender": serve(tree, ["bench/noop_extender.py"], 18971, calls),
        "reprieve": serve(tree, ["-m", "extender.cli", "serve", "--snapshot", str(snapshot), "--log-level", "WARNING"], 18972, calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--baseline", help="git revision to measure first, side by side")
    args = parser.parse_args()
    runs = []
    if args.baseline:
        tmp = Path(tempfile.mkdtemp(prefix="reprieve-serving-"))
        archive = subprocess.run(["git", "archive", args.baseline], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        try:
            runs.append((f"{args.baseline}", measure(tmp, args.calls)))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    runs.append(("working tree", measure(ROOT, args.calls)))
    print(f"bench/serving.py --calls {args.calls}{f' --baseline {args.baseline}' if args.baseline else ''}: "
          f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}")
    print("| tree | server | " + " | ".join(f"{v} ms CPU/call" for v in VERBS) + " |")
    print("|---|---|" + "---:|" * len(VERBS))
    for tree, servers in runs:
        for server, costs in servers.items():
            print(f"| {tree} | {server} | " + " | ".join(f"{costs[v]:.3f}" for v in VERBS) + " |")


if __name__ == "__main__":
    main()
