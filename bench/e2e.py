"""The real kube-scheduler, side by side: stock, a do-nothing extender, and reprieve (issue 11, point 5).

    python bench/e2e.py [--nodes 500] [--pods 2000] [--repetitions 1] [--runs ...] [--profile PY-SPY]

A scheduler_perf-style harness (upstream's test/integration/scheduler_perf, PreemptionBasic and
SchedulingBasic) on the local control plane of the end-to-end tests (tests/e2e/controlplane.py:
etcd, kube-apiserver, kube-controller-manager; no kubelet, as in scheduler_perf: bound pods stay
Pending, so each pod is exactly three events to every watcher: created, bound, deleted). Started once:
N hollow nodes of 8 cpu, 64Gi and 110 pods; reprieve (``serve --kubeconfig``, no policy) on
127.0.0.1:8888 watching everything; a do-nothing extender (bench/noop_extender.py) on reprieve's
web stack. Then, per run, a namespace of its own and a kube-scheduler of its own, started for
the run and stopped after it (so its metrics are the run's), at ``-v=2`` with client qps/burst
1000 (the shipped 50/100 caps every configuration at ~52 pods/s and hides the extender):

- stock: ``default-scheduler``, no extender;
- noop: the do-nothing extender with every verb (filter, prioritize, preempt);
- with ``--floors``, the floors of the stanzas: noop/filter+preempt (the do-nothing extender
  with the shipped verbs), and noop-go, noop-go/filter+preempt: a do-nothing extender in Go's
  standard library (bench/noop_go, built here with ``go build``), what any extender pays on
  this machine with no Python in it; noop-go/scores, the same with every verb but a score of 0
  for every node in prioritize's answer (the scheduler's cost of reading scores);
- reprieve/<stanza>: reprieve with every verb (``full``) or with verbs left out (``preempt``,
  ``filter+preempt``, the shipped stanza, ``prioritize+preempt``); the rest of the stanza as
  shipped (with prioritize, ``weight: 1``).

Workloads:

- basic: ``--pods`` one-cpu pods that fit (at 2,000 on 500 nodes, half full);
- preemption: every node full of four 1900m priority-0 pods (bound directly, not scheduled),
  then one 6-cpu priority-10 pod per node, each needing three victims (upstream's
  PreemptionBasic at twice the node size).

Modes: ``during`` starts the scheduler, then creates the pods (16 client threads);
``before`` creates them, waits until reprieve has seen them all, then starts the scheduler.
Repetitions are interleaved: each repetition runs every configuration once per workload and
mode, in an order rotated by one each repetition, so load from the rest of the machine falls
on all alike.

Measured, per run: pods/s (before: pods-1 over first to last bind; during: pods over first
create to last bind), seconds to place every pod (from the first create, or from the
scheduler answering /healthz), victims (pods of the namespace deleted), the scheduler's
``scheduling_algorithm_duration_seconds`` mean (extender calls are inside it) and its
preemption attempts, and the CPU seconds (utime+stime from /proc/PID/stat, the process
and any children) of reprieve, of the do-nothing extender and of the scheduler, per measured pod:
for reprieve and the do-nothing extender, from before the first measured pod is created
until every pod is bound, reprieve's view has caught up, and the run's pods are deleted and
gone from reprieve's store (the pod's whole life, watches included). While stock or the
do-nothing extender schedules, reprieve's CPU is its watch cost alone.

``--profile PY-SPY`` adds, before the measured runs, one unmeasured run per listed configuration
(of ``--profile-run``, basic:before unless told) with py-spy sampling reprieve's worker (``--nonblocking``), and prints where its CPU went by
thread role and by function.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from extender.apiserver import ApiError  # noqa: E402
from tests.e2e.client import Kube, wait_for  # noqa: E402
from tests.e2e.controlplane import OPEN_PATHS, SCHEDULER_CONFIG, ControlPlane, StartupError, build_toolchain, machine  # noqa: E402
from tests.ports import free_port  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
STANZAS = {
    "full": ("filter", "prioritize", "preempt"),
    "preempt": ("preempt",),
    "filter+preempt": ("filter", "preempt"),
    "prioritize+preempt": ("prioritize", "preempt"),
}
NODE_CPU, LOW_CPU, HIGH_CPU = "8", "1900m", "6"
LOW, HIGH = "bench-low", "bench-high"


@dataclasses.dataclass(frozen=True)
class Config:
    label: str
    extender: str | None  # None (stock), "noop", "noop-go" or "reprieve"
    verbs: tuple[str, ...] = ()
    path: str = ""  # the urlPrefix's path


def configs(stanzas: list[str]) -> list[Config]:
    out = [Config("stock", None), Config("noop", "noop", STANZAS["full"])]
    out += [Config(f"reprieve/{s}", "reprieve", STANZAS[s]) for s in stanzas]
    return out


# --floors: what the stanzas cost with nothing decided, in Python (reprieve's stack) and in Go.
FLOORS = [
    Config("noop/filter+preempt", "noop", STANZAS["filter+preempt"]),
    Config("noop-go", "noop-go", STANZAS["full"]),
    Config("noop-go/scores", "noop-go", STANZAS["full"], "/scores"),  # prioritize scores every node 0
    Config("noop-go/filter+preempt", "noop-go", STANZAS["filter+preempt"]),
]
NOOP_GO = ROOT / "bench" / "noop_go"


def build_noop_go(binary: Path) -> Path:
    """``go build`` bench/noop_go into ``binary``: go from $GO, else PATH, else /usr/local/go/bin
    (as tests/e2e/toolchain/build.sh finds it). Raises StartupError saying what failed."""
    go = os.environ.get("GO") or shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go is None:
        raise StartupError("go not found ($GO, PATH, /usr/local/go/bin/go): --floors builds bench/noop_go with it")
    try:
        built = subprocess.run(
            [go, "build", "-o", str(binary), "."], cwd=NOOP_GO, capture_output=True, text=True, timeout=300,
            env={**os.environ, "GOTOOLCHAIN": "local"},  # standard library only: nothing to download
        )
    except subprocess.TimeoutExpired:
        raise StartupError("go build of bench/noop_go took over 300 s") from None
    except OSError as exc:
        raise StartupError(f"cannot run {go} to build bench/noop_go: {exc.strerror}") from None
    if built.returncode != 0:
        raise StartupError(f"go build of bench/noop_go failed:\n{built.stderr.strip()}")
    return binary


@dataclasses.dataclass
class Result:
    config: str
    workload: str
    mode: str
    pods: int
    bound: int
    seconds: float | None  # to place every pod
    pods_per_s: float | None
    victims: int
    preemption_attempts: float | None
    algorithm_ms: float | None  # scheduling_algorithm_duration_seconds mean per attempt
    attempts: float | None
    reprieve_cpu: float  # seconds
    noop_cpu: float
    scheduler_cpu: float
    create_seconds: float

    def summary(self) -> str:
        rate = f"{self.pods_per_s:.0f} pods/s" if self.pods_per_s else "-"
        took = f"{self.seconds:.1f}s" if self.seconds is not None else f"TIMED OUT ({self.bound}/{self.pods} bound)"
        return (
            f"{self.workload}/{self.mode} {self.config}: {took}, {rate}, victims {self.victims}, "
            f"algorithm {self.algorithm_ms or 0:.2f} ms/attempt, reprieve {1000 * self.reprieve_cpu / self.pods:.2f} ms cpu/pod, "
            f"noop {1000 * self.noop_cpu / self.pods:.2f}, scheduler {1000 * self.scheduler_cpu / self.pods:.2f}; "
            f"created in {self.create_seconds:.1f}s"
        )


# ----------------------------------------------------------------- processes


def cpu_seconds(pid: int) -> float:
    """utime+stime of ``pid`` and its live children."""
    total = 0.0
    for p in [pid, *children(pid)]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)
    return total


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


class BenchPlane(ControlPlane):
    """The end-to-end control plane without its two long-running schedulers: a scheduler per run."""

    noop_go: Path | None = None  # the do-nothing extender in Go, built (--floors): start it too
    extender_ports: dict[str, int]  # reprieve and the do-nothing extenders started, by Config.extender

    def start(self) -> "BenchPlane":
        try:
            self._certificates()
            self._etcd()
            self._apiserver()
            self.kube = Kube.from_kubeconfig(str(self.kubeconfig))
            self._controller_manager()
            # No kubelet, as in upstream's scheduler_perf: bound pods stay Pending, and each pod
            # costs reprieve's watch exactly its create, bind and delete events (a real kubelet
            # adds its status updates: each one costs what one of these events costs).
            self.start_reprieve()
            self.extender_ports = {"reprieve": self.reprieve_port}
            noops = {"noop": [sys.executable, str(ROOT / "bench" / "noop_extender.py")]}
            if self.noop_go is not None:
                noops["noop-go"] = [str(self.noop_go)]
            for name, command in noops.items():
                port = self.extender_ports[name] = free_port()
                self.start_extender(name, command, port)
        except BaseException:
            self.stop()
            raise
        return self

    def stop_process(self, name: str, *, grace: float = 15) -> None:
        # The apiserver drains for its whole grace period; nothing is left to drain here.
        super().stop_process(name, grace=1 if name == "kube-apiserver" else grace)
        phase(f"stopped {name}")

    def pid(self, name: str) -> int:
        return self.procs[name].pid

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far of reprieve and of each do-nothing extender running."""
        return {name: cpu_seconds(self.pid(name)) for name in self.extender_ports}

    def bench_scheduler_config(self, config: Config, scheduler_name: str) -> Path:
        body = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": self.client_connection(),
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": scheduler_name}],
        }
        if config.extender:
            shipped = yaml.safe_load(SCHEDULER_CONFIG.read_text())["extenders"][0]
            stanza = {k: v for k, v in shipped.items() if k not in ("filterVerb", "prioritizeVerb", "preemptVerb")}
            port = self.extender_ports.get(config.extender)
            if port is None:
                raise ValueError(f"{config.label}: its extender was not started (noop-go runs with --floors)")
            stanza["urlPrefix"] = f"http://127.0.0.1:{port}{config.path}"
            for verb in config.verbs:
                stanza[f"{verb}Verb"] = verb
            if "prioritize" in config.verbs:
                stanza.setdefault("weight", 1)  # required with prioritizeVerb; the chart's default
            body["extenders"] = [stanza]
        path = self.work / f"sched-{config.label.replace('/', '-')}.yaml"
        path.write_text(yaml.safe_dump(body, sort_keys=False))
        return path

    def start_bench_scheduler(self, config: Config, scheduler_name: str) -> int:
        port = free_port()
        args = [
            *self._component("kube-scheduler", port),
            f"--config={self.bench_scheduler_config(config, scheduler_name)}",
            "-v=2",
            OPEN_PATHS,
        ]
        self._spawn("scheduler", args, lambda: self._secure_healthz(port))
        return port

    def scheduler_metrics(self, port: int) -> dict[str, float]:
        """Counter and histogram sum/count samples, labels folded where they do not matter here."""
        out: dict[str, float] = collections.defaultdict(float)
        for line in self.metrics(port).splitlines():
            if line.startswith("#") or not line.startswith("scheduler_"):
                continue
            name_labels, _, value = line.rpartition(" ")
            name = name_labels.split("{", 1)[0]
            out[name] += float(value)
            if name == "scheduler_schedule_attempts_total":
                result = name_labels.split('result="', 1)[1].split('"', 1)[0]
                out[f"{name}:{result}"] += float(value)
        return out

    def reprieve_pods(self) -> int:
        """Pods in reprieve's store (its /readyz "cluster" line)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.reprieve_port}/readyz", timeout=2) as r:
            return int(re.search(r"(\d+) pods", json.loads(r.read())["cluster"]).group(1))

    def reprieve_synced(self, rv: int, timeout: float = 60) -> None:
        def current() -> bool:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.reprieve_port}/readyz", timeout=2) as r:
                return int(json.loads(r.read())["resourceVersions"].get("pods", 0)) >= rv

        wait_for("reprieve's view to catch up", current, timeout, interval=0.05)


# ----------------------------------------------------------------- the cluster's objects


def node_body(name: str) -> dict:
    allocatable = {"cpu": NODE_CPU, "memory": "64Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"bench": "e2e"}},
        "status": {"capacity": allocatable, "allocatable": allocatable, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod_body(name: str, ns: str, *, cpu: str, priority: str, scheduler: str | None = None, node: str | None = None) -> dict:
    spec = {
        "priorityClassName": priority,
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {"name": "main", "image": "registry.invalid/bench:1", "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}, "limits": {"cpu": cpu, "memory": "500Mi"}}}
        ],
    }
    if scheduler:
        spec["schedulerName"] = scheduler
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": {"bench": "e2e"}}, "spec": spec}


def create_all(kube: Kube, bodies: list[dict], threads: int = 16) -> int:
    """Create every object, ``threads`` at a time; returns the largest resourceVersion."""
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return max(int(obj["metadata"]["resourceVersion"]) for obj in pool.map(kube.create, bodies))


class PodWatch(threading.Thread):
    """The namespace's pods as they change: when each was first seen bound, and which were deleted."""

    def __init__(self, kube: Kube, ns: str, rv: str) -> None:
        super().__init__(name=f"watch-{ns}", daemon=True)
        self.kube, self.ns, self.rv = kube, ns, rv
        self.bound: dict[str, float] = {}
        self.deleted: set[str] = set()
        self.last_rv = int(rv)
        self.stopping = threading.Event()

    def run(self) -> None:
        path = f"/api/v1/namespaces/{self.ns}/pods"
        while not self.stopping.is_set():
            try:
                for event in self.kube.watch(path, {"resourceVersion": self.rv, "timeoutSeconds": 300}, read_timeout=310):
                    obj = event["object"]
                    now = time.monotonic()
                    name = obj["metadata"]["name"]
                    self.rv = obj["metadata"]["resourceVersion"]
                    self.last_rv = max(self.last_rv, int(self.rv))
                    if event["type"] == "DELETED":
                        self.deleted.add(name)
                        continue
                    if obj["spec"].get("nodeName"):
                        self.bound.setdefault(name, now)
            except Exception:  # noqa: BLE001 - closed at the end of the run, or a broken stream: resume
                if self.stopping.is_set():
                    return
                time.sleep(0.1)


# ----------------------------------------------------------------- one run


VERBOSE = False


def phase(what: str, _last=[time.monotonic()]) -> None:  # noqa: B006 - the time of the previous phase
    now = time.monotonic()
    if VERBOSE:
        print(f"    {now - _last[0]:6.1f}s  then {what}", file=sys.stderr, flush=True)
    _last[0] = now


def run_one(plane: BenchPlane, config: Config, workload: str, mode: str, nodes: list[str], pods: int, timeout: float) -> Result:
    phase(f"run {workload}/{mode} {config.label}")
    kube = plane.kube
    ns = f"bench-{uuid.uuid4().hex[:8]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    creator = Kube.pooled(str(plane.kubeconfig), 16)
    scheduler = "default-scheduler" if config.extender is None else "bench-scheduler"
    if workload == "preemption":
        fillers = [pod_body(f"low-{i}-{j}", ns, cpu=LOW_CPU, priority=LOW, node=n) for i, n in enumerate(nodes) for j in range(4)]
        create_all(creator, fillers)
        measured = [pod_body(f"high-{i}", ns, cpu=HIGH_CPU, priority=HIGH, scheduler=scheduler) for i in range(len(nodes))]
    else:
        measured = [pod_body(f"pod-{i}", ns, cpu="1", priority=LOW, scheduler=scheduler) for i in range(pods)]
    start_rv = kube.request("GET", f"/api/v1/namespaces/{ns}/pods", params={"limit": 1})["metadata"]["resourceVersion"]
    phase('if workload == "preemption":\n        pla')
    if workload == "preemption":
        plane.reprieve_synced(max(int(p["metadata"]["resourceVersion"]) for p in kube.list("Pod", ns)))
    watcher = Kube.from_kubeconfig(str(plane.kubeconfig))
    watch = PodWatch(watcher, ns, start_rv)
    watch.start()
    names = {p["metadata"]["name"] for p in measured}
    cpu0 = plane.cpu()
    port = None
    try:
        phase('if mode == "before":\n            t = tim')
        if mode == "before":
            t = time.monotonic()
            rv = create_all(creator, measured)
            create_seconds = time.monotonic() - t
            plane.reprieve_synced(rv)
            port = plane.start_bench_scheduler(config, scheduler)
            started = time.monotonic()
        else:
            port = plane.start_bench_scheduler(config, scheduler)
            started = time.monotonic()
            create_all(creator, measured)
            create_seconds = time.monotonic() - started
        sched_pid = plane.pid("scheduler")
        deadline = started + timeout
        phase('while time.monotonic() < deadline and no')
        while time.monotonic() < deadline and not names <= watch.bound.keys():
            time.sleep(0.05)
        bound = {n: t for n, t in watch.bound.items() if n in names}
        done = len(bound) == len(names)
        seconds = max(bound.values()) - started if done else None
        if not done:
            rate = None
        elif mode == "before":
            rate = (len(bound) - 1) / (max(bound.values()) - min(bound.values()))
        else:
            rate = len(bound) / seconds
        phase('metrics = plane.scheduler_metrics(port)')
        metrics = plane.scheduler_metrics(port)
        sched_cpu = cpu_seconds(sched_pid)
        phase('if done:  # the rest')
        if done:  # reprieve has applied every bind (and victim's delete) of the run
            plane.reprieve_synced(watch.last_rv)
    finally:
        phase('plane.stop_process("scheduler")')
        plane.stop_process("scheduler")
        watch.stopping.set()
        watcher.close()
        phase('cleanup(plane, ns)')
        cleanup(plane, ns)
    time.sleep(0.2)  # the publisher's last view after the deletes
    cpu1 = plane.cpu()
    count = metrics.get("scheduler_scheduling_algorithm_duration_seconds_count") or 0
    return Result(
        config=config.label,
        workload=workload,
        mode=mode,
        pods=len(names),
        bound=len(bound),
        seconds=seconds,
        pods_per_s=rate,
        victims=len(watch.deleted - names),
        preemption_attempts=metrics.get("scheduler_preemption_attempts_total"),
        algorithm_ms=1000 * metrics["scheduler_scheduling_algorithm_duration_seconds_sum"] / count if count else None,
        attempts=metrics.get("scheduler_schedule_attempts_total"),
        reprieve_cpu=cpu1["reprieve"] - cpu0["reprieve"],
        noop_cpu=cpu1[config.extender] - cpu0[config.extender] if config.extender in ("noop", "noop-go") else 0.0,
        scheduler_cpu=sched_cpu,
        create_seconds=create_seconds,
    )


def cleanup(plane: BenchPlane, ns: str) -> None:
    """Remove the run's pods at once (grace 0) and wait until reprieve has seen them go."""
    kube = plane.kube
    try:
        kube.request("DELETE", f"/api/v1/namespaces/{ns}/pods", params={"gracePeriodSeconds": 0})
        wait_for("the run's pods to go", lambda: not kube.list("Pod", ns, limit=1), 120, interval=0.5)
        # No pod is left anywhere between runs: wait until reprieve's store has none either
        # (a resourceVersion to wait for would be a pod event's, and there is none after a delete).
        wait_for("reprieve to see the run's pods go", lambda: plane.reprieve_pods() == 0, 60, interval=0.1)
        kube.delete("Namespace", ns)
    except (ApiError, AssertionError) as exc:
        print(f"  (cleanup of {ns}: {exc})", file=sys.stderr)


# ----------------------------------------------------------------- the whole bench


def setup(plane: BenchPlane, count: int) -> list[str]:
    kube = plane.kube
    for name, value in ((LOW, 0), (HIGH, 10)):
        try:
            kube.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value})
        except ApiError as exc:
            if exc.status != 409:
                raise
    names = [f"hollow-{i:05d}" for i in range(count)]
    rv = create_all(Kube.pooled(str(plane.kubeconfig), 16), [node_body(n) for n in names])
    wait_for("reprieve to see the nodes", lambda: _nodes_seen(plane) >= rv, 120, interval=0.2)
    return names


def _nodes_seen(plane: BenchPlane) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{plane.reprieve_port}/readyz", timeout=2) as r:
        return int(json.loads(r.read())["resourceVersions"].get("nodes", 0))


def plan(args) -> list[tuple[str, str, list[Config]]]:
    """(workload, mode, configurations) in run order, per repetition."""
    floors = FLOORS if args.floors else []
    every = configs(args.stanzas) + floors
    basic_few = configs(["full", "filter+preempt"]) + floors
    out = []
    for item in args.runs:
        workload, mode, which = item.split(":")
        out.append((workload, mode, every if which == "all" else basic_few))
    return out


def run_all(args) -> tuple[list[Result], dict[str, str]]:
    results: list[Result] = []
    profiles: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="reprieve-bench-e2e-") as work:
        plane = BenchPlane(Path(work), build_toolchain())
        if args.floors:  # before the control plane: a missing go fails at once
            plane.noop_go = build_noop_go(Path(work) / "noop-extender-go")
        plane.start()
        try:
            phase("the control plane started")
            nodes = setup(plane, args.nodes)
            if args.profile:  # first, so that a run cut short still has it
                for label in args.profile_configs:
                    config = next(c for c in configs(args.stanzas) if c.label == label)
                    try:
                        profiles[label] = profile_run(plane, args, config, nodes)
                    except Exception as exc:  # noqa: BLE001 - keep the measured results
                        profiles[label] = f"profiling failed: {exc!r}"
                    print(profiles[label], file=sys.stderr, flush=True)
            for rep in range(args.repetitions):
                for workload, mode, cfgs in plan(args):
                    k = rep % len(cfgs)
                    for config in cfgs[k:] + cfgs[:k]:
                        result = run_one(plane, config, workload, mode, nodes, args.pods, args.timeout)
                        results.append(result)
                        print(f"  [{rep + 1}/{args.repetitions}] {result.summary()}", file=sys.stderr, flush=True)
        finally:
            plane.stop()
            if args.keep:
                Path(args.keep).mkdir(parents=True, exist_ok=True)
                for log in Path(work).glob("*.log"):
                    shutil.copy(log, Path(args.keep) / log.name)
                for raw in Path(work).glob("profile-*.txt"):
                    shutil.copy(raw, Path(args.keep) / raw.name)
    return results, profiles


def profile_run(plane: BenchPlane, args, config: Config, nodes: list[str]) -> str:
    """One unmeasured run (--profile-run) with py-spy on reprieve's worker; returns the summary."""
    # reprieve serves from one process (extender/serving/server.py); a child, if any, is a worker.
    worker = (children(plane.pid("reprieve")) or [plane.pid("reprieve")])[0]
    out = plane.work / f"profile-{config.label.replace('/', '-')}.txt"
    spy = subprocess.Popen(
        [args.profile, "record", "--pid", str(worker), "--format", "raw", "--threads", "--gil", "--nonblocking", "--rate", "200", "--output", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    time.sleep(1)
    try:
        workload, mode = args.profile_run.split(":")
        result = run_one(plane, config, workload, mode, nodes, args.pods, args.timeout)
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
    print(f"  [profile] {result.summary()}", file=sys.stderr, flush=True)
    return summarize_profile(out.read_text(), result)


ROLES = (  # first match in a stack, outermost frame first
    ("watch: reflector (read, parse, translate, apply)", ("reflector-", "reflector.py")),
    ("watch: publisher (build views)", ("publisher", "_publish_loop")),
    ("verb: filter", ("verbs/filter.py",)),
    ("verb: prioritize", ("verbs/prioritize.py",)),
    ("verb: preempt", ("verbs/preempt.py",)),
    ("http: server + Flask around the verbs", ("serving/connection.py", "serving/wsgi.py", "serving/server.py")),
)


def summarize_profile(raw: str, result: Result) -> str:
    """py-spy raw (collapsed) stacks: samples by role and the top functions by self time."""
    roles: collections.Counter[str] = collections.Counter()
    selfs: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        role = next((name for name, keys in ROLES if any(k in f for f in frames for k in keys)), "other")
        # Requests: a verb's own samples count under the verb, the rest of the request under http.
        roles[role] += n
        selfs[_short(frames[-1])] += n
        for f in {_short(f) for f in frames}:
            inclusive[f] += n
    lines = [f"{total} samples over the run ({result.summary()})", "", "| where | share of samples |", "|---|---:|"]
    lines += [f"| {role} | {100 * n / total:.0f}% |" for role, n in roles.most_common()]
    lines += ["", "| function (self) | share |", "|---|---:|"]
    lines += [f"| `{f}` | {100 * n / total:.1f}% |" for f, n in selfs.most_common(25)]
    lines += ["", "| function (inclusive) | share |", "|---|---:|"]
    lines += [f"| `{f}` | {100 * n / total:.1f}% |" for f, n in inclusive.most_common(40)]
    return "\n".join(lines)


def _short(frame: str) -> str:
    # py-spy raw frames: "function (path/to/file.py:line)"
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    path = where.rsplit(":", 1)[0]
    parts = Path(path).parts
    short = "/".join(parts[-2:]) if parts else path
    return f"{name} ({short})"


# ----------------------------------------------------------------- the table


def _spread(values: list[float], fmt: str = "{:.0f}") -> str:
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return fmt.format(lo) if lo == hi or fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}-{fmt.format(hi)}"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def table(results: list[Result]) -> str:
    groups: dict[tuple[str, str], dict[str, list[Result]]] = {}
    for r in results:
        groups.setdefault((r.workload, r.mode), {}).setdefault(r.config, []).append(r)
    out = []
    for (workload, mode), by_config in groups.items():
        out += [
            f"\n**{workload}, pods created {'before the scheduler starts' if mode == 'before' else 'during the run'}**\n",
            "| configuration | pods/s | x stock | x noop | seconds to place all | victims | preemption attempts | algorithm ms/attempt | reprieve cpu ms/pod | noop cpu ms/pod | scheduler cpu ms/pod | not bound |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        med = {c: _median([r.pods_per_s for r in rs if r.pods_per_s]) for c, rs in by_config.items()}
        for config, rs in by_config.items():
            def ratio(base: str) -> str:
                return f"{med[config] / med[base]:.2f}" if med.get(config) and med.get(base) else "-"

            per_pod = lambda attr: _spread([1000 * getattr(r, attr) / r.pods for r in rs], "{:.2f}")  # noqa: E731
            out.append(
                f"| {config} | {_spread([r.pods_per_s for r in rs if r.pods_per_s])} | {ratio('stock')} | {ratio('noop')} "
                f"| {_spread([r.seconds for r in rs if r.seconds is not None], '{:.1f}')} | {_spread([r.victims for r in rs])} "
                f"| {_spread([r.preemption_attempts or 0 for r in rs])} | {_spread([r.algorithm_ms for r in rs if r.algorithm_ms], '{:.2f}')} "
                f"| {per_pod('reprieve_cpu')} | {per_pod('noop_cpu')} | {per_pod('scheduler_cpu')} | {', '.join(str(r.pods - r.bound) for r in rs)} |"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    # reprieve runs as `python -m extender.cli` in a child process: make it this tree's too
    # (here, not at import: tests import this module, and their other subprocesses must not see it).
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2000, help="pods of the basic workload")
    parser.add_argument("--repetitions", type=int, default=1, help="interleaved repetitions (each adds the time of one)")
    parser.add_argument("--stanzas", default=",".join(STANZAS), help=f"reprieve's stanzas, of: {', '.join(STANZAS)}")
    parser.add_argument(
        "--runs",
        default="basic:before:all,basic:during:few,preemption:during:few",
        help="WORKLOAD:MODE:all|few, comma-separated (few: stock, noop, reprieve/full, reprieve/filter+preempt); workloads basic, preemption; modes before, during",
    )
    parser.add_argument("--timeout", type=float, default=180, help="seconds a run may take to place its pods")
    parser.add_argument(
        "--floors", action="store_true",
        help="add noop/filter+preempt and a do-nothing extender in Go (noop-go, noop-go/scores, noop-go/filter+preempt; needs go)",
    )
    parser.add_argument("--profile", metavar="PY-SPY", help="the py-spy binary: profile reprieve in extra runs")
    parser.add_argument("--profile-configs", default="reprieve/full", help="configurations to profile")
    parser.add_argument("--profile-run", default="basic:before", help="WORKLOAD:MODE of the profiled runs")
    parser.add_argument("--keep", metavar="DIR", help="copy the components' logs and py-spy's raw stacks here")
    parser.add_argument("--verbose", action="store_true", help="print how long each phase of a run took")
    args = parser.parse_args(argv)
    global VERBOSE
    VERBOSE = args.verbose
    args.stanzas = [s.strip() for s in args.stanzas.split(",") if s.strip()]
    args.runs = [s.strip() for s in args.runs.split(",") if s.strip()]
    args.profile_configs = [s.strip() for s in args.profile_configs.split(",") if s.strip()]
    if unknown := [s for s in args.stanzas if s not in STANZAS]:
        parser.error(f"unknown stanza(s) {unknown}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    try:
        results, profiles = run_all(args)
    except StartupError as exc:
        print(f"bench/e2e.py: the control plane could not start: {exc}", file=sys.stderr)
        return 1
    print(
        f"bench/e2e.py --nodes {args.nodes} --pods {args.pods} --repetitions {args.repetitions} "
        f"--stanzas {','.join(args.stanzas)} --runs {','.join(args.runs)}{' --floors' if args.floors else ''}"
    )
    print(machine(started))
    print(table(results))
    for label, summary in profiles.items():
        print(f"\n**py-spy, reprieve's worker, {args.profile_run} run of {label}**\n\n{summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
