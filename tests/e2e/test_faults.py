"""Faults in the middle of a wave of preemptions (issue 27, point 2, short versions).

The burst of tests/e2e/burst.py (full 32-cpu nodes, then a wave of 8-cpu preemptors created
together, each needing exactly one victim; burst.py says how everything is counted), through a
rig of the test's own (tests/e2e/faulted.py: a kube-scheduler + reprieve pair, or two under
leader election, or the same without reprieve for stock), and once a third of the wave's
preemptions are actuated (reprieve then holds answers in flight), a fault:

- **kill**: reprieve SIGKILLed, started again 3 s later. The scheduler preempts as stock does
  while nothing listens (``ignorable: true``); the new reprieve has none of the answers its
  predecessor held in flight, only what its view shows (victims terminating, preemptors
  nominated: the test checks its first view found them), and answers the filter calls that
  bind the waiting preemptors (victims take 8 s to go here, so that the wave outlasts the
  outage: the test checks the new reprieve answered).
- **stop**: reprieve SIGSTOPped for 3 s, past the shipped ``httpTimeout`` of 2 s, then
  SIGCONTed. The call in progress times out (one or two calls, 2 s each) and for that cycle the
  scheduler goes on without reprieve (preempting as stock does); a call made in the stop's last
  2 s waits in the socket's backlog and is answered after SIGCONT, as are the timed-out ones,
  whose callers are gone. For 2 s after SIGCONT reprieve answers as stock (extender/stall.py),
  while its watches catch up with what the scheduler did meanwhile: the test checks it did.
- **refuse**: the scheduler's connections to reprieve refused for 5 s (bench/faults.py: 10 s),
  reprieve running on with its view and its answers in flight; victims take 8 s to go, so that
  reprieve answers again for the preemptors still waiting when connections come back.
- **compact**: kube-apiserver stopped abruptly and started again 3 s later, with etcd compacted
  in the gap, so that every watch relists (bench/faults.py also runs the restart alone);
  **leader**: of two pairs under leader election, the leading one SIGKILLed. Stock is put under
  the same fault first, in a rig of its own, and reprieve is held to it.

Each asserts issue 27's bar: every preemptor binds (none left pending), at most one victim more
than stock evicts under the same fault, no answer the scheduler rejected ("claims to preempt")
and no 5xx (faulted.py: from either end). For the faults of reprieve's own, stock is the
scheduler without reprieve, which in these shapes evicts one victim per preemptor (burst.py: now
and then one more, of its own), so the bar is at most preemptors + 1 distinct victims. The
wave's time is recorded (the ``burst`` property; `pytest -rA` shows it), not asserted: a short
wave on a shared machine is too noisy for it; bench/faults.py (`make bench-faults`) measures it
against stock, with the whole table in docs/reliability.md.
"""

from __future__ import annotations

import pytest

from tests.e2e.burst import Shape
from tests.e2e.faulted import Outcome, settle, wave

# Issue 9's 2.5 preemptors per node, at half of 20x50's size: a short wave for `make test`.
# Killed, reprieve is away for 3 s and then a second or two while it loads its view, longer than
# a whole wave of victims with burst.py's 1 s grace takes: the rest of the wave would bind through
# the scheduler alone, before the new reprieve answered anything. Victims that take 8 s to go keep
# the wave's preemptors nominated and waiting until after the restart, so the new reprieve,
# without the answers its predecessor held in flight, answers the filter calls that bind them
# (the test checks it did). The same for refused connections.
SHAPES = {
    "kill": Shape(10, 25, grace=8), "stop": Shape(10, 25), "refuse": Shape(10, 25, grace=8),
    "apiserver": Shape(10, 25), "compact": Shape(10, 25), "leader": Shape(10, 25),
}
SECONDS = {"kill": 3.0, "stop": 3.0, "refuse": 5.0, "apiserver": 3.0, "compact": 3.0, "leader": 0.0}


def held_to_the_bar(outcome: Outcome, *, stock_victims: int) -> None:
    result, n = outcome.result, outcome.result.shape.preemptors
    assert not result.pending, f"preemptors never bound: {result.pending}; {outcome.summary()}"
    assert result.bound == n, outcome.summary()
    assert not result.claims, "the scheduler rejected reprieve's answer:\n" + "\n".join(result.claims[:5])
    # A preemption the outage broke leaves its preemptor nominated in the scheduler's memory,
    # and the scheduler's later proposals on that node count that room: reprieve must free what
    # they free (policy.preempt.held.scheduler_sees_less), as stock does. How many break
    # depends on where in the wave the outage falls, which differs between the two runs: the
    # yardstick is stock's count, or one victim per preemptor and per preemptor whose
    # preemption broke where that is more (docs/reliability.md, "Victims under an API server restart").
    yardstick = max(stock_victims, n + result.broken)
    assert result.distinct_victims <= yardstick + 1, f"more than one victim beyond {yardstick} (stock's {stock_victims}): {outcome.summary()}"
    assert not outcome.server_errors, "5xx answers:\n" + "\n".join(outcome.server_errors[:5])


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param("kill", id="reprieve-sigkilled-mid-wave-and-restarted-3s-later"),
        pytest.param("stop", id="reprieve-sigstopped-3s-mid-wave-past-httpTimeout"),
        pytest.param("refuse", id="connections-to-reprieve-refused-5s-mid-wave"),
    ],
)
def test_wave_survives_a_fault_in_reprieve(plane, fault, record_property):
    outcome = wave(plane, fault, SHAPES[fault], seconds=SECONDS[fault])
    record_property("burst", outcome.summary())
    held_to_the_bar(outcome, stock_victims=outcome.result.shape.preemptors)
    answered = outcome.answered
    if fault == "stop":
        # Just after SIGCONT reprieve answered as stock (extender/stall.py: its view missed the
        # scheduler's own preemptions meanwhile); before that window, one answer in five or so
        # named a victim the scheduler had already deleted ("claims to preempt").
        assert outcome.not_ready.get("preempt"), f"no preempt answered as stock after the stop: {answered}"
    if fault in ("kill", "refuse"):
        # Not the bar, the test's own premises: the scheduler met the fault (it went on without
        # reprieve for some call), and reprieve took part in the wave after it.
        assert outcome.skipped, f"no call met the fault: {outcome.summary()}"
        assert answered.get(("filter", "200")), f"reprieve answered no filter call of the wave: {answered}"
    if fault == "kill":
        # The new reprieve started mid-wave, and its first view said so (docs/reliability.md).
        assert outcome.restart_in_flight.get("victims terminating"), outcome.restart_in_flight
        assert outcome.restart_in_flight.get("pods nominated"), outcome.restart_in_flight


@pytest.mark.parametrize(
    "fault",
    [
        # Not "apiserver" alone: "compact" restarts the apiserver too, and forces every watch to
        # relist on top (bench/faults.py runs both); `make test` keeps the one, for time.
        pytest.param("compact", id="apiserver-stopped-3s-and-etcd-compacted-mid-wave"),
        pytest.param("leader", id="leading-scheduler-and-reprieve-sigkilled-mid-wave"),
    ],
)
def test_wave_survives_a_fault_beside_stock(plane, fault, record_property):
    try:
        stock = wave(plane, fault, SHAPES[fault], seconds=SECONDS[fault], stock=True)
        outcome = wave(plane, fault, SHAPES[fault], seconds=SECONDS[fault])
    finally:
        if fault in ("apiserver", "compact"):
            settle(plane)  # before the modules after this one use the shared plane
    record_property("burst", f"{stock.summary()}\n{outcome.summary()}")
    # Stock under the same fault is the yardstick, not the subject: after an apiserver restart
    # with a relist, kube-scheduler itself has been seen to leave a preemptor pending past the
    # wave's 60 s (make test, 2026-12-06: 24/25 bound, 36 preemptions, 11 preempted again; most
    # likely kubernetes#141694, a preemptor parked after a redundant preemption). That is
    # recorded, and reprieve is still held to the whole bar: every preemptor bound.
    record_property("stock_pending", ", ".join(stock.result.pending))
    held_to_the_bar(outcome, stock_victims=stock.result.distinct_victims)
