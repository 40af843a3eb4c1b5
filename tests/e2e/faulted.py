"""Waves of preemptions through schedulers of a fault test's own, and the faults put on them
(tests/e2e/test_faults.py, the short versions; bench/faults.py, the whole table: issue 27).

Each wave goes through a ``Rig`` started for it, as tests/e2e/lagged.py does: one more
kube-scheduler under its own ``schedulerName`` whose extender is one more reprieve on its own
port, with the shipped extender stanza (``httpTimeout: 2s``, ``ignorable: true``), so that
killing or stopping that reprieve disturbs no other test; or, ``stock``, the same scheduler
without the extender. For ``leader`` the rig is two such pairs (two stock schedulers) under
leader election, with test_ha.py's short lease. The rig stops when the wave is over.

The faults, struck once a third of the wave's preemptions are actuated (``strike``):

- **kill**: reprieve SIGKILLed, started again ``seconds`` later;
- **stop**: reprieve SIGSTOPped for ``seconds`` (past ``httpTimeout``), then SIGCONTed;
- **refuse**: the scheduler's connections to reprieve refused for ``seconds``: it calls reprieve
  through a relay (tests/e2e/relay.py) that stops listening and closes what it relays, while
  reprieve runs on, its view and answers in flight kept;
- **apiserver**: kube-apiserver stopped abruptly and started again ``seconds`` later (every
  scheduler and reprieve of the control plane lose their watches: the stock rig is under the
  same fault);
- **compact**: the same, and etcd compacted in the gap past every resourceVersion a client has
  seen, so that every watch must relist (410 Gone);
- **leader**: the leading pair (scheduler and reprieve; for stock, the leading scheduler)
  SIGKILLed, as a node failure would; the standby takes the Lease when it lapses.

What a wave reads back, for issue 27's bar (``Outcome``): burst.py's counts (bound, pending,
distinct victims, "claims to preempt"), and every 5xx answer seen from both ends: the
scheduler's ``failed <verb> with extender at URL <url>, code 5xx`` log lines (``HTTPExtender.send``,
pkg/scheduler/extender.go, wrapped in the "returned error and has ignorable flag set" line the
scheduler writes when it goes on without the extender), reprieve's ``unhandled error`` log lines
(the one path to a 500, extender/serving/app.py) over every run of its process, and
``reprieve_requests_total`` with a 5xx code from those running at the end. Also recorded, not
asserted: the calls the scheduler went on without reprieve for (refused, timed out), the answers
reprieve gave as not ready, the answers it dropped because their caller had gone.
"""

from __future__ import annotations

import os
import re
import signal
import time
import urllib.request
import uuid
from dataclasses import dataclass, field

import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.burst import PREEMPTION_LINE, Result, Shape, burst
from tests.e2e.client import wait_for
from tests.e2e.controlplane import SCHEDULER_CONFIG
from tests.e2e.relay import Relay
from tests.e2e.scenario import REPRIEVE, STOCK, Scenario
from tests.ports import free_port

FAULTS = ("kill", "stop", "refuse", "apiserver", "compact", "leader")
NONE = "none"  # no fault at all: stock's wave for the faults of reprieve's own (bench/faults.py)
# Faults stock kube-scheduler can be put under too; the others are reprieve's own.
STOCK_TOO = ("apiserver", "compact", "leader")
IGNORED = "returned error and has ignorable flag set"
SERVER_ERROR = re.compile(r"with extender at URL \S+, code 5\d\d")
LEASE_NS = "default"
# test_ha.py's: short enough for a test (the chart's defaults are kube-scheduler's own, 15s/10s/2s).
LEASE_SECONDS, RENEW_SECONDS, RETRY_SECONDS = 4, 3, 0.5


def scheduler_name(fault: str, *, stock: bool = False) -> str:
    return f"faults-{fault}" + ("-stock" if stock else "")


def reprieve_names() -> list[str]:
    """Every reprieve process a rig may run (the e2e conftest attaches their decisions on failure)."""
    return [f"reprieve-{scheduler_name(f)}{m}" for f in FAULTS for m in (("-a", "-b") if f == "leader" else ("",))]


class Rig:
    """The scheduler(s), and reprieve(s), one wave goes through."""

    def __init__(self, plane, fault: str, *, stock: bool = False) -> None:
        self.plane, self.fault, self.stock = plane, fault, stock
        self.scheduler = scheduler_name(fault, stock=stock)  # the pods' spec.schedulerName
        members = ("-a", "-b") if fault == "leader" else ("",)
        self.schedulers = [f"{self.scheduler}{m}" for m in members]  # process names
        self.reprieves: dict[str, int] = {}  # process name -> port, while running
        self.killed: list[str] = []  # processes killed for good (their logs still count)
        self.relay: Relay | None = None
        self.paused = False
        self.fault_ended: float | None = None  # time.monotonic() when the fault was over (strike)
        # Where each process's log stood when the rig started: a log is appended to by every
        # process of that name (another repetition's rig, a restarted reprieve), and only this
        # rig's lines count.
        self._marks: dict[str, int] = {}
        try:
            for process in self.schedulers:
                self._mark(process, f"reprieve-{process}")
                self.plane.start_scheduler(process, self._config(process), free_port())
            if fault == "leader":
                wait_for(f"a leader among {self.schedulers}", self.leader, timeout=30)
        except BaseException:
            self.stop()
            raise

    def _mark(self, *processes: str) -> None:
        for process in processes:
            path = self.plane.work / f"{process}.log"
            self._marks[process] = path.stat().st_size if path.exists() else 0

    def _config(self, process: str):
        election = self._election() if self.fault == "leader" else None
        if self.stock:
            config = {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "clientConnection": self.plane.client_connection(),
                "leaderElection": election or {"leaderElect": False},
                "profiles": [{"schedulerName": self.scheduler}],
            }
            path = self.plane.work / f"{process}-config.yaml"
            path.write_text(yaml.safe_dump(config, sort_keys=False))
            return path
        reprieve, port = f"reprieve-{process}", free_port()
        self.plane.start_reprieve(reprieve, port)
        self.reprieves[reprieve] = port
        if self.fault == "refuse":
            self.relay = Relay(port)
            port = self.relay.port
        return self.plane.scheduler_config(self.scheduler, port, leader_election=election)

    def _election(self) -> dict:
        """The shipped leader election stanza, with this rig's Lease and test_ha.py's timings."""
        shipped = yaml.safe_load(SCHEDULER_CONFIG.read_text())["leaderElection"]
        return {
            **shipped, "resourceName": self.scheduler, "resourceNamespace": LEASE_NS, "leaseDuration": f"{LEASE_SECONDS}s",
            "renewDeadline": f"{RENEW_SECONDS}s", "retryPeriod": f"{int(RETRY_SECONDS * 1000)}ms",
        }

    def leader(self) -> str | None:
        """The scheduler process that holds the Lease (client-go's elector logs it), if any is alive."""
        for process in self.schedulers:
            if process not in self.killed and any(
                "Successfully acquired lease" in line and f'"{LEASE_NS}/{self.scheduler}"' in line
                for line in self._lines((process,))
            ):
                return process
        return None

    # ------------------------------------------------------------------ the fault

    def strike(self, namespace: str, preemptors: int, seconds: float, notes: list[str]) -> None:
        """The fault, once a third of the wave's preemptions are actuated; ``notes`` says what happened."""
        if self.fault == NONE:
            notes.append("no fault")
            return
        try:
            wait_for("a third of the wave's preemptions", lambda: self.preemptions(namespace) >= preemptors // 3, timeout=30, interval=0.01)
        except AssertionError:
            pass  # strike anyway: the counts say where the wave was
        notes.append(f"struck after {self.preemptions(namespace)} preemptions")
        fault = self.fault
        if fault == "kill":
            (reprieve, port), = self.reprieves.items()
            self.plane.kill_process(reprieve)
            time.sleep(seconds)
            started = time.monotonic()
            self.plane.start_reprieve(reprieve, port)
            notes.append(f"restarted {seconds:g} s later, ready in {time.monotonic() - started:.2f} s")
            self.fault_ended = time.monotonic()
        elif fault == "stop":
            self._signal(signal.SIGSTOP)
            time.sleep(seconds)
            self._signal(signal.SIGCONT)
            notes.append(f"stopped for {seconds:g} s")
            self.fault_ended = time.monotonic()
        elif fault == "refuse":
            cut = self.relay.refuse()
            time.sleep(seconds)
            self.relay.listen()
            self.fault_ended = time.monotonic()
            notes.append(f"connections refused for {seconds:g} s ({cut} open ones closed)")
        elif fault in ("apiserver", "compact"):
            self.plane.kill_apiserver()
            time.sleep(seconds)
            if fault == "compact":
                notes.append(f"etcd compacted at revision {self.plane.compact_etcd(bump=True)}")
            started = time.monotonic()
            self.plane.start_apiserver()
            self.fault_ended = time.monotonic()
            notes.append(f"apiserver down {seconds:g} s, then ready in {time.monotonic() - started:.2f} s")
        elif fault == "leader":
            leader = self.leader()
            self.plane.kill_process(leader)
            self.killed.append(leader)
            if not self.stock:
                self.plane.kill_process(f"reprieve-{leader}")
                self.killed.append(f"reprieve-{leader}")
                del self.reprieves[f"reprieve-{leader}"]
            killed = time.monotonic()
            try:
                wait_for("the standby to take the Lease", self.leader, timeout=LEASE_SECONDS * 4, interval=0.1)
                self.fault_ended = time.monotonic()
                notes.append(f"killed the leader {leader}; the standby led {time.monotonic() - killed:.1f} s later")
            except AssertionError:
                notes.append(f"killed the leader {leader}; no standby took over in {LEASE_SECONDS * 4} s")
        else:
            raise ValueError(f"unknown fault {fault!r}")

    def _signal(self, sig: int) -> None:
        (reprieve,) = self.reprieves
        os.killpg(self.plane.procs[reprieve].pid, sig)
        self.paused = sig == signal.SIGSTOP

    def stop(self) -> None:
        if self.paused:
            self._signal(signal.SIGCONT)
        for process in [*self.schedulers, *self.reprieves]:
            self.plane.stop_process(process)
        if self.relay is not None:
            self.relay.close()
        if self.fault == "leader":
            self.plane.kube.delete("Lease", self.scheduler, LEASE_NS)

    # ------------------------------------------------------------------ reading back

    def _lines(self, processes) -> list[str]:
        """The log lines the processes wrote since the rig started."""
        found = []
        for process in processes:
            path = self.plane.work / f"{process}.log"
            if path.exists():
                with open(path, "rb") as f:
                    f.seek(self._marks.get(process, 0))
                    found += f.read().decode(errors="replace").splitlines()
        return found

    def preemptions(self, namespace: str) -> int:
        """Preemptions the rig's schedulers have actuated so far for pods of ``namespace``."""
        return sum(1 for line in self._lines(self.schedulers) if PREEMPTION_LINE in line and f'pod="{namespace}/' in line)

    def extender_errors(self) -> list[str]:
        """Every call a scheduler went on without reprieve for (refused, timed out, 5xx)."""
        return [line for line in self._lines(self.schedulers) if IGNORED in line]

    def requests(self) -> dict[tuple[str, str], float]:
        """(verb, code) -> answers the reprieves running now counted since they started."""
        return self._sum("reprieve_requests_total", ("verb", "code"))

    def not_ready(self) -> dict[str, float]:
        """verb -> answers given as while not ready (extender.stall's window too)."""
        return {verb: n for (verb,), n in self._sum("reprieve_not_ready_answers_total", ("verb",)).items()}

    def dropped(self) -> dict[str, float]:
        """reason -> preempt answers dropped because their caller had gone."""
        return {reason: n for (reason,), n in self._sum("reprieve_answers_dropped_total", ("reason",)).items()}

    def restart_in_flight(self) -> dict[str, float]:
        """what -> preemptions under way that the running reprieve's first view showed."""
        return {what: n for (what,), n in self._sum("reprieve_restart_in_flight", ("what",)).items()}

    def _sum(self, name: str, labels: tuple[str, ...]) -> dict[tuple[str, ...], float]:
        found: dict[tuple[str, ...], float] = {}
        for port in self.reprieves.values():
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                text = r.read().decode()
            for family in text_string_to_metric_families(text):
                for s in family.samples:
                    if s.name == name and s.value:
                        key = tuple(s.labels[label] for label in labels)
                        found[key] = found.get(key, 0) + s.value
        return found

    def server_errors(self) -> list[str]:
        """Every 5xx answer either end saw (empty: none)."""
        found = [line for line in self.extender_errors() if SERVER_ERROR.search(line)]
        reprieves = [*self.reprieves, *(p for p in self.killed if p.startswith("reprieve-"))]
        found += [line for line in self._lines(reprieves) if "unhandled error" in line]
        found += [f"reprieve_requests_total{{verb={v!r}, code={c!r}}} {n:g}" for (v, c), n in self.requests().items() if c.startswith("5")]
        return found


@dataclass
class Outcome:
    """One wave under one fault, through reprieve or stock."""

    fault: str
    stock: bool
    result: Result
    notes: list[str]
    server_errors: list[str]
    skipped: int  # calls the scheduler went on without reprieve for
    answered: dict[tuple[str, str], float] = field(default_factory=dict)
    not_ready: dict[str, float] = field(default_factory=dict)
    dropped: dict[str, float] = field(default_factory=dict)
    restart_in_flight: dict[str, float] = field(default_factory=dict)
    after_fault: float | None = None  # seconds from the fault's end to the last preemptor bound

    def summary(self) -> str:
        side = "stock" if self.stock else "reprieve"
        text = f"{self.fault} via {side}: {self.result.summary()}; {', '.join(self.notes)}"
        if self.after_fault is not None:
            text += f"; all bound {self.after_fault:.2f} s after the fault was over"
        if not self.stock:
            text += (
                f"; calls the scheduler went on without reprieve for: {self.skipped}; answers of the reprieve(s) running at the end: "
                + ", ".join(f"{v} {c}: {n:g}" for (v, c), n in sorted(self.answered.items()))
                + f"; not ready: {self.not_ready or 0}; dropped: {self.dropped or 0}"
            )
        return text


def wave(plane, fault: str, shape: Shape, *, seconds: float, stock: bool = False, timeout: float = 60) -> Outcome:
    """Start a rig, send ``shape``'s wave through it with ``fault`` struck, read it all back, stop the rig."""
    scenario = Scenario(plane, f"faults-{uuid.uuid4().hex[:8]}")
    rig = None
    try:
        rig = Rig(plane, fault, stock=stock)
        notes: list[str] = []
        port = next(iter(rig.reprieves.values()), None)
        result = burst(
            scenario, shape, rig.scheduler, log=tuple(rig.schedulers), reprieve_port=port, timeout=timeout,
            during=lambda: rig.strike(scenario.ns, shape.preemptors, seconds, notes),
        )
        after = None
        if rig.fault_ended is not None and result.seconds is not None:
            after = max(0.0, result.started + result.seconds - rig.fault_ended)
        return Outcome(
            fault, stock, result, notes, rig.server_errors(), len(rig.extender_errors()),
            rig.requests(), rig.not_ready(), rig.dropped(), rig.restart_in_flight(), after,
        )
    finally:
        if rig is not None:
            rig.stop()
        scenario.cleanup()


def settle(plane, timeout: float = 120) -> None:
    """After an API server restart (the waves' last: each wave's rig has schedulers of its own,
    started after the restart before it): wait until the shared control plane's own schedulers place
    pods again. Their watches relist after the compaction with client-go's backoff, grown while
    the server was down: seen in `make test` (2026-12-06), the reprieve-scheduler's pod watch
    came back 45 s after the restart, and the next module's first pod waited past its 30 s."""
    probe = Scenario(plane, f"settle-{uuid.uuid4().hex[:8]}")
    try:
        probe.node("n1", cpu="4")
        names = {"via-reprieve": REPRIEVE, "via-stock": STOCK}
        for name, scheduler in names.items():
            probe.pod(name, cpu="100m", scheduler=scheduler)
        for name in names:
            probe.running(name, timeout=timeout)
    finally:
        probe.cleanup()
