"""Faults in the middle of a wave of preemptions (issue 27, point 2, short versions).

The burst of tests/e2e/burst.py (full 32-cpu nodes, then a wave of 8-cpu preemptors created
together, each needing exactly one victim; burst.py says how everything is counted), through a
kube-scheduler + reprieve pair of the test's own (tests/e2e/faulted.py), and once a third of the
wave's preemptions are actuated (reprieve then holds answers in flight), a fault:

- **kill**: reprieve SIGKILLed, started again 3 s later. The scheduler preempts as stock does
  while nothing listens (``ignorable: true``); the new reprieve has none of the answers its
  predecessor held in flight, only what its view shows (victims terminating, preemptors
  nominated), and answers the filter calls that bind the waiting preemptors (victims take 8 s
  to go here, so that the wave outlasts the outage: the test checks the new reprieve answered).
- **stop**: reprieve SIGSTOPped for 3 s, past the shipped ``httpTimeout`` of 2 s, then
  SIGCONTed. The call in progress times out (one or two calls, 2 s each) and for that cycle the
  scheduler goes on without reprieve (preempting as stock does); a call made in the stop's last
  2 s waits in the socket's backlog and is answered after SIGCONT, as are the timed-out ones,
  whose callers are gone. For 2 s after SIGCONT reprieve answers as stock (extender/stall.py),
  while its watches catch up with what the scheduler did meanwhile: the test checks it did.

Each asserts issue 27's bar: every preemptor binds (none left pending), at most one victim more
than stock evicts under the same fault, no answer the scheduler rejected ("claims to preempt")
and no 5xx (faulted.py: from either end). While reprieve is away the scheduler preempts as stock
does, and in these shapes stock evicts one victim per preemptor (burst.py: now and then one
more, of its own), so the bar is at most preemptors + 1 distinct victims. The wave's time is
recorded (the ``burst`` property; `pytest -rA` shows it), not asserted: it holds the fault's
3 s, and in the kill test the victims' 8 s. The whole table, side by side with stock, is later
work (issue 27: ``make bench-faults``).
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.burst import Shape, burst
from tests.e2e.client import wait_for
from tests.e2e.faulted import FaultPair

FAULT_SECONDS = 3.0
# Issue 9's 2.5 preemptors per node, at half of 20x50's size: a short wave for `make test`.
# Killed, reprieve is away for FAULT_SECONDS and then a second or two while it loads its view,
# longer than a whole wave of victims with burst.py's 1 s grace takes: the rest of the wave
# would bind through the scheduler alone, before the new reprieve answered anything. Victims
# that take 8 s to go keep the wave's preemptors nominated and waiting until after the restart,
# so the new reprieve, without the answers its predecessor held in flight, answers the filter
# calls that bind them (the test checks it did).
SHAPES = {"kill": Shape(10, 25, grace=8), "stop": Shape(10, 25)}


@pytest.fixture
def pair(plane, request):
    fault = request.node.callspec.params["fault"]
    p = FaultPair(plane, fault)
    yield p
    p.stop()


def strike(pair: FaultPair, fault: str, namespace: str, notes: list[str]) -> None:
    """The fault, once a third of the wave's preemptions are actuated."""
    try:
        third = SHAPES[fault].preemptors // 3
        wait_for("a third of the wave's preemptions", lambda: pair.preemptions(namespace) >= third, timeout=20, interval=0.01)
    except AssertionError:
        pass  # strike anyway: the counts below say where the wave was
    notes.append(f"struck after {pair.preemptions(namespace)} preemptions")
    if fault == "kill":
        pair.kill()
        time.sleep(FAULT_SECONDS)
        notes.append(f"restarted {FAULT_SECONDS:g} s later, ready in {pair.restart():.2f} s")
    else:
        pair.pause()
        time.sleep(FAULT_SECONDS)
        pair.resume()
        notes.append(f"stopped for {FAULT_SECONDS:g} s")


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param("kill", id="reprieve-sigkilled-mid-wave-and-restarted-3s-later"),
        pytest.param("stop", id="reprieve-sigstopped-3s-mid-wave-past-httpTimeout"),
    ],
)
def test_wave_survives_a_fault_in_reprieve(scenario, pair, fault, record_property):
    notes: list[str] = []
    shape = SHAPES[fault]
    result = burst(
        scenario, shape, pair.scheduler, log=pair.scheduler, reprieve_port=pair.port,
        during=lambda: strike(pair, fault, scenario.ns, notes),
    )
    skipped = pair.extender_errors()
    answered = pair.requests()
    record_property(
        "burst",
        f"{result.summary()}; {fault}: {', '.join(notes)}; calls the scheduler went on without reprieve for: {len(skipped)}; "
        f"answers of the reprieve running at the end: " + ", ".join(f"{v} {c}: {n:g}" for (v, c), n in sorted(answered.items())),
    )

    n = shape.preemptors
    assert not result.pending, f"preemptors never bound: {result.pending}; {result.summary()}"
    assert result.bound == n, result.summary()
    assert not result.claims, "the scheduler rejected reprieve's answer:\n" + "\n".join(result.claims[:5])
    assert result.distinct_victims <= n + 1, f"more than one victim beyond one per preemptor: {result.summary()}"
    errors = pair.server_errors()
    assert not errors, "5xx answers:\n" + "\n".join(errors[:5])
    if fault == "stop":
        # Just after SIGCONT reprieve answered as stock (extender/stall.py: its view missed the
        # scheduler's own preemptions meanwhile); before that window, one answer in five or so
        # named a victim the scheduler had already deleted ("claims to preempt").
        assert pair.not_ready().get("preempt"), f"no preempt answered as stock after the stop: {answered}"
    if fault == "kill":
        # Not the bar, the test's own premise: the restarted reprieve took part in the wave.
        assert answered.get(("filter", "200")), f"the restarted reprieve answered no filter call of the wave: {answered}"
