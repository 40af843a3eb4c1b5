"""A seeded workload shaped like a production GPU cluster (``reprieve simulate --generate N --shape gpu``).

The published shape of production GPU-sharing traces (tiers by priority, mostly fractional
GPUs), drawn with the ``rng`` passed in:

- **Tasks**, ``N`` of them, all pending, arriving in order onto an empty cluster and filling it:
  about 57% latency-sensitive (priority 1000, Guaranteed, each a replica of one of a few
  services: a ReplicaSet, some with a PodDisruptionBudget), 1% mid (priority 500, Burstable) and
  42% best effort (priority 0, Burstable, mostly Jobs' pods). A task's start is its arrival.
- **GPUs** are an integer extended resource counting milli-GPUs (``GPU_MILLI``): about 86% of
  tasks ask for one GPU, most of them a fraction of it (a quarter, a third, half, ...); about 13%
  are CPU-only; about 1% ask for 2-8 whole GPUs. A GPU task asks for 2-16 cpu and 8-64 GiB
  (more for whole GPUs); a CPU-only one for 1-8 cpu and 2-32 GiB.
- **Nodes** of 8 GPUs with 96-128 cpu and 512-768 GiB, labelled with one of a few GPU models,
  plus CPU-only nodes (64 cpu, 256 GiB) for one node in eight. About one GPU task in ten requires
  a GPU model by required node affinity.
- **Pressure**: the number of nodes is set so that the tasks' GPU requests are ``pressure``
  times the GPU nodes' GPUs (and the CPU-only tasks' cpu the CPU-only nodes' times the same):
  1.0 fills the cluster exactly, 1.5 asks for half as much again as it has, 0.6 leaves room.
- **Grace periods**: each app's tasks one (policy.workload.GRACES), drawn after the rest.

- **Checkpoints and pod-deletion-costs**, drawn last as policy.workload draws them: about one
  app in two checkpoints every 10, 30 or 60 minutes from its tasks' arrival, and about one
  service in three sets a pod-deletion-cost on each of its tasks.

Whole-GPU placement on a node (which physical GPU a fraction lands on) is not modelled: a node's
milli-GPUs are one pool, as the extended resource counts them.
"""

from __future__ import annotations

from dataclasses import dataclass

from policy.labels import Selector
from policy.model import DisruptionBudget, Node, Pod
from policy.placement import Placement, Requirement, Term
from policy.qos import QoS
from policy.quantity import CPU
from policy.resources import MEMORY, PODS
from policy.view import ClusterView
from policy.workload import EPOCH, GI, MILLI, NAMESPACE, Random, Workload, _pick, checkpoints, deletion_costs, with_graces

GPU_MILLI = "example.com/gpu-milli"  # milli-GPUs: 1000 is one whole GPU
GPUS_PER_NODE = 8
MODEL_LABEL = "example.com/gpu-model"
MODELS = ("A100", "V100", "T4")
HIGH, MID, LOW = 1000, 500, 0
# The fractions of one GPU a sharing task asks for, in milli-GPUs, most of them below one.
FRACTIONS = (250, 250, 330, 500, 500, 500, 600, 750, 1000, 1000)
CPU_NODE = {"cpu": 64, "memory": 256}


@dataclass(frozen=True, slots=True)
class _Task:
    tier: int
    cpu_m: int
    memory: int
    gpu_m: int
    model: str | None
    app: str


def generate(rng: Random, tasks: int, *, pressure: float = 1.0) -> Workload:
    """An empty cluster sized for ``pressure`` and ``tasks`` pending tasks (see the module docstring)."""
    if tasks < 1:
        raise ValueError("tasks must be at least 1")
    if not 0 < pressure <= 10:
        raise ValueError(f"pressure must be above 0 and at most 10, not {pressure}")
    drawn = [_task(rng, k) for k in range(tasks)]
    gpu_demand = sum(t.gpu_m for t in drawn)
    cpu_only = sum(t.cpu_m for t in drawn if not t.gpu_m)
    gpu_nodes = max(1, round(gpu_demand / (GPUS_PER_NODE * MILLI * pressure)))
    cpu_nodes = max(1, round(cpu_only / (CPU_NODE["cpu"] * MILLI * pressure)))
    nodes = [_gpu_node(rng, n) for n in range(gpu_nodes)] + [
        Node(f"cpu-{n:03d}", {CPU: CPU_NODE["cpu"] * MILLI, MEMORY: CPU_NODE["memory"] * GI, PODS: 110})
        for n in range(cpu_nodes)
    ]
    pending = tuple(_pod(t, k) for k, t in enumerate(drawn))
    services = sorted({t.app for t in drawn if t.tier == HIGH})
    budgets = [
        DisruptionBudget(NAMESPACE, f"pdb-{app}", Selector((("app", app),)), _pick(rng, (0, 1, 2)))
        for app in services
        if rng.random() < 0.5
    ]
    # Drawn last, so that the rest is as before: grace periods, checkpoints (the training jobs'
    # and the services' alike) and the services' pod-deletion-costs (policy.workload).
    pending = with_graces(rng, sorted({t.app for t in drawn}), list(pending))
    pending = tuple(deletion_costs(rng, checkpoints(rng, list(pending))))
    return Workload(ClusterView.build(nodes=nodes, pods=(), budgets=budgets), pending)


def _gpu_node(rng: Random, n: int) -> Node:
    cpu = _pick(rng, (96, 112, 128))
    memory = _pick(rng, (512, 640, 768))
    return Node(
        f"gpu-{n:03d}",
        {CPU: cpu * MILLI, MEMORY: memory * GI, PODS: 110, GPU_MILLI: GPUS_PER_NODE * MILLI},
        labels={MODEL_LABEL: _pick(rng, MODELS)},
    )


def _task(rng: Random, k: int) -> _Task:
    roll = rng.random()
    tier = HIGH if roll < 0.57 else MID if roll < 0.58 else LOW
    shape = rng.random()
    if shape < 0.13:  # CPU-only
        cpu, memory, gpu = 1 + rng.randrange(8), 2 * (1 + rng.randrange(16)), 0
    elif shape < 0.14:  # 2-8 whole GPUs
        gpus = 2 + rng.randrange(7)
        cpu, memory, gpu = 8 * gpus, 64 * gpus, gpus * MILLI
    else:  # one GPU, most often a fraction of it
        cpu, memory, gpu = 2 + rng.randrange(15), 8 * (1 + rng.randrange(8)), _pick(rng, FRACTIONS)
    model = _pick(rng, MODELS) if gpu and rng.random() < 0.1 else None
    app = f"svc-{rng.randrange(12):02d}" if tier == HIGH else f"job-{k // 8:03d}"
    return _Task(tier, cpu * MILLI, memory * GI, gpu, model, app)


def _pod(task: _Task, k: int) -> Pod:
    requests = {CPU: task.cpu_m, MEMORY: task.memory, PODS: 1}
    if task.gpu_m:
        requests[GPU_MILLI] = task.gpu_m
    owner = f"rs-{task.app}" if task.tier == HIGH else f"job-{task.app}" if task.tier == LOW else None
    kind = "ReplicaSet" if task.tier == HIGH else "Job" if task.tier == LOW else None
    affinity = None
    if task.model is not None:
        affinity = (Term(expressions=(Requirement(MODEL_LABEL, "In", (task.model,)),)),)
    start = EPOCH + 60.0 * k  # tasks arrive in order, a minute apart
    return Pod(
        uid=f"uid-task-{k:04d}",
        name=f"task-{k:04d}",
        namespace=NAMESPACE,
        priority=task.tier,
        requests=requests,
        qos=QoS.GUARANTEED if task.tier == HIGH else QoS.BURSTABLE,
        labels={"app": task.app},
        start_time=start,
        created=start,
        owner=owner,
        placement=Placement(kind, affinity=affinity),
    )

