"""Watching reprieve's view for the preemptions it answered, and recording their Events.

The preempt verb hands each answer over (``answered``: a small capture, no I/O, never waits),
and the witness keeps the capture in that answer's entry of the ledger (extender.state.ledger,
the one record of answers in flight); a thread of its own checks every new view while Events are
awaited. An answer is carried out when the view shows the preemptor nominated to (or bound on)
the node and every victim terminating with kube-scheduler's DisruptionTarget condition, or gone:
the ledger's own test (extender.state.ledger.progress) plus that condition, so that a pod deleted
by someone else is never called a victim. Then one Event goes on the preemptor and one on each
victim. An answer the scheduler did not carry out (it went another way, or nothing happened
within the ledger's IN_FLIGHT_SECONDS) is forgotten without a word.

In shadow mode reprieve answers nothing: with ``--events shadow`` the preemptor gets one
Event saying what reprieve would have done, once the view shows the scheduler's own
preemption (on any node it proposed) carried out.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from extender.config import Events, Mode
from extender.events import notes
from extender.events.recorder import WARNING, Event, Recorder, Ref
from extender.state.ledger import Ledger, Progress, progress
from extender.state.preemptions import UnderWay
from extender.state.source import ClusterSource
from policy.model import InFlight, Pod
from policy.preempt import PreemptDecision, Proposal
from policy.view import ClusterView

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1  # how often a pending answer is checked against the newest view


class Witness:
    def __init__(
        self,
        recorder: Recorder,
        cluster: ClusterSource,
        ledger: Ledger,
        *,
        mode: Mode,
        events: Events,
    ) -> None:
        """``ledger``: the record of answers in flight, the app's too (extender.serving.app)."""
        self.recorder = recorder
        self.ledger = ledger
        self._cluster = cluster
        self._shadow = mode is Mode.SHADOW
        self._on = events is Events.SHADOW if self._shadow else events is not Events.OFF
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self._on

    def answered(
        self, view: ClusterView, preemptor: Pod, proposals: Mapping[str, Proposal], decision: PreemptDecision
    ) -> None:
        """The preempt verb answered (in shadow mode: decided); remember it until the view shows it."""
        if not self._on or not preemptor.uid:
            return
        if not self._shadow and not decision.answer:
            if decision.waits:
                return  # its earlier answer is still being carried out
            self.ledger.drop_events(preemptor.uid)  # the scheduler asked again and got nothing: nothing will happen
            blocked = notes.blocked_note(decision)
            if blocked is not None:  # the policy's guards leave it pending: say so now, nothing else will
                self.recorder.record(Event(_ref(preemptor), notes.BLOCKED, notes.ACTION, blocked, type=WARNING))
            return
        answer = notes.capture(view, preemptor, proposals, decision)
        if not self._shadow and answer.node is None:
            self.ledger.drop_events(preemptor.uid)  # a node passed through unjudged: reprieve chose no victims there
            return
        self.ledger.await_events(preemptor.uid, answer)
        self._wake.set()

    def dropped(self, preemptor: Pod, node: str, victims: int, why: str) -> None:
        """The preempt verb's answer found its caller gone (extender.serving.verbs.preempt):
        nothing of it will happen. Said at once on the preemptor (a Warning: the scheduler
        waited its httpTimeout for nothing), and any earlier answer's Events are no longer awaited."""
        if not self._on or self._shadow or not preemptor.uid:
            return
        self.ledger.drop_events(preemptor.uid)
        self.recorder.record(
            Event(_ref(preemptor), notes.DROPPED, notes.ACTION, notes.dropped_note(node, victims, why),
                  related=Ref("Node", node), type=WARNING)
        )

    def started(self, found: UnderWay, own: Ref | None) -> None:
        """reprieve's first view showed preemptions under way (extender.state.preemptions): said
        on reprieve's own pod, ``own`` (None: not known, outside a cluster)."""
        if not self._on or self._shadow or own is None or not found:
            return
        self.recorder.record(Event(own, notes.STARTED, notes.ACTION, notes.started_note(found)))

    def check(self, view: ClusterView) -> None:
        """Record the Events of every awaited answer ``view`` shows carried out; drop the rest
        that it shows went otherwise, or that are too old."""
        for awaiting in self.ledger.awaiting_events():
            answer: notes.Answer = awaiting.events
            node, state = self._progress(view, answer)
            if state is Progress.PENDING and not awaiting.expired:
                continue
            self.ledger.drop_events(awaiting.uid, since=awaiting.since)
            if state is Progress.CARRIED_OUT and node is not None:
                self._record(answer, node)

    def __len__(self) -> int:
        """Answers whose Events are awaited (the ledger's count: ``_run`` asks every poll)."""
        return self.ledger.awaiting_count()

    # the thread

    def start(self) -> "Witness":
        if self._on:
            self._thread = threading.Thread(target=self._run, name="event-witness", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def _run(self) -> None:
        seen = None
        while not self._stop.is_set():
            if not len(self):
                self._wake.wait()
                self._wake.clear()
                continue
            view = self._cluster.view()
            if view is not None and view is not seen:
                seen = view
                try:
                    self.check(view)
                except Exception:  # noqa: BLE001 - one bad answer must not stop the others
                    log.exception("checking answers for Events failed")
            self._stop.wait(POLL_SECONDS)

    # internals

    def _progress(self, view: ClusterView, answer: notes.Answer) -> tuple[str | None, Progress]:
        """Where the preemption is carried out, and how far: on reprieve's node (enforce), or on
        whichever node the scheduler proposed and went to (shadow)."""
        if self._shadow:
            seen = view.pods.get(answer.preemptor.uid)
            node = seen and (seen.node_name or seen.nominated_node_name)
            if node not in answer.proposed:
                node = next(iter(answer.proposed), None)  # not there yet, or elsewhere: progress() tells
        else:
            node = answer.node
        if node is None:
            return None, Progress.OTHERWISE
        victims = _victims(answer, node, self._shadow)
        state = progress(view, InFlight(answer.preemptor, node, victims))
        if state is Progress.CARRIED_OUT and not all(
            (v := view.pods.get(p.uid)) is None or v.preempted for p in victims
        ):
            state = Progress.OTHERWISE  # deleted, but not by a scheduler's preemption
        return node, state

    def _record(self, answer: notes.Answer, node: str) -> None:
        preemptor = _ref(answer.preemptor)
        if self._shadow:
            self.recorder.record(
                Event(preemptor, notes.SHADOW, notes.ACTION, notes.shadow_note(answer, node), related=Ref("Node", node))
            )
            return
        self.recorder.record(
            Event(preemptor, notes.PREEMPTING, notes.ACTION, notes.preemptor_note(answer), related=Ref("Node", node))
        )
        for victim in answer.victims:
            self.recorder.record(
                Event(_ref(victim), notes.CHOSEN, notes.ACTION, notes.victim_note(answer, victim), related=preemptor)
            )


def _victims(answer: notes.Answer, node: str, shadow: bool) -> tuple[Pod, ...]:
    """The pods whose leaving shows the preemption: reprieve's victims, or the scheduler's
    (a UID reprieve does not know cannot be checked and is left out)."""
    if not shadow:
        return answer.victims
    return tuple(p for p in answer.proposed.get(node, ()) if isinstance(p, Pod))


def _ref(pod: Pod) -> Ref:
    return Ref("Pod", pod.name, pod.namespace, pod.uid)
