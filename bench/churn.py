"""Preemption under churn through a real kube-scheduler, reprieve's and stock side by side (issue 31).

    python bench/churn.py [--minutes 5] [--nodes 20]

Starts the end-to-end control plane (tests/e2e/controlplane.py: reprieve on 127.0.0.1:8888
without a policy, ``reprieve-scheduler`` with the shipped extender stanza and stock
``default-scheduler``, a fake kubelet), then runs the same churn through both schedulers at the
same time, each in a namespace and on nodes of its own, so that both see the same machine:

- ``--nodes`` nodes of 4 cpu;
- three low-priority (0) 1-cpu pods a second, each deleted ``LOW_LIFETIME`` seconds after it
  was created, bound or not: more than the nodes hold, so the nodes stay full and some
  low-priority pods wait;
- once the nodes have filled (``LOW_LIFETIME`` seconds in), for ``--minutes``, a high-priority
  (1000) 2-cpu pod every 4 seconds, deleted ``HIGH_LIFETIME`` seconds after it was bound; with
  the nodes full it has to preempt.

Every pod of a namespace goes through the scheduler under test. Measured per high-priority pod:
seconds from just before its create call until a pod watch saw it bound (``spec.nodeName``);
from the scheduler's log, how many of them preempted (``"the target node for the preemption is
determined"``), the victims it deleted, and any ``claims to preempt`` (an answer it dropped).
Reports p50, p90 and max per scheduler, for every high-priority pod and for those that
preempted, and reprieve's CPU over the run. Stops the control plane when done, also on error.

Needs the toolchain (built on first use, ~6 min cold) and port 8888 free.
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import itertools
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# reprieve runs as `python -m extender.cli` in a child process: make it this tree's too.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)

from bench.e2e import cpu_seconds  # noqa: E402
from extender.apiserver import ApiError  # noqa: E402
from tests.e2e.burst import CLAIMS, DELETION_LINE, PREEMPTION_LINE, PREEMPTOR, SCHEDULER_LOGS, BindWatch, named_in, read_log  # noqa: E402
from tests.e2e.client import Kube  # noqa: E402
from tests.e2e.controlplane import ControlPlane, StartupError, build_toolchain, machine  # noqa: E402
from tests.e2e.scenario import REPRIEVE, STOCK, Scenario  # noqa: E402

LABELS = {STOCK: "stock", REPRIEVE: "reprieve"}
NODE_CPU = "4"
LOW_RATE = 3.0  # low-priority pods a second
LOW_LIFETIME = 40.0  # seconds from a low-priority pod's creation to its deletion
HIGH_EVERY = 4.0  # seconds between high-priority pods
HIGH_LIFETIME = 20.0  # seconds from a high-priority pod's bind to its deletion
LOW = {"e2e/role": "churn"}


@dataclass
class Churn:
    scheduler: str
    to_bind: dict[str, float]  # high-priority pod -> seconds from create to bound
    unbound: list[str]
    preempted: set[str]  # high-priority pods the scheduler preempted for
    preemptions: int
    deletions: int
    claims: int
    low_created: int

    def row(self) -> str:
        def stats(values: list[float]) -> str:
            if not values:
                return "-"
            deciles = statistics.quantiles(values, n=10, method="inclusive") if len(values) > 1 else values * 9
            return f"{statistics.median(values):.2f} / {deciles[8]:.2f} / {max(values):.2f}"

        return (
            f"| {LABELS[self.scheduler]} | {len(self.to_bind)} of {len(self.to_bind) + len(self.unbound)} | "
            f"{stats(list(self.to_bind.values()))} | {len(self.preempted)} | "
            f"{stats([s for p, s in self.to_bind.items() if p in self.preempted])} | "
            f"{self.preemptions} | {self.deletions} | {self.claims} | {self.low_created} |"
        )


def churn(scenario: Scenario, scheduler: str, nodes: int, minutes: float, start_at: float, stop: threading.Event) -> Churn:
    """Run the churn in ``scenario`` through ``scheduler`` from ``start_at`` (monotonic) and
    measure it; ``stop`` ends it early (an error on the other side, ^C)."""
    kube = Kube.pooled(str(scenario.plane.kubeconfig), 10)
    for i in range(nodes):
        scenario.node(f"n{i:02d}", cpu=NODE_CPU)
    log = scenario.plane.work / f"{SCHEDULER_LOGS[scheduler]}.log"
    mark = log.stat().st_size
    high_count = int(60 * minutes / HIGH_EVERY)
    low_count = int(LOW_RATE * (LOW_LIFETIME + 60 * minutes))
    watch = BindWatch(kube, scenario.ns, expected=high_count)
    watch.start()
    try:
        if time.monotonic() > start_at:
            print(f"  {LABELS[scheduler]}: set up {time.monotonic() - start_at:.1f} s late; its first pods go at once", file=sys.stderr)
        created = _drive(scenario, kube, scheduler, watch, start_at, low_count, high_count, stop)
    except BaseException:
        stop.set()  # the other side stops too
        raise
    finally:
        watch.stop()
    bound = watch.bound_at()
    lines = read_log(log, mark).splitlines()
    highs = [f"high-{k:03d}" for k in range(high_count)]
    to_bind = {p: bound[p] - created[p] for p in highs if p in bound and p in created}
    preemptors = named_in(lines, scenario.ns, "pod", PREEMPTION_LINE)
    return Churn(
        scheduler=scheduler,
        to_bind=to_bind,
        unbound=[p for p in highs if p not in to_bind],
        preempted=set(preemptors),
        preemptions=len(preemptors),
        deletions=len(named_in(lines, scenario.ns, "victim", DELETION_LINE)),
        claims=sum(1 for line in lines if CLAIMS in line),
        low_created=low_count,
    )


def _drive(
    scenario: Scenario, kube: Kube, scheduler: str, watch: BindWatch, start_at: float, low_count: int, high_count: int,
    stop: threading.Event,
) -> dict[str, float]:
    """Create and delete the pods on schedule; returns each pod's monotonic time just before
    its create call. Raises the first failed API call's error as soon as it is seen."""
    low_spec = scenario.pod_spec(cpu="1", priority=0, scheduler=scheduler, grace=1)
    high_spec = scenario.pod_spec(cpu="2", priority=1000, scheduler=scheduler, grace=1)
    path = kube.collection("Pod", scenario.ns)
    order = itertools.count()
    events: list[tuple[float, int, str, str]] = [  # (when, order, what, name), a heap
        *((start_at + k / LOW_RATE, next(order), "create-low", f"low-{k:04d}") for k in range(low_count)),
        *((start_at + LOW_LIFETIME + k * HIGH_EVERY, next(order), "create-high", f"high-{k:03d}") for k in range(high_count)),
    ]
    heapq.heapify(events)
    created: dict[str, float] = {}
    leaving: set[str] = set()  # high-priority pods whose deletion is scheduled

    def create(name: str, labels: dict, spec: dict) -> None:
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": scenario.ns, "labels": labels}, "spec": spec}
        created[name] = time.monotonic()
        kube.request("POST", path, body)

    def delete(name: str) -> None:
        try:
            kube.request("DELETE", f"{path}/{name}")
        except ApiError as exc:
            if exc.status != 404:  # already gone: preempted, its grace over
                raise

    with ThreadPoolExecutor(8) as pool:
        calls: list[Future] = []
        while events:
            when, _, what, name = heapq.heappop(events)
            if stop.wait(max(0.0, when - time.monotonic())):
                raise RuntimeError("stopped")
            if what == "create-low":
                calls.append(pool.submit(create, name, LOW, low_spec))
                heapq.heappush(events, (when + LOW_LIFETIME, next(order), "delete", name))
            elif what == "create-high":
                calls.append(pool.submit(create, name, PREEMPTOR, high_spec))
            else:
                calls.append(pool.submit(delete, name))
            for pod, bound in watch.bound_at().items():  # high-priority pods leave HIGH_LIFETIME after their bind
                if pod not in leaving:
                    leaving.add(pod)
                    heapq.heappush(events, (bound + HIGH_LIFETIME, next(order), "delete", pod))
            calls = _unfinished(calls)
        # The last high-priority pods get HIGH_LIFETIME to bind.
        deadline = time.monotonic() + HIGH_LIFETIME
        while not watch.all_bound.is_set() and time.monotonic() < deadline:
            if stop.wait(0.2):
                raise RuntimeError("stopped")
        _unfinished(calls, wait=True)
    return dict(created)


def _unfinished(calls: list[Future], *, wait: bool = False) -> list[Future]:
    """The calls not yet done (all of them done first, with ``wait``); raises a done one's error."""
    for call in calls:
        if wait or call.done():
            call.result()
    return [c for c in calls if not c.done()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=5, help="how long high-priority pods arrive, once the nodes are full")
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="run the control plane in this directory and keep it (its logs) afterwards")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.nodes < 1:
        parser.error("--minutes must be positive and --nodes at least 1")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    try:
        with contextlib.nullcontext(args.keep) if args.keep else tempfile.TemporaryDirectory(prefix="reprieve-bench-churn-") as work:
            Path(work).mkdir(parents=True, exist_ok=True)
            plane = ControlPlane(Path(work), build_toolchain()).start()
            try:
                processes = ("reprieve", *SCHEDULER_LOGS.values())
                before = {name: cpu_seconds(plane.procs[name].pid) for name in processes}
                results = run(plane, args.nodes, args.minutes)
                cpu = {name: cpu_seconds(plane.procs[name].pid) - before[name] for name in processes}
            finally:
                plane.stop()
    except StartupError as exc:
        print(f"bench/churn.py: the control plane could not start: {exc}", file=sys.stderr)
        return 1
    print(f"bench/churn.py --minutes {args.minutes:g} --nodes {args.nodes}")
    print(machine(started) + "\n")
    print("| scheduler | high-priority pods bound | seconds create to bind (p50 / p90 / max) | of them preempted | the same, those that preempted | preemptions | victims deleted | 'claims to preempt' | low-priority pods |")
    print("|---|---|---|---|---|---|---|---|---|")
    for result in results:
        print(result.row())
    print("\nCPU seconds over the run (both churns at once; reprieve watches both namespaces): "
          + ", ".join(f"{name} {seconds:.1f}" for name, seconds in cpu.items()) + ".")
    return 0


def run(plane: ControlPlane, nodes: int, minutes: float) -> list[Churn]:
    scenarios = {s: Scenario(plane, f"churn-{LABELS[s]}-{uuid.uuid4().hex[:6]}") for s in (STOCK, REPRIEVE)}
    stop = threading.Event()
    try:
        start_at = time.monotonic() + 5  # both sides' nodes made and watches open by then
        with ThreadPoolExecutor(2) as pool:
            futures = [pool.submit(churn, sc, s, nodes, minutes, start_at, stop) for s, sc in scenarios.items()]
            try:
                return [f.result() for f in futures]
            finally:
                stop.set()  # on ^C (an error on either side sets it itself)
    finally:
        for sc in scenarios.values():
            sc.cleanup()


if __name__ == "__main__":
    sys.exit(main())
