"""Faults in the middle of a wave of preemptions, through the real kube-scheduler, reprieve beside
stock (issue 27): the table of docs/reliability.md.

    python bench/faults.py [--repetitions 2] [--faults kill,stop,...] [--doc docs/reliability.md | --no-doc]

Starts the end-to-end control plane (tests/e2e/controlplane.py), then for each repetition and
fault sends a wave of 50 priority-1000 8-cpu preemptors onto 20 nodes of 32 cpu, each full of four
8-cpu priority-0 pods (each preemptor needs one victim; tests/e2e/burst.py counts; for kill and
refuse the victims take 8 s to go, so that the wave outlasts the fault), through a rig
of its own (tests/e2e/faulted.py: a kube-scheduler with the shipped extender stanza and its
reprieve, or two under leader election), and strikes the fault once a third of the preemptions
are actuated. Stock goes through the same fault where it applies (apiserver, compact, leader: a
rig of stock schedulers); for the faults of reprieve's own (kill, stop, refuse) stock is the
same wave through a stock scheduler with no fault. Stock and reprieve alternate which goes first.

Each reprieve row is held to issue 27's bar: every preemptor bound, at most one victim more than
stock's, no "claims to preempt", no 5xx, and time at most 1.5x stock's median (not for stop: the
scheduler waits ``httpTimeout`` per call while reprieve is stopped). Prints the table, and writes
it into ``--doc`` between its bench-faults markers, with the command and the machine. Stops the
control plane when done, also on error or ^C.

Needs the toolchain (built on first use) and port 8888 free: hold the e2e lock
(``flock /tmp/reprieve-e2e.lock make bench-faults``).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# reprieve runs as `python -m extender.cli` in a child process: make it this tree's too.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)

from tests.e2e.burst import Shape  # noqa: E402
from tests.e2e.controlplane import ControlPlane, StartupError, build_toolchain, machine  # noqa: E402
from tests.e2e.faulted import FAULTS, NONE, STOCK_TOO, Outcome, wave  # noqa: E402

SHORT = Shape(20, 50)
# Killed or refused, reprieve is away longer than a wave with 1 s victims takes: the whole rest of
# the wave would bind through the scheduler alone. Victims that take 8 s keep preemptors waiting
# past the fault, so that reprieve answers again within the wave (as in tests/e2e/test_faults.py).
LONG = Shape(20, 50, grace=8)
SHAPES = {"kill": LONG, "refuse": LONG}
SECONDS = {"kill": 3.0, "stop": 3.0, "refuse": 10.0, "apiserver": 3.0, "compact": 3.0, "leader": 0.0}
WHAT = {
    "kill": "reprieve SIGKILLed, started again 3 s later (victims take 8 s to go)",
    "stop": "reprieve SIGSTOPped 3 s (past the 2 s httpTimeout), then SIGCONTed",
    "refuse": "connections to reprieve refused for 10 s, reprieve running (victims take 8 s to go)",
    "apiserver": "kube-apiserver stopped abruptly, started again 3 s later",
    "compact": "the same, etcd compacted in the gap (every watch relists)",
    "leader": "two pairs under leader election (4 s lease): the leader SIGKILLed",
}
TIME_BAR = 1.5
BEGIN, END = "<!-- bench-faults:begin -->", "<!-- bench-faults:end -->"


def shape_of(fault: str) -> Shape:
    return SHAPES.get(fault, SHORT)


def baseline(shape: Shape) -> str:
    """The key of stock's no-fault waves of ``shape``."""
    return f"{NONE} {shape.grace}"


def run(faults: list[str], repetitions: int, timeout: float) -> dict[tuple[str, bool], list[Outcome]]:
    """(fault, stock) -> outcomes, in run order; stock's no-fault waves under (baseline(shape), True)."""
    results: dict[tuple[str, bool], list[Outcome]] = {}
    with tempfile.TemporaryDirectory(prefix="reprieve-bench-faults-") as work:
        plane = ControlPlane(Path(work), build_toolchain()).start()
        try:
            for rep in range(repetitions):
                jobs, baselines = [], []
                for fault in faults:
                    if fault in STOCK_TOO:
                        sides = [(fault, True), (fault, False)]
                        jobs += sides if rep % 2 == 0 else sides[::-1]
                        continue
                    if baseline(shape_of(fault)) not in baselines:
                        baselines.append(baseline(shape_of(fault)))
                        jobs.append((baselines[-1], True))
                    jobs.append((fault, False))
                if rep % 2:
                    jobs.reverse()
                for fault, stock in jobs:
                    shape = shape_of(fault) if not fault.startswith(NONE) else (LONG if fault == baseline(LONG) else SHORT)
                    name = NONE if fault.startswith(NONE) else fault
                    outcome = wave(plane, name, shape, seconds=SECONDS.get(fault, 0.0), stock=stock, timeout=timeout)
                    results.setdefault((fault, stock), []).append(outcome)
                    print(f"  [{rep + 1}/{repetitions}] {outcome.summary()}", file=sys.stderr, flush=True)
        finally:
            plane.stop()
    return results


def stock_of(results, fault: str) -> list[Outcome]:
    return results.get((fault, True) if fault in STOCK_TOO else (baseline(shape_of(fault)), True), [])


def median_time(outcomes: list[Outcome]) -> float | None:
    times = [o.result.seconds for o in outcomes if o.result.seconds is not None]
    return statistics.median(times) if times else None


def bar(outcome: Outcome, beside: Outcome | None, stock: list[Outcome], fault: str) -> list[str]:
    """What of the bar one reprieve wave misses (empty: met): its victims against ``beside``,
    stock's wave of the same repetition, and its time against the median of ``stock``'s."""
    r, n = outcome.result, outcome.result.shape.preemptors
    missed = []
    if r.pending or r.bound != n:
        missed.append(f"{len(r.pending)} pending")
    stock_victims = beside.result.distinct_victims if beside is not None else n
    if r.distinct_victims > stock_victims + 1:
        missed.append(f"{r.distinct_victims} victims against stock's {stock_victims}")
    if r.claims:
        missed.append(f"{len(r.claims)} 'claims to preempt'")
    if outcome.server_errors:
        missed.append(f"{len(outcome.server_errors)} 5xx")
    stock_time = median_time(stock)
    if fault != "stop" and stock_time and r.seconds is not None and r.seconds > TIME_BAR * stock_time:
        missed.append(f"{r.seconds:.1f} s > {TIME_BAR:g}x stock's median {stock_time:.1f} s")
    return missed


def table(results: dict[tuple[str, bool], list[Outcome]], faults: list[str]) -> str:
    rows = [
        "| fault, in the middle of the wave | through | bound / 50 | pending | preemptions | distinct victims | preempted again "
        "| 'claims to preempt' | 5xx | calls without reprieve | seconds | after the fault | vs stock | bar |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def cells(outcomes: list[Outcome]) -> list[str]:
        rs = [o.result for o in outcomes]
        return [
            ", ".join(str(r.bound) for r in rs),
            ", ".join(str(len(r.pending)) for r in rs),
            ", ".join(str(r.preemptions) for r in rs),
            ", ".join(str(r.distinct_victims) for r in rs),
            ", ".join(str(r.preempted_again) for r in rs),
            ", ".join(str(len(r.claims)) for r in rs),
            ", ".join(str(len(o.server_errors)) for o in outcomes),
            ", ".join("-" if o.stock else str(o.skipped) for o in outcomes),
            ", ".join("timed out" if r.seconds is None else f"{r.seconds:.1f}" for r in rs),
            ", ".join("-" if o.after_fault is None else f"{o.after_fault:.1f}" for o in outcomes),
        ]

    shown: set[str] = set()
    for fault in faults:
        stock = stock_of(results, fault)
        if fault in STOCK_TOO:
            rows.append(f"| {WHAT[fault]} | stock | " + " | ".join(cells(stock)) + " | | |")
        elif baseline(shape_of(fault)) not in shown and stock:
            shown.add(baseline(shape_of(fault)))
            users = [f for f in faults if f not in STOCK_TOO and baseline(shape_of(f)) == baseline(shape_of(fault))]
            what = f"none (stock's wave for {', '.join(users)}; victims' grace {shape_of(fault).grace} s)"
            rows.append(f"| {what} | stock | " + " | ".join(cells(stock)) + " | | |")
        ours = results.get((fault, False), [])
        stock_time = median_time(stock)
        ratios = ", ".join("-" if o.result.seconds is None or not stock_time else f"{o.result.seconds / stock_time:.2f}x" for o in ours)
        verdicts = [bar(o, stock[i] if i < len(stock) else None, stock, fault) for i, o in enumerate(ours)]
        met = "met" if not any(verdicts) else "**not met**: " + "; ".join(m for v in verdicts for m in v)
        if fault == "stop" and not any(verdicts):
            met += " (time exempt: stopped)"
        rows.append(f"| {WHAT[fault]} | reprieve | " + " | ".join(cells(ours)) + f" | {ratios} | {met} |")
    return "\n".join(rows)


def document(doc: Path, command: str, header: str, text: str) -> None:
    """Put the table between the doc's markers (the prose around them is hand-written)."""
    content = doc.read_text()
    if BEGIN not in content or END not in content:
        raise SystemExit(f"{doc} has no {BEGIN} ... {END} section to write the table into")
    block = f"{BEGIN}\n`{command}`, {header}\n\n{text}\n{END}"
    doc.write_text(re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: block, content, flags=re.S))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated, of: {', '.join(FAULTS)}")
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=90, help="seconds a wave may take before it gives up")
    parser.add_argument("--doc", default=str(ROOT / "docs" / "reliability.md"), help="where to write the table")
    parser.add_argument("--no-doc", action="store_true", help="print the table only")
    args = parser.parse_args(argv)
    faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = [f for f in faults if f not in FAULTS]
    if unknown or args.repetitions < 1:
        parser.error(f"unknown fault(s) {unknown}" if unknown else "--repetitions must be at least 1")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwinds like ^C: the control plane stops
    started = time.monotonic()
    try:
        results = run(faults, args.repetitions, args.timeout)
    except StartupError as exc:
        print(f"bench/faults.py: the control plane could not start: {exc}", file=sys.stderr)
        return 1
    command = "make bench-faults" if argv is None and sys.argv[1:] == [] else "python bench/faults.py " + " ".join(sys.argv[1:] if argv is None else argv)
    header = (
        f"{machine(started)}; {args.repetitions} repetition(s), "
        "one value per repetition in run order:"
    )
    text = table(results, faults)
    print(f"{command}\n{header}\n\n{text}")
    if not args.no_doc:
        document(Path(args.doc), command, header, text)
        print(f"\nwrote the table into {args.doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
