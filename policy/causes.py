"""Short, stable labels for why preemption went the way it did (metrics and explain group by them)."""

from __future__ import annotations

from enum import Enum


class Cause(str, Enum):
    """Why a candidate node was dropped, passed through, or kept the scheduler's victims."""

    NONE = ""
    NO_LOWER_PRIORITY = "no lower-priority pods"
    DOES_NOT_FIT = "does not fit"
    PROTECTED = "victims protected by policy"
    QUEUE_SHARE = "queue shares"
    # The policy's guards (policy.guards): every victim set that makes room violates a strict
    # PodDisruptionBudget, or the pods that could make room are inside their minimum runtime.
    STRICT_BUDGET = "strict budget"
    MIN_RUNTIME = "minimum runtime"
    UNKNOWN_NODE = "unknown node"
    UNKNOWN_VICTIM = "unknown victim"
    # The scheduler's victims for this node include pods on other nodes: a victim unit that
    # spans nodes (a PodGroup with disruptionMode all, Kubernetes 1.37), which an extender's
    # answer cannot name (the scheduler resolves each UID on the answer's node only).
    VICTIMS_ELSEWHERE = "victims on other nodes"
    UNMODELLED = "unmodelled constraints"
    IN_FLIGHT = "victims already promised"
    VIEW_HAS_ROOM = "view has room"  # policy.stock: upstream finds no victim to evict
    # policy.stock: the preemptor's own constraints keep it off the node (cordon, taints, node
    # selector and affinity, policy.placement), so preemption never considers it.
    FILTERED = "filtered out"
    # The scheduler's victims could be fewer in reprieve's view: the scheduler counts something
    # reprieve cannot see yet, so reprieve's victims free at least as much as the scheduler's.
    SCHEDULER_SEES_LESS = "scheduler sees less room"
    # The scheduler's victims make room where reprieve's view says they cannot, for no reason
    # the scheduler cannot know: reprieve's record is older (a nomination it still shows, a pod
    # gone), so the room it held is set aside or the scheduler's victims are kept.
    SCHEDULER_NEWER = "scheduler's view newer"
    LEAVING = "pods already leaving"  # the pod fits once terminating pods are gone: nothing to evict
    # Proposed with no victims (kube-scheduler 1.38 sends nodes its own filters pass but another
    # extender's filter rejected), and reprieve finds room there without evicting anyone.
    NOTHING_TO_EVICT = "nothing to evict"
    # Outranked without being solved: a lower bound on its cost is above the chosen node's (policy.bounds).
    NOT_SOLVED = "not solved"


# The causes of the policy's guards (policy.guards): a pod they leave pending is told why.
GUARDED = frozenset({Cause.STRICT_BUDGET, Cause.MIN_RUNTIME})


class Refusal(str, Enum):
    """Why the preemptor may not preempt at all: the answer is empty."""

    NONE = ""
    NEVER = "preemptionPolicy Never"
    VICTIMS_TERMINATING = "victims still terminating"
    # Nominated where the scheduler's victims are all being deleted for reprieve's other answers
    # in flight (policy.preempt.eligibility._room_coming).
    VICTIMS_LEAVING = "victims already leaving"
    DELAY = "preemption delay"
