"""reprieve's own preempt answers, remembered until its view shows them (policy.model.InFlight).

Between a preempt answer and the view that shows its effect (the preemptor nominated, its
victims terminating) lie a few milliseconds to a second, and in a burst kube-scheduler asks
about the next preemptor within that gap: its cache already counts the nomination it just
made, reprieve's view does not. Without this record reprieve would hand the same victim to
the next preemptor, or the same room. Every answer is recorded, with or without a policy;
in shadow mode nothing is (the scheduler evicts its own victims, not reprieve's).

The ledger is the one record of answers in flight, and it has two readers: the verbs
(``record``, ``in_flight``, ``forget``, and ``named``: the victims of answers given lately and no
longer in flight) and the Events witness (extender.events.witness:
``await_events``, ``awaiting_events``, ``drop_events``), which keeps in an answer's entry what its
Events will say (in shadow mode too) until a view shows the preemption carried out or not.
Each reader lets go of an entry by its own rules, as if the other were not there; the entry
goes when neither holds it. Each sees its own entries in its own order, oldest first (the
verbs': as answered; the witness's: as handed over), and each is bounded by its own count
(MAX_IN_FLIGHT). ``progress`` is also what the witness asks before it records Events.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from enum import Enum
from typing import NamedTuple

from policy.model import InFlight, Pod
from policy.view import ClusterView

# An answer the view never confirms (the scheduler failed, or its view never arrives) is
# forgotten after this long. A retry of the same pod replaces or forgets it sooner.
IN_FLIGHT_SECONDS = 30.0
# At most this many answers are remembered (the oldest go first), and as many awaited Events: a
# burst of thousands of preemptors within IN_FLIGHT_SECONDS fits, and no flood of requests can
# grow it further.
MAX_IN_FLIGHT = 10_000


class _Entry(NamedTuple):
    since: float  # when the answer was recorded (the ledger's clock)
    flight: InFlight | None  # the answer the verbs hold in flight; None: not held (shadow mode, let go)
    decided_at: int = 0  # the revision of the view the answer was decided on
    shown_at: int | None = None  # the revision of the first view that showed the preemptor
    settled_at: int | None = None  # the revision of the first view seen showing it settled
    events: object = None  # what the witness's Events will say (extender.events.notes.Answer); None: none awaited
    events_since: float = 0.0  # when the witness was handed ``events``


class Awaiting(NamedTuple):
    """An answer whose Events the witness awaits."""

    uid: str  # the preemptor's
    since: float  # when it was handed over: ``drop_events`` lets go of this one only
    events: object  # what the witness handed over
    expired: bool  # handed over more than IN_FLIGHT_SECONDS ago


class Ledger:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._answers: dict[str, _Entry] = {}  # preemptor UID -> its entry
        # Each reader's entries, oldest first: taking up an entry makes it the newest of that
        # reader's only (with one order, an answer recorded again reordered the Events too).
        self._flights: OrderedDict[str, None] = OrderedDict()  # the verbs': ``flight`` not None
        self._awaited: OrderedDict[str, None] = OrderedDict()  # the witness's: ``events`` not None
        self._named: dict[str, float] = {}  # victim UID -> when its answer was given (``named``)
        self._named_set: frozenset[str] | None = frozenset()  # what ``named`` hands out; None: stale
        self._named_due = float("inf")  # when the oldest of ``_named`` is due to go

    def in_flight(self, view: ClusterView, *, asking: Pod | None = None) -> tuple[InFlight, ...]:
        """Answers ``view`` does not show settled and that have not expired.

        Settled: the view shows the answer carried out, or the scheduler gone another way
        (``progress``), or the preemptor deleted: the view's change log saw it go, or a view of
        an earlier revision showed it and this one does not (else its room stayed held for
        nothing until it expired, and a preemptor refused for it waited for the scheduler's
        next retry). An answer whose preemptor shares its namespace and name with ``asking``,
        the pod the scheduler asks about now, under another UID is forgotten at once: the API
        server holds one pod per name, so that preemptor was deleted (a pod re-created under
        its name, seen by the scheduler before reprieve's view). Revisions, not the
        order of calls, decide, since a request may hold a view older than another request's:
        a view older than the one an answer was decided on counts it and settles nothing, and
        one older than the view that settled it is judged on what it shows itself. Snapshot
        views all have revision 0 (none older than another, none telling a deletion): a
        settled answer is dropped at once, as it always was.

        ``asking``'s own latest answer is handed over settled too, in its place in the order,
        where the view shows it carried out (not where the scheduler went another way, nor
        where the preemptor was deleted): policy.preempt.decide reads it only as the preemptor's
        own, to tell which answers came after it (its eligibility's wait on victims already
        leaving, which the scheduler may retry it into once its own victims are gone, whether or
        not reprieve's view has shown them going). Until it expires, IN_FLIGHT_SECONDS after the
        answer, or a newer answer or ``forget`` replaces it."""
        now = self._clock()
        revision = view.revision
        held = []
        with self._lock:
            for uid in list(self._flights):
                entry = self._answers[uid]
                if now - entry.since > IN_FLIGHT_SECONDS or (asking is not None and _twin(entry.flight.preemptor, asking)):
                    self._let_go(uid, entry)
                    continue
                own = asking is not None and uid == asking.uid
                if entry.settled_at is not None and revision >= entry.settled_at:
                    if own and progress(view, entry.flight) is Progress.CARRIED_OUT:
                        held.append(entry.flight)
                    continue
                if revision < entry.decided_at:
                    held.append(entry.flight)  # a view from before the answer: it cannot show it
                    continue
                present = uid in view.pods
                deleted = not present and (
                    (entry.shown_at is not None and revision > entry.shown_at) or _seen_deleted(view, uid)
                )
                done = progress(view, entry.flight)
                if deleted or done is not Progress.PENDING:
                    if revision == 0:
                        self._let_go(uid, entry)
                    else:  # kept for requests still deciding on older views
                        self._remember(entry)
                        self._answers[uid] = entry._replace(settled_at=revision)
                        if own and done is Progress.CARRIED_OUT:  # never so for a pod the view lacks
                            held.append(entry.flight)
                    continue
                if present and (entry.shown_at is None or revision < entry.shown_at):
                    self._answers[uid] = entry._replace(shown_at=revision)
                held.append(entry.flight)
        return tuple(held)

    def record(
        self, preemptor: Pod, node: str, victims: tuple[Pod, ...], *, decided_at: int = 0, shown_at: int | None = None
    ) -> None:
        """``decided_at``: the revision of the view the answer was decided on; ``shown_at``: the
        same, if that view shows the preemptor (a brand-new pod may not be in it yet)."""
        if not preemptor.uid:
            return  # the scheduler always sends one; without it there is nothing to match
        with self._lock:
            # A newer answer replaces the older (Events awaited for it stay the witness's to drop).
            entry = self._answers.get(preemptor.uid) or _Entry(0.0, None)
            if entry.flight is not None:
                self._remember(entry)
            flight = InFlight(preemptor, node, victims)
            self._answers[preemptor.uid] = entry._replace(
                since=self._clock(), flight=flight, decided_at=decided_at, shown_at=shown_at, settled_at=None
            )
            self._flights.pop(preemptor.uid, None)
            self._flights[preemptor.uid] = None
            # settled answers go first, then the oldest
            self._bound(self._flights, self._let_go, first=lambda e: e.settled_at is not None)

    def named(self) -> frozenset[str]:
        """The victims of answers no longer in flight (replaced by a newer answer for their
        preemptor, void, settled, let go) given in the last IN_FLIGHT_SECONDS: the scheduler may
        have deleted them while the view, behind, shows them running, so an answer names them
        only where the scheduler proposes them (policy.preempt). Read after ``in_flight``, which
        may let answers go. The same set is handed out until one of them is due to go or another
        comes."""
        now = self._clock()
        with self._lock:
            if self._named_set is None or now >= self._named_due:
                self._prune(now)
                self._named_set = frozenset(self._named)
            return self._named_set

    def forget(self, preemptor: Pod) -> None:
        """The scheduler asked again and got no node: an earlier answer for it is void."""
        with self._lock:
            if (entry := self._answers.get(preemptor.uid)) is not None and entry.flight is not None:
                self._let_go(preemptor.uid, entry)

    def __len__(self) -> int:
        """Answers not seen settled by any view yet."""
        with self._lock:
            return sum(self._answers[uid].settled_at is None for uid in self._flights)

    # the Events witness's

    def await_events(self, uid: str, events: object) -> None:
        """The witness awaits ``events`` for the answer to ``uid``, in place of any earlier."""
        now = self._clock()
        with self._lock:
            entry = self._answers.get(uid) or _Entry(now, None)
            self._answers[uid] = entry._replace(events=events, events_since=now)
            self._awaited.pop(uid, None)
            self._awaited[uid] = None
            self._bound(self._awaited, self._drop_events)  # the oldest go first

    def awaiting_events(self) -> list[Awaiting]:
        """The answers whose Events the witness awaits, oldest first."""
        now = self._clock()
        with self._lock:
            return [
                Awaiting(uid, e.events_since, e.events, now - e.events_since > IN_FLIGHT_SECONDS)
                for uid, e in ((u, self._answers[u]) for u in self._awaited)
            ]

    def awaiting_count(self) -> int:
        """How many answers the witness awaits Events for: O(1), kept as entries change, and
        read without the lock (one ``len`` of a dict is atomic; a count a moment old only moves
        the witness's next look by one poll)."""
        return len(self._awaited)

    def drop_events(self, uid: str, *, since: float | None = None) -> None:
        """The witness awaits no Events for ``uid`` (``since``: only if still those handed over then)."""
        with self._lock:
            entry = self._answers.get(uid)
            if entry is not None and entry.events is not None and (since is None or since == entry.events_since):
                self._drop_events(uid, entry)

    # internals (the lock held)

    def _let_go(self, uid: str, entry: _Entry) -> None:
        """The verbs hold the answer no longer; the entry goes unless Events are awaited."""
        self._remember(entry)
        del self._flights[uid]
        if entry.events is None:
            del self._answers[uid]
        else:
            self._answers[uid] = entry._replace(flight=None)

    def _remember(self, entry: _Entry) -> None:
        """``named`` keeps the victims of an answer the verbs hold no longer, from when it was
        given, for IN_FLIGHT_SECONDS; at most MAX_IN_FLIGHT of them, the oldest going first."""
        now = self._clock()
        if now - entry.since > IN_FLIGHT_SECONDS or not entry.flight.victims:
            return
        for victim in entry.flight.victims:
            since = max(entry.since, self._named.pop(victim.uid, entry.since))
            self._named[victim.uid] = since
            self._named_due = min(self._named_due, since + IN_FLIGHT_SECONDS)
        self._named_set = None
        if len(self._named) > MAX_IN_FLIGHT:
            self._prune(now)
            for uid in heapq.nsmallest(len(self._named) - MAX_IN_FLIGHT, self._named, key=self._named.__getitem__):
                del self._named[uid]

    def _prune(self, now: float) -> None:
        """``named`` without the victims of answers given over IN_FLIGHT_SECONDS ago."""
        for uid in [uid for uid, since in self._named.items() if now - since > IN_FLIGHT_SECONDS]:
            del self._named[uid]
        self._named_due = min(self._named.values(), default=now) + IN_FLIGHT_SECONDS

    def _drop_events(self, uid: str, entry: _Entry) -> None:
        del self._awaited[uid]
        if entry.flight is None:
            del self._answers[uid]
        else:
            self._answers[uid] = entry._replace(events=None)

    def _bound(
        self,
        order: OrderedDict[str, None],
        drop: Callable[[str, _Entry], None],
        *,
        first: Callable[[_Entry], bool] | None = None,
    ) -> None:
        """At most MAX_IN_FLIGHT entries in one reader's ``order``: past it, ``drop`` the
        ``first`` ones, then the oldest."""
        if len(order) <= MAX_IN_FLIGHT:
            return  # entries the other reader alone holds do not count
        if first is not None:
            for uid in [u for u in order if first(self._answers[u])]:
                if len(order) <= MAX_IN_FLIGHT:
                    break
                drop(uid, self._answers[uid])
        while len(order) > MAX_IN_FLIGHT:
            uid = next(iter(order))
            drop(uid, self._answers[uid])


def _twin(recorded: Pod, asking: Pod) -> bool:
    """Another pod under the same namespace and name: one of the two was deleted, and the
    scheduler asks about the other."""
    return recorded.uid != asking.uid and recorded.name == asking.name and recorded.namespace == asking.namespace


def _seen_deleted(view: ClusterView, uid: str) -> bool:
    """The view's change log saw the pod deleted at or before the view's revision."""
    if view.changes is None:
        return False
    at = view.changes.deleted_at(uid)
    return at is not None and at <= view.revision


class Progress(str, Enum):
    """What a view shows of an answer in flight."""

    PENDING = "pending"  # not yet visible
    CARRIED_OUT = "carried out"  # the preemptor nominated (or bound) there, its victims leaving or gone
    OTHERWISE = "otherwise"  # the scheduler went another way


def progress(view: ClusterView, flight: InFlight) -> Progress:
    """How far ``view`` shows ``flight`` carried out (the ledger forgets it once not PENDING)."""
    seen = view.pods.get(flight.preemptor.uid)
    if seen is None:
        return Progress.PENDING  # not in the view yet (a brand-new pod), or deleted (Ledger knows which)
    leaving = all((v := view.pods.get(p.uid)) is None or v.terminating for p in flight.victims)
    if seen.node_name:
        # Bound: its room is counted as a bound pod's now. Bound elsewhere, the answer was not
        # taken; bound there with victims still live (the watch shows the scheduler's deletions
        # before its binding), they were not deleted for it.
        return Progress.CARRIED_OUT if seen.node_name == flight.node and leaving else Progress.OTHERWISE
    if seen.nominated_node_name == flight.node:
        return Progress.CARRIED_OUT if leaving else Progress.PENDING
    # Nominated to a node it was not nominated to when reprieve answered: the scheduler chose
    # another node (an older nomination, still shown, is not news).
    if seen.nominated_node_name not in (None, flight.preemptor.nominated_node_name):
        return Progress.OTHERWISE
    return Progress.PENDING
