"""A burst of preemptions through a real kube-scheduler, as issue 9 measured it.

Nodes of 32 cpu, each full of four 8-cpu priority-0 fillers (placed with ``nodeName``, no
scheduler involved), then N priority-1000 8-cpu preemptors created together as one wave: each
needs exactly one victim. Used by the end-to-end tests (tests/e2e/test_bursts.py, and the queue
policy and shadow-mode modules), which assert the counts, and by ``bench/burst.py``, which
reports the times side by side with stock.

What is measured, and why that way:

- **seconds**: from just before the first preemptor's create call until a pod watch has seen
  the last preemptor bound (``spec.nodeName``). The watch is open before the wave starts.
- **preemptions**: the preemptions the scheduler actuated for the burst's pods, one per
  ``"the target node for the preemption is determined"`` line of its log (-v=2 and up; the
  harness runs -v=4). kube-scheduler (v1.36.3 and v1.37.2) writes that line in ``Evaluator.Preempt``
  (pkg/scheduler/framework/preemption/preemption.go) right before actuating the chosen
  candidate, after the extender's answer was applied; a preemptor that has to preempt again
  counts again, and ``preempted again`` counts the preemptors that did.
- **deletions**: the victims the scheduler deleted, one per ``"Preemptor Pod preempted victim
  Pod"`` line. ``Executor.PreemptPod`` (executor.go) writes it after its DELETE succeeded, just
  before it records the victim's ``Preempted`` event, so this is the count of those events,
  exactly (core/v1 Events may be aggregated). A victim deleted for two preemptions counts
  twice. Reported, not asserted: the scheduler deletes a victim again whenever its informer
  has not yet shown the first deletion and the pod is still needed as a victim (its room is
  also held for the first preemptor), which is harmless; stock did it (5 nodes, 10 preemptors:
  11 deletions of 10 victims in 2 of 7 runs).
- **named again**: victims a preemption named that the scheduler's informer already showed
  terminating (``prepareCandidateAsync`` in executor.go skips them: no API call, no event;
  async preemption is on by default since 1.33) or gone. Reported, not asserted: stock does
  it in every burst. On a node where an equal-priority preemptor is already nominated, the
  dry run removes every lower-priority pod, terminating or not, reprieves the most important
  first and may name the terminating pod beside a fresh victim.
- **distinct victims**: fillers deleted (terminating or gone) when the burst ends; nothing else
  deletes them.
- **broken**: preemptors with a preemption whose API calls failed (``"Async Preemption finished completely"``
  with ``result="error"``, executor.go: the API server was down). Their victims may stand,
  and the preemptor stays nominated in the scheduler's memory (the status update failed too),
  so its later proposals on that node count the room for it: seen in the fault suite
  (tests/e2e/test_faults.py) as two-victim proposals, on either side.
- **deleted with no deletion line**: fillers gone or terminating that no deletion line
  names, reported by name: a scheduler SIGKILLed between its DELETE and its log line (the
  leader fault) loses the line.
- **claims**: the scheduler's log lines containing ``claims to preempt`` written during the
  burst: ``HTTPExtender.convertPodUIDToPod`` (pkg/scheduler/extender.go) fails when the
  extender names a victim the scheduler's NodeInfo does not hold, and with ``ignorable: true``
  ``Evaluator.callExtenders`` logs it and drops the extender's answer for that cycle.
- **pending**: preemptors still unbound when the burst gives up.

What the tests assert (``expect_burst``): every preemptor bound and no ``claims`` line; for
reprieve also distinct victims = preemptions = the number of preemptors. A victim promised to
two preemptors leaves one of them without room, and it preempts again. Stock is the control and
is held only to what it controls: its own view lags its deletions and nominations, and now and
then it promises a terminating victim's room twice itself; the preemptor left out preempts
again, sometimes taking a fresh victim (20 nodes, 50 preemptors: 51 preemptions for 50 victims
in 2 of 7 runs here; 52 preemptions and 51 distinct victims in one CI run). Its counts are
recorded and must still be at least one victim per preemptor. reprieve sees the nominations
and terminating victims too, and with its answers in flight it can do better, so it is held to
exactly one preemption and one victim each. Shadow mode answers as stock, so it is held to what
stock is held to.

Only the log written after the wave started is read, and only lines naming the burst's
namespace are counted (except ``claims``, which name the extender and a node, not the pod).
"""

from __future__ import annotations

import re
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from extender.apiserver import ApiError
from tests.e2e.client import Kube, wait_for
from tests.e2e.scenario import REPRIEVE, STOCK, Scenario

FILLER, PREEMPTOR = {"e2e/role": "filler"}, {"e2e/role": "preemptor"}
SCHEDULER_LOGS = {REPRIEVE: "reprieve-scheduler", STOCK: "stock-scheduler"}  # controlplane's process names
WAVE_CONNECTIONS = 16

PREEMPTION_LINE = '"the target node for the preemption is determined"'
DELETION_LINE = '"Preemptor Pod preempted victim Pod"'
NAMED_AGAIN_LINES = ('"Victim Pod is already being deleted, skipping the API call for it"', '"Victim Pod is already deleted"')
CLAIMS = "claims to preempt"
# executor.go, when an asynchronous preemption's API calls failed (the API server down): its
# victims may stand, and the preemptor is left nominated in the scheduler's memory.
BROKEN_LINE = '"Async Preemption finished completely"'
BROKEN = 'result="error"'


@dataclass(frozen=True)
class Shape:
    nodes: int
    preemptors: int
    fillers_per_node: int = 4
    node_cpu: int = 32
    pod_cpu: int = 8
    grace: int = 1  # the fillers' terminationGracePeriodSeconds: how long a victim takes to go

    @property
    def name(self) -> str:
        return f"{self.nodes} nodes, {self.preemptors} preemptors" + (f", victims' grace {self.grace} s" if self.grace != 1 else "")

    @property
    def id(self) -> str:
        return f"{self.nodes}-nodes-{self.preemptors}-preemptors"


# Issue 9's two shapes: the one that double-promised victims and the one that stranded preemptors.
SHAPES = {"20x50": Shape(20, 50), "5x10": Shape(5, 10)}


@dataclass
class Result:
    shape: Shape
    scheduler: str
    seconds: float | None  # None: not every preemptor was bound before the timeout
    bound: int
    pending: list[str]
    preemptions: int
    deletions: int
    distinct_victims: int
    named_again: int
    preempted_again: int
    claims: list[str] = field(default_factory=list)
    started: float = 0.0  # time.monotonic() just before the first preemptor's create call
    # Fillers deleted (terminating or gone) that no deletion line of the scheduler names.
    unlogged: list[str] = field(default_factory=list)
    broken: int = 0  # preemptors with a preemption whose API calls failed (BROKEN_LINE with BROKEN)

    def summary(self) -> str:
        took = f"{self.seconds:.2f} s" if self.seconds is not None else "timed out"
        return (
            f"{self.shape.name} via {self.scheduler}: {self.bound}/{self.shape.preemptors} bound ({took}), "
            f"preemptions {self.preemptions}, deletions {self.deletions}, distinct victims {self.distinct_victims}, "
            f"named again {self.named_again}, preempted again {self.preempted_again}, "
            f"'claims to preempt' lines {len(self.claims)}, pending {len(self.pending)}"
            + (f", broken by API errors {self.broken}" if self.broken else "")
            + (f", deleted with no deletion line: {', '.join(self.unlogged)}" if self.unlogged else "")
        )


def filler(node: int, index: int) -> str:
    """The name of a filler: the node's number, then the pod's on it."""
    return f"filler-{node:02d}-{index}"


def named_in(lines: list[str], namespace: str, key: str, *markers: str) -> list[str]:
    """The names of ``namespace``'s pods a log field ``key`` (``pod``, ``victim``, ...) gives, in
    the lines holding every marker, in order, once per line."""
    pattern = re.compile(rf'{key}="{re.escape(namespace)}/([^"]+)"')
    return [m.group(1) for line in lines if all(k in line for k in markers) for m in [pattern.search(line)] if m]


def prepare(scenario: Scenario, kube: Kube, shape: Shape, *, labels: dict, reprieve_port: int | None) -> None:
    """The full nodes: fillers running, and reprieve's view current (``reprieve_port``: which reprieve)."""
    nodes = [scenario.node(f"n{i:02d}", cpu=str(shape.node_cpu)) for i in range(shape.nodes)]
    spec = scenario.pod_spec(cpu=str(shape.pod_cpu), priority=0, grace=shape.grace)
    bodies = [
        _pod(scenario, filler(i, j), {**FILLER, **labels}, {**spec, "nodeName": node})
        for i, node in enumerate(nodes) for j in range(shape.fillers_per_node)
    ]
    _create_all(kube, scenario.ns, bodies)

    def all_running():
        pods = scenario.pods_with(FILLER)
        return len(pods) == len(bodies) and all(p["status"].get("phase") == "Running" for p in pods) and pods

    for pod in wait_for("fillers running", all_running, timeout=60):
        scenario.saw("pods", pod)
    scenario.synced(port=reprieve_port)


def burst(
    scenario: Scenario,
    shape: Shape,
    scheduler: str,
    *,
    log: str | tuple[str, ...] | None = None,
    labels: dict | None = None,
    reprieve_port: int | None = None,
    timeout: float = 60,
    during: Callable[[], None] | None = None,
) -> Result:
    """Prepare the nodes, send the wave through ``scheduler`` and measure it (``log``: the
    scheduler's process name in the control plane, if not one of the two it always runs, or the
    names of several that schedule under one name, one after another (leader election);
    ``labels``: on fillers and preemptors alike; ``during``: called once the preemptors are
    created, with the wave under way and its clock running, as tests/e2e/test_faults.py
    injects its faults)."""
    labels = labels or {}
    kube = Kube.pooled(str(scenario.plane.kubeconfig), WAVE_CONNECTIONS + 2)  # + the watch's list and stream
    watch = BindWatch(kube, scenario.ns, shape.preemptors)
    try:
        prepare(scenario, kube, shape, labels=labels, reprieve_port=reprieve_port)
        spec = scenario.pod_spec(cpu=str(shape.pod_cpu), priority=1000, scheduler=scheduler, grace=1)
        bodies = [_pod(scenario, f"preemptor-{k:02d}", {**PREEMPTOR, **labels}, spec) for k in range(shape.preemptors)]
        names = (log,) if isinstance(log, str) else log or (SCHEDULER_LOGS[scheduler],)
        marks = {scenario.plane.work / f"{name}.log": (scenario.plane.work / f"{name}.log").stat().st_size for name in names}
        watch.start()
        started = _create_all(kube, scenario.ns, bodies)
        if during is not None:
            during()
        watch.all_bound.wait(timeout)
    finally:
        watch.stop()

    standing = {p["metadata"]["name"] for p in scenario.pods_with(FILLER) if not p["metadata"].get("deletionTimestamp")}
    distinct = shape.nodes * shape.fillers_per_node - len(standing)
    victim = f'victim="{scenario.ns}/'

    def logged() -> list[str]:
        return [line for path, mark in marks.items() for line in read_log(path, mark).splitlines()]

    def deletions_logged() -> bool:
        return sum(1 for line in logged() if DELETION_LINE in line and victim in line) >= distinct

    # Only the scheduler deletes fillers, and it logs each deletion right after its DELETE
    # returned: let the log catch up with what the API server shows.
    try:
        wait_for("the scheduler's log of its deletions", deletions_logged, timeout=5)
    except AssertionError:
        pass
    lines = logged()
    preemptors = named_in(lines, scenario.ns, "pod", PREEMPTION_LINE)
    bound = watch.bound_at()
    every = {filler(i, j) for i in range(shape.nodes) for j in range(shape.fillers_per_node)}
    return Result(
        shape=shape,
        scheduler=scheduler,
        seconds=max(bound.values()) - started if len(bound) == shape.preemptors else None,
        bound=len(bound),
        pending=sorted(b["metadata"]["name"] for b in bodies if b["metadata"]["name"] not in bound),
        preemptions=len(preemptors),
        deletions=sum(1 for line in lines if DELETION_LINE in line and victim in line),
        distinct_victims=distinct,
        named_again=sum(1 for line in lines if any(n in line for n in NAMED_AGAIN_LINES) and victim in line),
        preempted_again=sum(1 for name in set(preemptors) if preemptors.count(name) > 1),
        claims=[line for line in lines if CLAIMS in line],
        unlogged=sorted(every - standing - set(named_in(lines, scenario.ns, "victim", DELETION_LINE))),
        broken=len(set(named_in(lines, scenario.ns, "preemptor", BROKEN_LINE, BROKEN))),
        started=started,
    )


def _pod(scenario: Scenario, name: str, labels: dict, spec: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": scenario.ns, "labels": labels}, "spec": spec}


def _create_all(kube: Kube, namespace: str, bodies: list[dict]) -> float:
    """Create the pods together, over connections opened beforehand; returns the monotonic time
    just before the first create call."""
    path = kube.collection("Pod", namespace)
    # The Priority admission plugin may not know a brand-new PriorityClass yet: a dry run first.
    wait_for("pods admitted", lambda: _admitted(kube, path, bodies[0]), timeout=15)
    with ThreadPoolExecutor(WAVE_CONNECTIONS) as pool:
        list(pool.map(lambda _: kube.get_obj("Namespace", namespace), range(WAVE_CONNECTIONS)))
        started = time.monotonic()
        list(pool.map(lambda body: kube.request("POST", path, body), bodies))
    return started


class BindWatch(threading.Thread):
    """Watches the namespace's preemptors and notes when each is first seen bound."""

    def __init__(self, kube: Kube, namespace: str, expected: int) -> None:
        super().__init__(name="burst-bind-watch", daemon=True)
        self._kube, self._path, self._expected = kube, kube.collection("Pod", namespace), expected
        self._selector = ",".join(f"{k}={v}" for k, v in PREEMPTOR.items())
        self._bound: dict[str, float] = {}
        self._lock = threading.Lock()
        self._connected = threading.Event()
        self._stopping = threading.Event()
        self.all_bound = threading.Event()

    def start(self) -> None:
        super().start()
        if not self._connected.wait(15):
            raise AssertionError("the burst's pod watch did not connect in 15 s")

    def run(self) -> None:
        while not self._stopping.is_set():
            try:
                listed = self._kube.request("GET", self._path, params={"labelSelector": self._selector})
                for pod in listed.get("items") or ():
                    self.saw(pod)
                params = {"labelSelector": self._selector, "resourceVersion": listed["metadata"]["resourceVersion"], "timeoutSeconds": 600}
                for event in self._kube.watch(self._path, params, read_timeout=30, on_connect=self._connected.set):
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self.saw(event["object"])
            except Exception:  # closed by stop(), or a quiet or broken stream: list and watch again
                self._stopping.wait(0.2)

    def saw(self, pod: dict) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            with self._lock:
                self._bound.setdefault(pod["metadata"]["name"], time.monotonic())
                if len(self._bound) >= self._expected:
                    self.all_bound.set()

    def stop(self) -> None:
        """Ends the watch and closes the client (it is the burst's own)."""
        self._stopping.set()
        self._kube.close()
        if self.is_alive():
            self.join(5)

    def bound_at(self) -> dict[str, float]:
        with self._lock:
            return dict(self._bound)


def expect_burst(result: Result, *, exact: bool) -> None:
    """What every burst test asserts: all bound and no answer the scheduler rejected; with
    ``exact`` (reprieve) one preemption and one distinct victim per preemptor, else (stock, the
    control) at least one distinct victim per preemptor."""
    n = result.shape.preemptors
    assert not result.pending, f"preemptors never bound: {result.pending}; {result.summary()}"
    assert not result.claims, "the scheduler rejected the extender's answer:\n" + "\n".join(result.claims[:5])
    if exact:
        assert result.distinct_victims == n, result.summary()
        assert result.preemptions == n, result.summary()
    else:
        assert result.distinct_victims >= n, result.summary()


def _admitted(kube: Kube, path: str, body: dict) -> bool:
    try:
        kube.request("POST", path, body, params={"dryRun": "All"})
    except ApiError as exc:
        if exc.status == 403 and "PriorityClass" in str(exc):
            return False
        raise
    return True


def read_log(path: Path, offset: int) -> str:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


def spread(values: list[float]) -> str:
    """min / median / max, for the benchmark's table."""
    if not values:
        return "-"
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"
