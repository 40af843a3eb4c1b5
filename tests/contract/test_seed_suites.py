"""The seed systems' own preemption tests, translated: cases of Apache YuniKorn's
(yunikorn-core pkg/scheduler/objects/preemption_test.go) and Volcano's
(pkg/scheduler/actions/{preempt,reclaim,gangreclaim}/*_test.go), each rebuilt as Kubernetes
objects and a --policy file, and sent to the served preempt verb as kube-scheduler sends it: its
own victims (policy.stock's emulation) on every node where the pod does not fit.

How a case is translated (docs/policy.md, "The seed systems' own tests" lists the cases left out
and why):

- Queues become policy queues holding the namespace of the same name; YuniKorn's
  ``guaranteed`` becomes ``guaranteed``, Volcano's queue ``weight`` becomes ``weight`` (its
  proportion plugin) and its capacity plugin's ``deserved`` becomes ``guaranteed``.
- Every pod requests memory, as real workloads do: YuniKorn's abstract resources are cpu cores
  ("first", "vcores"), MiB ("mem") and ``example.com/gpu`` (one per 100 "gpu"); where YuniKorn's
  pod asks for no memory it asks for 100Mi, on nodes where memory is plentiful unless the source
  fills it. Volcano's quantities are used as written ("1G" is 10^9 bytes).
- kube-scheduler offers only victims of strictly lower priority, so the preemptor outranks every
  running pod (1000 against 10) unless the source gives priorities; YuniKorn's equal-priority
  preemption (its law 6) cannot reach an extender.
- A node of YuniKorn's that has room for the ask is shrunk until it has none, where the source
  preempts for the node and not for a queue's maximum: the scheduler asks the extender only for a
  pod that fits nowhere.
- Creation times become start times (kube-scheduler's and reprieve's order among equals).
- Volcano's ``volcano.sh/preemptable: "false"`` becomes a PriorityClass of the same value that
  opts out (``optOut.mode: hard``); its queue ``reclaimable: false`` becomes
  ``preemption: disabled``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

import pytest

from extender import policy_file
from extender.config import Settings
from extender.serving.app import create_app
from extender.serving.logs import JsonFormatter
from extender.state import snapshot
from extender.state.source import StaticCluster
from policy import stock
from tests.contract import cli
from tests.contract.objects import HIGH, dump, k8s_node, k8s_pod, priority_classes

@dataclass(frozen=True)
class Case:
    nodes: list[dict]
    running: list[dict]
    preemptor: dict
    policy: dict
    expected: dict[str, list[str]]  # node -> victims by name; {}: no preemption
    reason: str = ""  # what the decision log must say (a refusal's, or a node's)
    pending: list[dict] = field(default_factory=list)  # other pending pods (they count in demand)
    proposals: dict[str, list[str]] | None = None  # the scheduler's, where it would not ask at all


def queues(*specs: dict, mode: str = "soft") -> dict:
    return {"queues": list(specs), "optOut": {"mode": mode}}


def q(name: str, parent: str | None = None, *, leaf: bool = True, **settings) -> dict:
    spec = {"name": name, **settings}
    if parent:
        spec["parent"] = parent
    if leaf:
        spec["namespaces"] = [name]
    return spec


# -- Apache YuniKorn: pkg/scheduler/objects/preemption_test.go -------------------------------------

def no_guaranteed_resources(parent_guaranteed: dict, child2_guaranteed: dict, expected: dict, reason: str = "") -> Case:
    """TestCheckPreemptionQueueGuaranteesWithNoGuaranteedResources: child1 (guaranteed 5) runs
    two 5-cpu pods, child2 asks for 5. YuniKorn's node has 20 with 10 used; here 10, full."""
    return Case(
        nodes=[k8s_node("n1", cpu="10")],
        running=[k8s_pod("alloc1", "child1", node="n1", cpu="5", minute=0), k8s_pod("alloc2", "child1", node="n1", cpu="5", minute=1)],
        preemptor=k8s_pod("alloc3", "child2", cpu="5", priority=HIGH, minute=2),
        policy=queues(
            q("parent", leaf=False, **({"guaranteed": parent_guaranteed} if parent_guaranteed else {})),
            q("child1", "parent", guaranteed={"cpu": "5"}),
            q("child2", "parent", **({"guaranteed": child2_guaranteed} if child2_guaranteed else {})),
        ),
        expected=expected,
        reason=reason,
    )


def siblings_under_parent1(child1: dict, child2: dict, expected: dict, reason: str = "") -> Case:
    """TestTryPreemption_OnNode_UGParent_*: parent1 is guaranteed 10 vcores; its child1 runs two
    1-vcore pods on a 2-vcore node, its child2 asks for 1."""
    return Case(
        nodes=[k8s_node("n1", cpu="2")],
        running=[k8s_pod("alloc1", "child1", node="n1", cpu="1", minute=0), k8s_pod("alloc2", "child1", node="n1", cpu="1", minute=1)],
        preemptor=k8s_pod("alloc3", "child2", cpu="1", priority=HIGH, minute=2),
        policy=queues(
            q("parent", leaf=False),
            q("parent1", "parent", leaf=False, guaranteed={"cpu": "10"}),
            q("parent2", "parent", leaf=False),
            q("child1", "parent1", **child1),
            q("child2", "parent1", **child2),
            q("child3", "parent2"),
        ),
        expected=expected,
        reason=reason,
    )


def resource_types(*, node: dict, child2_guaranteed: dict | None, others: str, ask: dict) -> Case:
    """TestTryPreemption_OnNode_AskResTypes*: child2 runs three 1-vcore pods (alloc1 a minute
    older than alloc2 and alloc3) and three pods of another resource type; child1 (guaranteed 2
    vcores) asks for 2 vcores."""
    other = {"memory": "100Mi"} if others == "mem" else {"gpu": 1}
    return Case(
        nodes=[k8s_node("n1", **node)],
        running=[
            *(k8s_pod(f"alloc{i}", "child2", node="n1", minute=0, **other) for i in (5, 6, 7)),
            k8s_pod("alloc1", "child2", node="n1", cpu="1", minute=1),
            k8s_pod("alloc2", "child2", node="n1", cpu="1", minute=2),
            k8s_pod("alloc3", "child2", node="n1", cpu="1", minute=2),
        ],
        preemptor=k8s_pod("alloc4", "child1", priority=HIGH, minute=3, **ask),
        policy=queues(
            q("parent", leaf=False),
            q("parent1", "parent", leaf=False),
            q("parent2", "parent", leaf=False),
            q("child1", "parent1", guaranteed={"cpu": "2"}),
            q("child2", "parent2", **({"guaranteed": child2_guaranteed} if child2_guaranteed else {})),
            q("child3", "parent2"),
        ),
        expected={"n1": ["alloc2", "alloc3"]},
    )


YUNIKORN = {
    # Nothing guaranteed to child2 or above it: it has no share to claim.
    "NoGuaranteedResources/NoGuaranteed": no_guaranteed_resources(
        {}, {}, {}, "queue child2 is not below its share in cpu, which the pod is short of on n1 (no share of cpu)"
    ),
    # child2 inherits parent's 10 less child1's 10: 0, but 5 once child1's newer pod is gone
    # (YuniKorn's checkPreemptionQueueGuarantees removes the victims before asking).
    "NoGuaranteedResources/ParentGuaranteed": no_guaranteed_resources({"cpu": "10"}, {}, {"n1": ["alloc2"]}),
    "NoGuaranteedResources/ChildGuaranteed": no_guaranteed_resources({}, {"cpu": "5"}, {"n1": ["alloc2"]}),
    "NoGuaranteedResources/BothGuaranteed": no_guaranteed_resources({"cpu": "10"}, {"cpu": "5"}, {"n1": ["alloc2"]}),
    # Two full 5-vcore nodes, one 5-vcore pod of child1 each; child1 may lose one (10 -> 5 >= 5).
    # The newer pod's node is offered (YuniKorn's mocked predicate picks node2, alloc2: the same).
    "TryPreemptionOnNode": Case(
        nodes=[k8s_node("node1", cpu="5", pods=1), k8s_node("node2", cpu="5", pods=1)],
        running=[k8s_pod("alloc1", "child1", node="node1", cpu="5", minute=0), k8s_pod("alloc2", "child1", node="node2", cpu="5", minute=1)],
        preemptor=k8s_pod("alloc3", "child2", cpu="5", priority=HIGH, minute=2),
        policy=queues(
            q("parent", leaf=False, guaranteed={"cpu": "10"}),
            q("child1", "parent", guaranteed={"cpu": "5"}),
            q("child2", "parent", guaranteed={"cpu": "5"}),
        ),
        expected={"node2": ["alloc2"]},
    ),
    # parent (guaranteed 2) is over it through child1 (none, 6 pods on two 3-vcore nodes); child2
    # (guaranteed 1) takes the newest, alloc1 on node2. What child1 inherits from parent does not
    # hold against child2, which has a guarantee of its own under parent.
    "TryPreemptionOnNodeWithOGParentAndUGPreemptor": Case(
        nodes=[k8s_node("node1", cpu="3"), k8s_node("node2", cpu="3")],
        running=[k8s_pod(f"alloc{i}", "child1", node="node1" if i % 2 == 0 else "node2", cpu="1", minute=10 - i) for i in range(1, 7)],
        preemptor=k8s_pod("alloc7", "child2", cpu="1", priority=HIGH, minute=11),
        policy=queues(
            q("parent", leaf=False, guaranteed={"cpu": "2"}),
            q("child1", "parent"),
            q("child2", "parent", guaranteed={"cpu": "1"}),
        ),
        expected={"node2": ["alloc1"]},
    ),
    # child1 inherits parent1's 1 vcore; child2 (under parent2) has no share. The node's memory
    # is full too: one 1-vcore, 200Mi pod frees what the ask needs.
    "TryPreemption_OnNode_AskResTypesDifferent_GuaranteedSetOnPreemptorSide": Case(
        nodes=[k8s_node("n1", cpu="2", memory="400Mi")],
        running=[k8s_pod("alloc1", "child2", node="n1", cpu="1", memory="200Mi", minute=0),
                 k8s_pod("alloc2", "child2", node="n1", cpu="1", memory="200Mi", minute=1)],
        preemptor=k8s_pod("alloc3", "child1", cpu="1", memory="100Mi", priority=HIGH, minute=2),
        policy=queues(
            q("parent", leaf=False),
            q("parent1", "parent", leaf=False, guaranteed={"cpu": "1"}),
            q("parent2", "parent", leaf=False),
            q("child1", "parent1"),
            q("child2", "parent2"),
            q("child3", "parent2"),
        ),
        expected={"n1": ["alloc2"]},
    ),
    # child2 (guaranteed 1 vcore) keeps alloc1; the memory-only pods free no vcore.
    "TryPreemption_OnNode_AskResTypesDifferent_GuaranteedSetOnVictimAndPreemptorSides": resource_types(
        node={"cpu": "3", "memory": "600Mi"}, child2_guaranteed={"cpu": "1"}, others="mem", ask={"cpu": "2", "memory": "100Mi"}
    ),
    # Memory is plentiful (every pod asks for some); only vcores are short. Minimal: the two newest.
    "TryPreemption_OnNode_AskResTypesSame_GuaranteedSetOnPreemptorSide": resource_types(
        node={"cpu": "3", "memory": "1Gi", "gpu": 3}, child2_guaranteed=None, others="gpu", ask={"cpu": "2", "memory": "200Mi"}
    ),
    "TryPreemption_OnNode_AskResTypesSame_GuaranteedSetOnVictimAndPreemptorSides": resource_types(
        node={"cpu": "3", "memory": "1Gi", "gpu": 7}, child2_guaranteed={"cpu": "1"}, others="gpu", ask={"cpu": "2", "memory": "200Mi"}
    ),
    # child2 has a guarantee of its own: what child1 inherits from parent1 does not hold against it.
    "TryPreemption_OnNode_UGParent_With_UGPreemptorChild_GNotSetOnVictimChild_As_Siblings": siblings_under_parent1(
        {}, {"guaranteed": {"cpu": "1"}}, {"n1": ["alloc2"]}
    ),
    # Both inherit parent1's guarantee: child1's holds (2 used of 10), no preemption storm.
    "TryPreemption_OnNode_UGParent_With_GNotSetOnBothChilds": siblings_under_parent1(
        {}, {}, {}, "queue child1 would fall below its share in cpu, which the pod is short of on n1: cpu=1 of cpu=10, inherited from queue parent1"
    ),
    "TryPreemption_OnNode_UGParent_With_UGPreemptorChild_OGVictimChild_As_Siblings": siblings_under_parent1(
        {"guaranteed": {"cpu": "1"}}, {"guaranteed": {"cpu": "1"}}, {"n1": ["alloc2"]}
    ),
}


# -- Volcano: pkg/scheduler/actions/{gangreclaim,reclaim,preempt} -----------------------------------

def gang_reclaim_across_queues(qa: dict, qb: dict, expected_count: int, reason: str = "") -> Case:
    """gangreclaim_fairness_test.go gangReclaimAcrossQueuesCase: qa's low-priority job fills a
    7-cpu, 16Gi node with seven 1-cpu, 1G pods; qb's high-priority 2-cpu, 1G pod is pending."""
    return Case(
        nodes=[k8s_node("n1", cpu="7", memory="16Gi", pods=20)],
        running=[k8s_pod(f"low-{i}", "qa", node="n1", cpu="1", memory="1G", minute=i) for i in range(7)],
        preemptor=k8s_pod("high-0", "qb", cpu="2", memory="1G", priority=HIGH, minute=10),
        policy=queues(q("qa", **qa), q("qb", **qb)),
        expected={"n1": [f"low-{i}" for i in range(7 - expected_count, 7)]} if expected_count else {},
        reason=reason,
    )


VOLCANO = {
    # Without a fairness plugin nothing gives qb a share (Volcano evicts none either).
    "gangreclaim/NeedsQueueFairnessPlugin/no queue fairness plugin": gang_reclaim_across_queues(
        {}, {}, 0, "queue qb is not below its share in cpu, which the pod is short of on n1 (no share of cpu)"
    ),
    # Weights 1 and 1: qa deserves 5 cpus (qb wants only 2) and may lose 2. Memory is not short on
    # the node: qa's memory share (its whole demand, 7G) does not protect it. Volcano evicts 6.
    "gangreclaim/NeedsQueueFairnessPlugin/with proportion": gang_reclaim_across_queues({"weight": 1}, {"weight": 1}, 2),
    # Capacity's deserved 3500m/8Gi each: qa is below 8Gi of memory, above 3500m of cpu. Volcano evicts 4.
    "gangreclaim/NeedsQueueFairnessPlugin/with capacity": gang_reclaim_across_queues(
        {"guaranteed": {"cpu": "3500m", "memory": "8Gi"}}, {"guaranteed": {"cpu": "3500m", "memory": "8Gi"}}, 2
    ),
    # Volcano takes preemptee2 and leaves q1 below its deserved memory (2G of 2.22G): memory is
    # short on this node (3Gi holds three 1G pods and 0.22G free), and reprieve keeps q1 at its share.
    "reclaim/Two Queue with one Queue overusing resource, should reclaim": Case(
        nodes=[k8s_node("n1", cpu="3", memory="3Gi", pods=10)],
        running=[k8s_pod("preemptee1", "q1", node="n1", cpu="1", memory="1G", opted_out=True, minute=0),
                 k8s_pod("preemptee2", "q1", node="n1", cpu="1", memory="1G", minute=1),
                 k8s_pod("preemptee3", "q1", node="n1", cpu="1", memory="1G", opted_out=True, minute=2)],
        preemptor=k8s_pod("preemptor1", "q2", cpu="1", memory="1G", priority=HIGH, minute=3),
        policy=queues(q("q1", weight=1), q("q2", weight=1), mode="hard"),
        expected={},
        reason="queue q1 would fall below its share in memory",
    ),
    # Three queues of weight 1 on a 4-cpu node: q1 and q2 (two 1-cpu pods each) deserve 1500m
    # once q3 wants 1; either would end at 1. Volcano evicts preemptee2-1 (q2 below its share).
    "reclaim/sort reclaimees when reclaiming from overusing queue": Case(
        nodes=[k8s_node("n1", cpu="4", memory="4Gi", pods=10)],
        running=[k8s_pod("preemptee1-1", "q1", node="n1", cpu="1", memory="1G", priority=500, minute=0),
                 k8s_pod("preemptee1-2", "q1", node="n1", cpu="1", memory="1G", priority=500, minute=1),
                 k8s_pod("preemptee2-1", "q2", node="n1", cpu="1", memory="1G", priority=100, minute=2),
                 k8s_pod("preemptee2-2", "q2", node="n1", cpu="1", memory="1G", priority=100, opted_out=True, minute=3)],
        preemptor=k8s_pod("preemptor1", "q3", cpu="1", memory="1G", priority=HIGH, minute=4),
        policy=queues(q("q1", weight=1), q("q2", weight=1), q("q3", weight=1), mode="hard"),
        expected={},
        reason="queue q2 would fall below its share in cpu, which the pod is short of on n1: cpu=1 of cpu=1500m",
    ),
    # preemptionPolicy Never: kube-scheduler never asks; asked anyway, reprieve refuses.
    "reclaim/can not reclaim resources when task preemption policy is never": Case(
        nodes=[k8s_node("n1", cpu="1", memory="1Gi", pods=1)],
        running=[k8s_pod("preemptee1", "q1", node="n1", cpu="1", memory="1G", minute=0)],
        preemptor=k8s_pod("preemptor1", "q2", cpu="1", memory="1G", priority=HIGH, never=True, minute=1),
        policy=queues(q("q1", weight=5), q("q2", weight=10)),
        expected={},
        reason="preemptionPolicy is Never",
        proposals={"n1": ["preemptee1"]},
    ),
    # One queue: the Kubernetes rules alone. The newer of pg1's pods goes.
    "preempt/preempt one task of different job to fit both jobs on one node": Case(
        nodes=[k8s_node("n1", cpu="2", memory="2G")],
        running=[k8s_pod("preemptee1", "q1", node="n1", cpu="1", memory="1G", minute=0),
                 k8s_pod("preemptee2", "q1", node="n1", cpu="1", memory="1G", minute=1)],
        preemptor=k8s_pod("preemptor1", "q1", cpu="1", memory="1G", priority=HIGH, minute=2),
        pending=[k8s_pod("preemptor2", "q1", cpu="1", memory="1G", priority=HIGH, minute=2)],
        policy=queues(q("q1", weight=1)),
        expected={"n1": ["preemptee2"]},
    ),
    "preempt/preempt enough tasks to fit large task of different job": Case(
        nodes=[k8s_node("n1", cpu="6", memory="6G")],
        running=[k8s_pod(f"preemptee{i}", "q1", node="n1", cpu="1", memory="1G", minute=i) for i in (1, 2, 3)],
        preemptor=k8s_pod("preemptor1", "q1", cpu="5", memory="5G", priority=HIGH, minute=4),
        policy=queues(q("q1", weight=1)),
        expected={"n1": ["preemptee2", "preemptee3"]},
    ),
    # gangreclaim_test.go: q3 is not reclaimable (preemption disabled), q2 is; q1 is below its
    # share. Only q2's pod may go (the share checks the source mocks out are met: q2 has none).
    "gangreclaim/SelectDomainVictims_ReclaimableCrossQueueOnly": Case(
        nodes=[k8s_node("n1", cpu="2")],
        running=[k8s_pod("victim", "q2", node="n1", cpu="1", minute=1), k8s_pod("other", "q3", node="n1", cpu="1", minute=2)],
        preemptor=k8s_pod("reclaimer", "q1", cpu="1", priority=100, minute=3),
        policy=queues(q("q1", guaranteed={"cpu": "1"}), q("q2"), q("q3", preemption="disabled")),
        expected={"n1": ["victim"]},
    ),
    "gangreclaim/SelectDomainVictims_RespectVictimJobPreemptable": Case(
        nodes=[k8s_node("n1", cpu="1")],
        running=[k8s_pod("victim", "q2", node="n1", cpu="1", opted_out=True, minute=1)],
        preemptor=k8s_pod("reclaimer", "q1", cpu="1", priority=100, minute=3),
        policy=queues(q("q1", guaranteed={"cpu": "1"}), q("q2"), mode="hard"),
        expected={},
        reason="PriorityClass opted-out opts out of preemption",
    ),
    "gangreclaim/SelectDomainVictims_AllowVictimJobWhenPreemptableUnset": Case(
        nodes=[k8s_node("n1", cpu="1")],
        running=[k8s_pod("victim", "q2", node="n1", cpu="1", minute=1)],
        preemptor=k8s_pod("reclaimer", "q1", cpu="1", priority=100, minute=3),
        policy=queues(q("q1", guaranteed={"cpu": "1"}), q("q2"), mode="hard"),
        expected={"n1": ["victim"]},
    ),
}


def scheduler_proposals(view, case: Case) -> dict:
    """What kube-scheduler sends: its own victims on each node where the pod does not fit."""
    if case.proposals is not None:
        by_name = {p.name: p.uid for p in view.pods.values()}
        return {n: {"Pods": [{"UID": by_name[v]} for v in vs], "NumPDBViolations": 0} for n, vs in case.proposals.items()}
    preemptor = view.pods[case.preemptor["metadata"]["uid"]]
    decision = stock.decide(view=view, preemptor=preemptor, node_names=sorted(view.nodes))
    return {n: {"Pods": [{"UID": uid} for uid in p.uids], "NumPDBViolations": p.num_pdb_violations} for n, p in decision.proposals.items()}


def served(case: Case, tmp_path, caplog) -> tuple[dict[str, list[str]], dict]:
    """The served preempt verb's answer, by node and victim name, and its decision log line."""
    view = snapshot.from_documents([*priority_classes(), *case.nodes, *case.running, case.preemptor, *case.pending])
    path = tmp_path / "policy.yaml"
    path.write_text(json.dumps(case.policy))
    policy = policy_file.load(path)
    client = create_app(Settings(), cluster=StaticCluster(view), rules=policy.rules, order=policy.order).test_client()
    body = {"Pod": case.preemptor, "NodeNameToMetaVictims": scheduler_proposals(view, case), "NodeNameToVictims": None}
    with caplog.at_level(logging.INFO, logger="reprieve.decisions"):
        response = client.post("/preempt", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 200
    names = {p.uid: p.name for p in view.pods.values()}
    answer = {n: sorted(names[v["UID"]] for v in meta["Pods"]) for n, meta in response.get_json()["NodeNameToMetaVictims"].items()}
    [record] = [r for r in caplog.records if r.name == "reprieve.decisions"]
    return answer, json.loads(JsonFormatter().format(record))


@pytest.mark.parametrize("case", [pytest.param(c, id=f"yunikorn/{name}") for name, c in YUNIKORN.items()]
                         + [pytest.param(c, id=f"volcano/{name}") for name, c in VOLCANO.items()])
def test_seed_case(case, tmp_path, caplog):
    answer, line = served(case, tmp_path, caplog)
    assert answer == case.expected, line
    if case.reason:
        said = json.dumps(line)
        assert case.reason in said, said


def after_the_first_reclaim() -> Case:
    """The proportion case once qb's first pod took low-5 and low-6: a second 2-cpu qb pod asks.
    qa (5 cpus) now deserves 3500m (qb wants 4): losing 2 more would leave it 3. Its memory share
    (its whole demand, 5G) would be lost too, but memory does not decide: the node has 10G free."""
    return Case(
        nodes=[k8s_node("n1", cpu="7", memory="16Gi", pods=20)],
        running=[*(k8s_pod(f"low-{i}", "qa", node="n1", cpu="1", memory="1G", minute=i) for i in range(5)),
                 k8s_pod("high-0", "qb", node="n1", cpu="2", memory="1G", priority=HIGH, minute=10)],
        preemptor=k8s_pod("high-1", "qb", cpu="2", memory="1G", priority=HIGH, minute=11),
        policy=queues(q("qa", weight=1), q("qb", weight=1)),
        expected={},
        reason="queue qa would fall below its share in cpu, which the pod is short of on n1: cpu=3 of cpu=3500m",
    )


def test_the_claiming_queue_stops_at_its_share_and_the_reason_names_the_resource(tmp_path, caplog, capsys):
    case = after_the_first_reclaim()
    answer, line = served(case, tmp_path, caplog)
    assert answer == {} and case.reason in json.dumps(line), line
    # reprieve explain says the same, in the words the Events use (policy.tenancy.screening).
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(dump(*case.nodes, *case.running, case.preemptor)))
    report = cli.report(capsys, "explain", "--snapshot", str(cluster), "--pod", "qb/high-1", "--policy", str(tmp_path / "policy.yaml"))
    assert case.reason in json.dumps(report["nodes"]), report["nodes"]
