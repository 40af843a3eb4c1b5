"""kube-scheduler + reprieve pairs whose reprieve sees the cluster late on purpose.

Each pair is one more kube-scheduler (its own ``schedulerName``) whose extender is one more
reprieve started with ``--fault-watch-delay``: every watch event is applied that many seconds
after it arrives, so the scheduler's view runs ahead of reprieve's by at least that much, as a
loaded reprieve's can (docs/upstream-semantics.md). A test sends pods to a pair by giving them
its scheduler's name. Pairs start on first use and stop with the session (the plane fixture).
"""

from __future__ import annotations

import json

from tests.ports import free_port

DELAYS = (0.5, 2.0)


def scheduler_name(delay: float) -> str:
    return f"reprieve-lagged-{int(delay * 1000)}ms"


class LaggedPairs:
    def __init__(self, plane) -> None:
        self.plane = plane
        self.ports: dict[float, int] = {}

    def scheduler(self, delay: float) -> str:
        """The name of the scheduler whose reprieve lags by ``delay`` seconds (started if need be)."""
        name = scheduler_name(delay)
        if delay not in self.ports:
            port = free_port()
            self.plane.start_reprieve(f"reprieve-{name}", port, ("--fault-watch-delay", str(delay)))
            self.plane.start_scheduler(name, self.plane.scheduler_config(name, port), free_port())
            self.ports[delay] = port
        return name

    def decisions(self, delay: float, verb: str, pod_key: str) -> list[dict]:
        """The lagged reprieve's decision log lines for one pod and verb."""
        log = self.plane.log(f"reprieve-{scheduler_name(delay)}")
        lines = [json.loads(l) for l in log.splitlines() if l.startswith("{")]
        return [l for l in lines if l.get("logger") == "reprieve.decisions" and l["msg"] == verb and l.get("pod") == pod_key]

    def stop(self) -> None:
        for delay in self.ports:
            name = scheduler_name(delay)
            self.plane.stop_process(name)
            self.plane.stop_process(f"reprieve-{name}")
