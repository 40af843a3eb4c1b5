"""Bursts of preemptions through a real kube-scheduler, reprieve's and stock side by side (issue 9).

    python bench/burst.py [--shapes 20x50,5x10] [--repetitions 3] [--noop]

Starts the end-to-end control plane (tests/e2e/controlplane.py: etcd, kube-apiserver,
kube-controller-manager, reprieve on 127.0.0.1:8888 without a policy, ``reprieve-scheduler``
with the shipped extender stanza and stock ``default-scheduler``, both at client qps/burst 1000,
a fake kubelet), then runs each shape through stock and reprieve, interleaved (in an order
rotated by one each repetition), each burst in a namespace and on nodes of its own. A shape ``NxM`` is N nodes of 32 cpu, each full of four 8-cpu priority-0 pods, and M
priority-1000 8-cpu preemptors created together, each needing exactly one victim; what is
counted and how is in tests/e2e/burst.py; beside it, each burst's seconds the scheduler spent in
its scheduling algorithm (TIMED: filter, score and PostFilter, the extender's verbs included)
and its cycles, and of them in PostFilter (preemption, the extender's preempt included), read
from its /metrics before and after. Prints a Markdown table and the ratio of reprieve's median
time to stock's, per shape.

``--noop`` adds a third kube-scheduler with the shipped stanza pointed at the do-nothing
extender (bench/noop_extender.py: filter passes every node, preempt answers the scheduler's own
proposal), the floor of any Python extender on the same wave, and its ratio to stock (use a
multiple of 3 repetitions for each to run in each place equally). Its idle scheduler and
extender share the machine: times with and without ``--noop`` are not comparable.

Stops the control plane when done, also on error or ^C.

Needs the toolchain (built on first use, ~6 min cold) and port 8888 free.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# reprieve runs as `python -m extender.cli` in a child process: make it this tree's too.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)

from tests.e2e.burst import SHAPES, Result, Shape, burst, spread  # noqa: E402
from tests.e2e.controlplane import ControlPlane, StartupError, build_toolchain, machine  # noqa: E402
from tests.e2e.scenario import REPRIEVE, STOCK, Scenario  # noqa: E402
from tests.ports import free_port  # noqa: E402

NOOP = "noop-scheduler"  # --noop's scheduler, its process and its schedulerName
LABELS = {STOCK: "stock", REPRIEVE: "reprieve", NOOP: "do-nothing extender"}


def shape_of(key: str) -> Shape:
    """A shape by its ``NxM`` key: the end-to-end tests' own where it is one of them."""
    return SHAPES.get(key) or Shape(*(int(n) for n in key.split("x")))


SCHEDULER_PORTS = {STOCK: "sched-stock", REPRIEVE: "sched-reprieve"}  # controlplane's ports
# The scheduler's own time, from its /metrics: its scheduling algorithm (schedule_one.go's
# schedulingAlgorithm in v1.37: the snapshot's update, filter, score and PostFilter, extender
# calls included) and its cycles, and of it PostFilter (preemption, the extender's preempt call
# included); seconds and cycles summed over the burst.
TIMED = {
    "algorithm": ("scheduler_scheduling_algorithm_duration_seconds_sum", ""),
    "cycles": ("scheduler_scheduling_algorithm_duration_seconds_count", ""),
    "postfilter": ("scheduler_framework_extension_point_duration_seconds_sum", 'extension_point="PostFilter"'),
}


def sums(metrics: str) -> dict[str, float]:
    """TIMED's samples in a /metrics text, each summed over its other labels."""
    lines = [line for line in metrics.splitlines() if not line.startswith("#")]
    return {
        key: sum(float(line.rpartition(" ")[2]) for line in lines if line.startswith(name) and label in line)
        for key, (name, label) in TIMED.items()
    }


def scheduler_seconds(plane: ControlPlane, port: int) -> dict[str, float]:
    """TIMED's sums now, from the scheduler serving its /metrics on ``port``."""
    return sums(plane.metrics(port))


def start_noop(plane: ControlPlane) -> int:
    """The do-nothing extender and NOOP's scheduler; the scheduler's /metrics port."""
    extender = free_port()
    port = free_port()
    while port == extender:
        port = free_port()
    plane.start_extender("noop-extender", [sys.executable, str(ROOT / "bench" / "noop_extender.py")], extender)
    plane.start_scheduler(NOOP, plane.scheduler_config(NOOP, extender), port)
    return port


Runs = dict[tuple[str, str], list[Result]]
Spent = dict[tuple[str, str], list[dict[str, float]]]


def run(shapes: list[str], repetitions: int, timeout: float, noop: bool = False) -> tuple[Runs, Spent]:
    """Each shape through each scheduler (``noop``: NOOP's too), ``repetitions`` times, in an
    order rotated by one each repetition: the results, and the scheduler's own seconds in each
    burst (TIMED)."""
    results: Runs = {}
    spent: Spent = {}
    with tempfile.TemporaryDirectory(prefix="reprieve-bench-burst-") as work:
        plane = ControlPlane(Path(work), build_toolchain()).start()
        try:
            metrics = {s: plane.ports[p] for s, p in SCHEDULER_PORTS.items()}
            if noop:
                metrics[NOOP] = start_noop(plane)
            schedulers = list(metrics)
            for rep in range(repetitions):
                for key in shapes:
                    order = schedulers[rep % len(schedulers):] + schedulers[:rep % len(schedulers)]
                    for scheduler in order:
                        scenario = Scenario(plane, f"burst-{uuid.uuid4().hex[:8]}")
                        log = NOOP if scheduler == NOOP else None
                        try:
                            before = scheduler_seconds(plane, metrics[scheduler])
                            result = burst(scenario, shape_of(key), scheduler, log=log, timeout=timeout)
                        finally:
                            scenario.cleanup()
                        after = scheduler_seconds(plane, metrics[scheduler])
                        spent.setdefault((key, scheduler), []).append({k: after[k] - before[k] for k in TIMED})
                        results.setdefault((key, scheduler), []).append(result)
                        print(f"  [{rep + 1}/{repetitions}] {result.summary()}; scheduler's seconds {spent[key, scheduler][-1]}", file=sys.stderr, flush=True)
        finally:
            plane.stop()
    return results, spent


def table(results: Runs, spent: Spent, shapes: list[str]) -> str:
    rows = [
        "| shape | scheduler | seconds to bind all (min / median / max) | preemptions | deletions | distinct victims | named again | preempted again | 'claims to preempt' lines | still pending | scheduler's seconds: algorithm (in cycles), of it PostFilter |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratios = []
    for key in shapes:
        medians = {}
        for scheduler in LABELS:
            runs = results.get((key, scheduler), [])
            if not runs:
                continue
            times = [r.seconds for r in runs if r.seconds is not None]
            timed_out = len(runs) - len(times)
            seconds = spread(times) + (f" ({timed_out} timed out)" if timed_out else "")
            if times and not timed_out:
                medians[scheduler] = statistics.median(times)

            def each(attr):
                return ", ".join(str(len(v) if isinstance(v, list) else v) for v in (getattr(r, attr) for r in runs))

            rows.append(
                f"| {shape_of(key).name} | {LABELS[scheduler]} | {seconds} | {each('preemptions')} | {each('deletions')} "
                f"| {each('distinct_victims')} | {each('named_again')} | {each('preempted_again')} | {each('claims')} | {each('pending')} "
                f"| {'; '.join(_spent(t) for t in spent.get((key, scheduler), []))} |"
            )
        for scheduler in (REPRIEVE, NOOP):
            if (key, scheduler) not in results:
                continue
            if scheduler in medians and STOCK in medians:
                ratio = f"{medians[scheduler] / medians[STOCK]:.2f}"
            else:
                ratio = "none (a run timed out)"
            ratios.append(f"{shape_of(key).name}: {LABELS[scheduler]} / stock median time = {ratio}")
    return "\n".join(rows) + "\n\nCounts are per run, in run order. " + "; ".join(ratios) + "."


def _spent(seconds: dict[str, float]) -> str:
    return f"{seconds['algorithm']:.2f} in {seconds['cycles']:.0f} cycles, {seconds['postfilter']:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--shapes", default=",".join(SHAPES),
        help=f"comma-separated NxM (N full nodes, M preemptors), e.g. {', '.join(SHAPES)}, or 125x500 (issue 31's wave)",
    )
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=60, help="seconds a burst may take before it gives up")
    parser.add_argument("--noop", action="store_true", help="also through a scheduler whose extender does nothing")
    args = parser.parse_args(argv)
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = [s for s in shapes if not re.fullmatch(r"[1-9][0-9]*x[1-9][0-9]*", s)]
    if unknown or args.repetitions < 1:
        parser.error(f"unknown shape(s) {unknown}" if unknown else "--repetitions must be at least 1")
    # SIGTERM unwinds like ^C, so the control plane's processes (sessions of their own) are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    try:
        results, spent = run(shapes, args.repetitions, args.timeout, args.noop)
    except StartupError as exc:
        print(f"bench/burst.py: the control plane could not start: {exc}", file=sys.stderr)
        return 1
    print(f"bench/burst.py --shapes {','.join(shapes)} --repetitions {args.repetitions}{' --noop' if args.noop else ''}")
    print(machine(started) + "\n")
    print(table(results, spent, shapes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
