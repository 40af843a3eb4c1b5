"""Latency of normal requests to a real `reprieve serve` while slow clients hang on.

    python bench/slow_clients.py [--seconds 10] [--rounds 2] [--slow 50] [--baseline DIR]

Serves examples/cluster.yaml on loopback and sends the example filter, prioritize and preempt
requests in turn, one every 20 ms, for ``--seconds`` per phase: first with no slow client, then
with ``--slow`` connections held open (half send their head a byte a second, half stall
mid-body; one the server closes is opened again at once, tests/slow.py), alternating for
``--rounds``. Each request is timed twice over: on a kept-alive connection (as kube-scheduler
sends them) and on a new connection. A request unanswered after 5 s counts as lost. With
``--baseline DIR``, the same run against the reprieve checked out in DIR (its own .venv),
e.g. a worktree of the commit before. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ports import free_port  # noqa: E402
from tests.slow import SlowClients  # noqa: E402

VERBS = ("filter", "prioritize", "preempt")
BODIES = {verb: (ROOT / "examples" / "requests" / f"{verb}.json").read_bytes() for verb in VERBS}
TIMEOUT = 5.0


def start(root: Path, python: str, log: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(root))
    command = [python, "-m", "extender.cli", "serve", "--snapshot", str(ROOT / "examples" / "cluster.yaml"), "--bind", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(command, cwd=root, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return proc, port
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"reprieve from {root} did not become ready:\n{log.read_text()[-2000:]}")


def timed(connection: http.client.HTTPConnection, verb: str) -> float | None:
    started = time.perf_counter()
    try:
        connection.request("POST", f"/{verb}", BODIES[verb], {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"{verb}: HTTP {response.status}")
    except (OSError, http.client.HTTPException):
        connection.close()
        return None
    return time.perf_counter() - started


def phase(port: int, seconds: float) -> dict[str, list[float | None]]:
    kept = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    samples: dict[str, list[float | None]] = {"kept-alive": [], "new connection": []}
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        verb = VERBS[i % 3]
        samples["kept-alive"].append(timed(kept, verb))
        fresh = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
        samples["new connection"].append(timed(fresh, verb))
        fresh.close()
        i += 1
        time.sleep(0.02)
    kept.close()
    return samples


def measure(name: str, root: Path, python: str, *, slow: int, seconds: float, rounds: int, work: Path) -> list[dict]:
    proc, port = start(root, python, work / f"{name}.log")
    results: dict[tuple[int, str], list[float | None]] = {}
    try:
        phase(port, 1.0)  # warm up
        for _ in range(rounds):
            for count in (0, slow):
                with SlowClients(port, count, reconnect=True):
                    for how, values in phase(port, seconds).items():
                        results.setdefault((count, how), []).extend(values)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    rows = []
    for (count, how), values in results.items():
        answered = sorted(v for v in values if v is not None)
        q = statistics.quantiles(answered, n=100) if len(answered) >= 2 else [float("nan")] * 99
        rows.append(
            {"server": name, "slow": count, "how": how, "sent": len(values), "answered": len(answered),
             "p50": q[49] * 1000, "p99": q[98] * 1000, "max": (answered[-1] * 1000) if answered else float("nan")}
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--slow", type=int, default=50)
    parser.add_argument("--baseline", type=Path, help="another reprieve checkout (with its .venv) to measure beside this one")
    args = parser.parse_args()
    servers = [("this tree", ROOT, sys.executable)]
    if args.baseline:
        servers.insert(0, ("baseline", args.baseline.resolve(), str(args.baseline.resolve() / ".venv" / "bin" / "python")))
    with tempfile.TemporaryDirectory(prefix="reprieve-bench-slow-") as work:
        rows = [row for name, root, python in servers for row in measure(name, root, python, slow=args.slow, seconds=args.seconds, rounds=args.rounds, work=Path(work))]
    base = {(r["server"], r["how"]): r["p99"] for r in rows if r["slow"] == 0}
    print(f"{platform.node()}: {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"{args.rounds} x {args.seconds:.0f} s per phase, a request every 20 ms\n")
    print("| server | slow connections | connection | answered | p50 ms | p99 ms | max ms | p99 / p99 with 0 slow |")
    print("|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (r["server"] != "baseline", r["how"], r["slow"])):
        ratio = r["p99"] / base[(r["server"], r["how"])]
        print(f"| {r['server']} | {r['slow']} | {r['how']} | {r['answered']} of {r['sent']} | {r['p50']:.2f} | {r['p99']:.2f} | {r['max']:.1f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
