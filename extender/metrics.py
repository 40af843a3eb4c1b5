"""Prometheus metrics, one registry per app so that tests and apps never share counters.

Every layer above it counts into it (live/, events/, serving/), so it sits near the bottom, beside config
(docs/layout.md, "Layers").

docs/observability.md lists every metric with its labels and meaning. Labels take values
from small fixed sets (verbs, outcomes, policy.causes, QoS classes, priority bands): never
pod or node names.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from policy.causes import Cause, Refusal

# Filter and prioritize should answer in well under 5 ms; preempt in under 25 ms. 2 s is the
# httpTimeout of the shipped scheduler configuration: slower answers were thrown away.
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 2.5)

VERBS = ("filter", "prioritize", "preempt")

# reprieve_decisions_total{outcome}: what each verb decided, from a ready view.
OUTCOMES = {
    "filter": ("passed", "rejected"),  # every node passed / at least one rejected
    "prioritize": ("all equal", "ranked"),  # the scores leave the ranking alone / change it
    # nodes offered / none considered / none left / none answerable (the scheduler's own choice stands)
    "preempt": ("answered", "refused", "no candidate", "deferred"),
}

# reprieve_fallbacks_total{cause}: why reprieve left (part of) an answer to the scheduler.
NOT_READY = "not ready"
FALLBACKS = {
    "filter": (NOT_READY, Cause.UNKNOWN_NODE.value),
    "prioritize": (NOT_READY, Cause.UNKNOWN_NODE.value),
    "preempt": (
        NOT_READY,
        Cause.UNKNOWN_NODE.value,
        Cause.UNKNOWN_VICTIM.value,
        Cause.UNMODELLED.value,
        Cause.SCHEDULER_SEES_LESS.value,
        Cause.SCHEDULER_NEWER.value,
    ),
}

# reprieve_answers_dropped_total{verb, reason}: answers whose caller had gone when they were
# ready (extender.serving.app.caller), so that nothing was recorded for them.
CLOSED = "connection closed"
PAST_TIMEOUT = "past httpTimeout"
CALLER_GONE = (CLOSED, PAST_TIMEOUT)

# reprieve_restart_in_flight{what}: preemptions under way that reprieve's first view showed.
UNDER_WAY = ("pods nominated", "victims terminating")

# reprieve_events_total{reason}: the Events reprieve records (extender.events.notes).
EVENT_REASONS = ("Preempting", "ChosenForPreemption", "ShadowPreemption", "PreemptAnswerDropped", "StartedMidPreemption")
# reprieve_events_dropped_total{cause}: why an Event was not written.
EVENT_DROPS = ("queue full", "rate limited", "apiserver slow", "apiserver error")

# Victims by priority band. Band edges are the API's own landmarks: 0 is what a pod without
# a PriorityClass gets, 1,000,000,000 is the highest value a user-defined PriorityClass may
# have, and only the built-in system-*-critical classes lie above it. Between them, one band
# per factor of 1000, so that the classes of any scheme (10/20/30 or 1000/5000/100000) land in
# few bands and widely different ones apart.
PRIORITY_BANDS = (
    ("negative", -1),
    ("0", 0),
    ("1-999", 999),
    ("1000-999999", 999_999),
    ("1000000-1000000000", 1_000_000_000),
    ("system", 2**31 - 1),
)


# reprieve_connections_dropped_total{reason} (extender.serving.connection, admission).
DROP_REASONS = (
    "per-client limit",
    "connection limit",
    "shutting down",
    "TLS handshake",
    "header timeout",
    "body timeout",
    "response timeout",
    "malformed HTTP",
    "body too large",
    "buffer limit",
)


def priority_band(priority: int) -> str:
    return next((band for band, top in PRIORITY_BANDS if priority <= top), PRIORITY_BANDS[-1][0])


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("reprieve_requests", "Extender requests by verb and HTTP status.", ["verb", "code"], registry=r)
        self.latency = Histogram(
            "reprieve_request_duration_seconds", "Time to answer an extender request.", ["verb"], buckets=_BUCKETS, registry=r
        )
        self.not_ready = Counter(
            "reprieve_not_ready_answers", "Requests answered with the safe answer because the cluster view was not ready.", ["verb"], registry=r
        )
        self.decisions = Counter(
            "reprieve_decisions",
            "Answers decided from a ready view, by verb and outcome; refusal says why preempt refused.",
            ["verb", "outcome", "refusal"],
            registry=r,
        )
        self.disagreements = Counter(
            "reprieve_disagreements",
            "Answers in which reprieve's decision differs from the scheduler's own: changed it (mode enforce) or would have (mode shadow).",
            ["verb", "mode"],
            registry=r,
        )
        self.fallbacks = Counter(
            "reprieve_fallbacks",
            "Answers in which reprieve left the decision, for some node or all of them, to the scheduler, by cause.",
            ["verb", "cause"],
            registry=r,
        )
        self.filter_nodes = Counter(
            "reprieve_filter_nodes", "Nodes judged by filter, by result.", ["result"], registry=r
        )
        self.preempt_nodes = Counter(
            "reprieve_preempt_nodes", "Candidate nodes judged by preempt, by verdict and cause.", ["verdict", "cause"], registry=r
        )
        self.victims = Counter(
            "reprieve_victims",
            "Victims on the node reprieve ranks first in its preempt answer, by QoS class and priority band.",
            ["qos", "priority_band"],
            registry=r,
        )
        self.pdb_violations = Counter(
            "reprieve_pdb_violations",
            "PodDisruptionBudget violations a preemption costs, for answers that offer a node: the fewest on any "
            "node the scheduler proposed (stock), or on any node in reprieve's answer.",
            ["source"],
            registry=r,
        )
        self.answers_dropped = Counter(
            "reprieve_answers_dropped",
            "Answers decided after their caller had gone (its connection closed, or the request older than the "
            "scheduler's httpTimeout): not recorded in flight, by verb and reason.",
            ["verb", "reason"],
            registry=r,
        )
        self.mode = Gauge("reprieve_mode", "1 for the mode reprieve runs in (enforce or shadow).", ["mode"], registry=r)
        self.ready = Gauge("reprieve_ready", "1 while the cluster view is ready (/readyz answers 200), else 0.", registry=r)

        # The live cache (extender.live).
        self.cache_objects = Gauge("reprieve_cache_objects", "Objects in the live view, by kind.", ["kind"], registry=r)
        self.cache_events = Counter("reprieve_cache_events", "Watch events applied, by kind.", ["kind"], registry=r)
        self.cache_bookmarks = Counter("reprieve_cache_bookmarks", "Watch bookmarks received, by kind.", ["kind"], registry=r)
        self.cache_relists = Counter("reprieve_cache_relists", "Full lists (startup and after 410 Gone), by kind.", ["kind"], registry=r)
        self.cache_watch_restarts = Counter(
            "reprieve_cache_watch_restarts", "Watches that failed and were restarted, by kind.", ["kind"], registry=r
        )
        self.cache_kind_watched = Gauge(
            "reprieve_cache_kind_watched",
            "1 while an optional kind (a gang PodGroup kind) is served and watched, 0 while it is not served or not readable.",
            ["kind"],
            registry=r,
        )
        self.cache_staleness = Gauge(
            "reprieve_cache_staleness_seconds", "How long the longest-broken kind has been out of sync (0: in sync).", registry=r
        )
        self.cache_event_lag = Histogram(
            "reprieve_cache_event_lag_seconds", "From a watch event's arrival to the view that includes it.", buckets=_BUCKETS, registry=r
        )
        self.cache_lag = Gauge(
            "reprieve_cache_lag_seconds",
            "How long the oldest watch event that has arrived but is not yet in the published view has waited (0: none).",
            registry=r,
        )
        self.cache_publish_seconds = Histogram(
            "reprieve_cache_publish_seconds", "Time to build a new immutable view.", buckets=_BUCKETS, registry=r
        )

        # Preemptions under way in the cluster (extender.state.preemptions).
        self.nominated_oldest = Gauge(
            "reprieve_nominated_oldest_seconds",
            "How long the oldest nomination the view shows (a pending pod's nominatedNodeName) has stood, "
            "counted from the first scrape that saw it (0: none).",
            registry=r,
        )
        self.restart_in_flight = Gauge(
            "reprieve_restart_in_flight",
            "Preemptions under way in the cluster when reprieve's first view was published, known from the view "
            "alone (no ledger survives a restart): pods nominated, victims terminating.",
            ["what"],
            registry=r,
        )
        self.restart_in_flight_timestamp = Gauge(
            "reprieve_restart_in_flight_timestamp_seconds",
            "When (seconds since the epoch) reprieve's first view showed preemptions under way (0: it showed none).",
            registry=r,
        )

        # Kubernetes Events (extender.events).
        self.events = Counter(
            "reprieve_events", "Kubernetes Events reprieve recorded (before any was dropped), by reason.", ["reason"], registry=r
        )
        self.events_dropped = Counter(
            "reprieve_events_dropped", "Kubernetes Events dropped instead of written, by cause.", ["cause"], registry=r
        )
        self.events_writes = Counter(
            "reprieve_events_writes",
            "Event writes the API server accepted: create (a new Event) or patch (a series' count).",
            ["operation"],
            registry=r,
        )
        self.events_queued = Gauge("reprieve_events_queued", "Kubernetes Events waiting to be written.", registry=r)
        # The server (extender.serving.server, docs/serving.md).
        self.connections = Gauge("reprieve_connections", "Client connections open, by listener (verbs, probes).", ["listener"], registry=r)
        self.dropped = Counter(
            "reprieve_connections_dropped",
            "Connections the server refused or closed early, by reason (a limit, a timeout, a failed TLS handshake, malformed HTTP).",
            ["reason"],
            registry=r,
        )
        self.tls_reloads = Counter(
            "reprieve_tls_reloads", "Serving certificate reloads after its files changed, by result (ok, failed).", ["result"], registry=r
        )

        # Every series an alert or dashboard reads exists from the start, at 0, so that rate()
        # and increase() see the first event.
        for verb in VERBS:
            self.not_ready.labels(verb)
            for outcome in OUTCOMES[verb]:
                if outcome != "refused":
                    self.decisions.labels(verb, outcome, "")
            for cause in FALLBACKS[verb]:
                self.fallbacks.labels(verb, cause)
        for refusal in Refusal:
            if refusal is not Refusal.NONE:
                self.decisions.labels("preempt", "refused", refusal.value)
        for source in ("scheduler", "reprieve"):
            self.pdb_violations.labels(source)
        for reason in CALLER_GONE:
            self.answers_dropped.labels("preempt", reason)
        for what in UNDER_WAY:
            self.restart_in_flight.labels(what)
        for reason in EVENT_REASONS:
            self.events.labels(reason)
        for cause in EVENT_DROPS:
            self.events_dropped.labels(cause)
        for operation in ("create", "patch"):
            self.events_writes.labels(operation)
        for reason in DROP_REASONS:
            self.dropped.labels(reason)
        for result in ("ok", "failed"):
            self.tls_reloads.labels(result)

    def serving(self, *, mode: str, ready: Callable[[], bool]) -> None:
        """Called once by the app: the mode it runs in and how to tell whether it is ready."""
        self.mode.labels(mode).set(1)
        self.ready.set_function(lambda: 1.0 if ready() else 0.0)
        for verb in VERBS:
            self.disagreements.labels(verb, mode)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
