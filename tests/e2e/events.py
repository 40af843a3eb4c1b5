"""Reading reprieve's Events back from the API server, as `kubectl describe pod` does."""

from __future__ import annotations

import datetime

from tests.e2e.client import Kube


def reprieve_events(kube: Kube, ns: str) -> list[dict]:
    """Every events.k8s.io/v1 Event reprieve wrote in ``ns``."""
    return [e for e in kube.list("EventV1", ns) if e.get("reportingController") == "reprieve"]


def described(kube: Kube, pod: dict) -> list[dict]:
    """The core/v1 Events `kubectl describe pod` lists for ``pod``: its search, by involvedObject."""
    meta = pod["metadata"]
    selector = (
        f"involvedObject.name={meta['name']},involvedObject.namespace={meta['namespace']},"
        f"involvedObject.kind=Pod,involvedObject.uid={meta['uid']}"
    )
    return kube.list("Event", meta["namespace"], fieldSelector=selector)


def describe_events(events: list[dict]) -> str:
    """The Events section of `kubectl describe pod` (kubectl's DescribeEvents: Type, Reason, Age,
    From, Message), for the test's report and docs/observability.md."""
    now = datetime.datetime.now(datetime.UTC)

    def age(e: dict) -> str:
        at = datetime.datetime.fromisoformat((e.get("eventTime") or e["firstTimestamp"]).replace("Z", "+00:00"))
        return f"{max(0, int((now - at).total_seconds()))}s"

    rows = [("Type", "Reason", "Age", "From", "Message"), ("----", "------", "----", "----", "-------")]
    for e in sorted(events, key=lambda e: e.get("eventTime") or e.get("firstTimestamp") or ""):
        source = (e.get("source") or {}).get("component") or e.get("reportingComponent", "")
        rows.append((e["type"], e["reason"], age(e), source, e["message"].strip()))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "Events:\n" + "\n".join("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[4] for r in rows)
