"""A kube-scheduler + reprieve pair of one fault test's own (tests/e2e/test_faults.py).

Each fault test starts its own pair, as tests/e2e/lagged.py does (one more kube-scheduler under
its own ``schedulerName``, whose extender is one more reprieve on its own port, with the shipped
extender stanza: ``httpTimeout: 2s``, ``ignorable: true``), so that killing or stopping that
reprieve disturbs no other test. The pair stops when the test ends.

What the pair reads back, for the fault suite's bar:

- **server errors**: every 5xx answer, seen from both ends. The scheduler's side: its log's
  ``failed <verb> with extender at URL <url>, code 5xx`` lines (``HTTPExtender.send``,
  pkg/scheduler/extender.go, wrapped in the "returned error and has ignorable flag set" line
  the scheduler writes when it goes on without the extender). reprieve's side: its
  ``unhandled error`` log lines (the one path to a 500, extender/serving/app.py) over every run
  of the process, and ``reprieve_requests_total`` with a 5xx code from the one running now.
- **extender errors**: every call the scheduler went on without reprieve for (refused while it
  was down, timed out while it was stopped), recorded, not asserted.
"""

from __future__ import annotations

import os
import re
import signal
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.burst import PREEMPTION_LINE
from tests.ports import free_port

FAULTS = ("kill", "stop")
IGNORED = "returned error and has ignorable flag set"
SERVER_ERROR = re.compile(r"with extender at URL \S+, code 5\d\d")


def scheduler_name(fault: str) -> str:
    return f"faults-{fault}"


def reprieve_name(fault: str) -> str:
    return f"reprieve-{scheduler_name(fault)}"


class FaultPair:
    def __init__(self, plane, fault: str) -> None:
        self.plane = plane
        self.scheduler = scheduler_name(fault)
        self.reprieve = reprieve_name(fault)
        self.port = free_port()
        self.paused = False
        plane.start_reprieve(self.reprieve, self.port)
        plane.start_scheduler(self.scheduler, plane.scheduler_config(self.scheduler, self.port), free_port())

    # ------------------------------------------------------------------ faults

    def kill(self) -> None:
        """SIGKILL reprieve (and nothing else of the pair)."""
        self.plane.kill_process(self.reprieve)

    def restart(self) -> float:
        """Start reprieve again on its port; returns the seconds until its /readyz said 200."""
        started = time.monotonic()
        self.plane.start_reprieve(self.reprieve, self.port)
        return time.monotonic() - started

    def pause(self) -> None:
        os.killpg(self.plane.procs[self.reprieve].pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        os.killpg(self.plane.procs[self.reprieve].pid, signal.SIGCONT)
        self.paused = False

    def stop(self) -> None:
        if self.paused and self.reprieve in self.plane.procs:
            self.resume()
        self.plane.stop_process(self.scheduler)
        self.plane.stop_process(self.reprieve)

    # ------------------------------------------------------------------ reading back

    def preemptions(self, namespace: str) -> int:
        """Preemptions the pair's scheduler has actuated so far for pods of ``namespace``."""
        return sum(1 for line in self.plane.log(self.scheduler).splitlines() if PREEMPTION_LINE in line and f'pod="{namespace}/' in line)

    def extender_errors(self) -> list[str]:
        return [line for line in self.plane.log(self.scheduler).splitlines() if IGNORED in line]

    def requests(self) -> dict[tuple[str, str], float]:
        """(verb, code) -> answers the running reprieve counted since it started."""
        return {(s.labels["verb"], s.labels["code"]): s.value for s in self._samples("reprieve_requests_total")}

    def not_ready(self) -> dict[str, float]:
        """verb -> answers the running reprieve gave as while not ready (extender.stall's window too)."""
        return {s.labels["verb"]: s.value for s in self._samples("reprieve_not_ready_answers_total")}

    def _samples(self, name: str) -> list:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            text = r.read().decode()
        return [s for f in text_string_to_metric_families(text) for s in f.samples if s.name == name and s.value]

    def server_errors(self) -> list[str]:
        """Every 5xx answer either end saw (empty: none)."""
        found = [line for line in self.extender_errors() if SERVER_ERROR.search(line)]
        found += [line for line in self.plane.log(self.reprieve).splitlines() if "unhandled error" in line]
        found += [f"reprieve_requests_total{{verb={v!r}, code={c!r}}} {n:g}" for (v, c), n in self.requests().items() if c.startswith("5")]
        return found
