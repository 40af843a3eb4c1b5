"""Prometheus metrics, one registry per app so that tests and apps never share counters."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# Filter and prioritize should answer in well under 5 ms; preempt in under 25 ms.
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


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
        self.filter_nodes = Counter(
            "reprieve_filter_nodes", "Nodes judged by filter, by result.", ["result"], registry=r
        )
        self.preempt_nodes = Counter(
            "reprieve_preempt_nodes", "Candidate nodes judged by preempt, by verdict.", ["verdict"], registry=r
        )
        self.victims = Counter("reprieve_victims", "Victims named on chosen nodes, by QoS class.", ["qos"], registry=r)
        self.pdb_violations = Counter(
            "reprieve_pdb_violations",
            "PodDisruptionBudget violations on nodes: proposed by the scheduler, or in reprieve's answer.",
            ["source"],
            registry=r,
        )

        # The live cache (extender.live).
        self.cache_objects = Gauge("reprieve_cache_objects", "Objects in the live view, by kind.", ["kind"], registry=r)
        self.cache_events = Counter("reprieve_cache_events", "Watch events applied, by kind.", ["kind"], registry=r)
        self.cache_bookmarks = Counter("reprieve_cache_bookmarks", "Watch bookmarks received, by kind.", ["kind"], registry=r)
        self.cache_relists = Counter("reprieve_cache_relists", "Full lists (startup and after 410 Gone), by kind.", ["kind"], registry=r)
        self.cache_watch_restarts = Counter(
            "reprieve_cache_watch_restarts", "Watches that failed and were restarted, by kind.", ["kind"], registry=r
        )
        self.cache_staleness = Gauge(
            "reprieve_cache_staleness_seconds", "How long the longest-broken kind has been out of sync (0: in sync).", registry=r
        )
        self.cache_event_lag = Histogram(
            "reprieve_cache_event_lag_seconds", "From a watch event's arrival to the view that includes it.", buckets=_BUCKETS, registry=r
        )
        self.cache_publish_seconds = Histogram(
            "reprieve_cache_publish_seconds", "Time to build a new immutable view.", buckets=_BUCKETS, registry=r
        )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
