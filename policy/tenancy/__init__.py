"""Multi-tenant preemption rules on top of Kubernetes priority.

Queues (kube-arbitrator's proportion policy and YuniKorn's hierarchy) with guaranteed and
deserved shares, preemption fences, opted-out priority classes, protected namespaces,
same-application protection and a preemption delay. One module per job:

* rules: ``Rules``, the validated policy file (extender.policy_file);
* shares: ``Standing``, what the rules say about one cluster view (who uses what), from
  ``assess``, ``reassess`` or ``with_pending``; tally counts the requests, proportion splits
  capacity by weight, inheritance hands guarantees down the tree;
* in_flight: ``with_in_flight`` turns a ``Standing`` into a ``Projected``, with the answers the
  view does not show yet;
* screening: from a ``Projected``, ``delay_left`` and the ``Screen`` that judges the pods one
  preemptor may take.

The order policy.preempt.decide calls them in, assess -> with_pending -> with_in_flight ->
delay_left and screen, is the only one that runs: delay_left and screen take a ``Projected``,
which only with_in_flight makes, from a ``Standing``; and a ``Projected`` has no tally for
with_pending to count in.

The laws, for a preemptor in queue Q and a potential victim in queue V (YuniKorn's laws 2-7,
with Kubernetes priority on top: victims always have a lower priority than the preemptor):

* pods in a protected namespace, of the preemptor's own application, or whose PriorityClass
  opts out (hard) are never victims; a soft opt-out makes them a last resort;
* V == Q: the Kubernetes rules only;
* V != Q: Q must be below its share, V must lie inside Q's fence and not be ``disabled``,
  and V (and each of its ancestors that is not also Q's) must stay at or above its share
  after losing every victim taken from it.

Shares are judged in the resources the preemption is for: those the preemptor is short of on
the victims' node. A queue's guarantee is its own, or, in a resource its own does not name,
what its parent's guarantee leaves after its siblings' usage (YuniKorn's).
"""

from policy.tenancy.in_flight import Projected, with_in_flight
from policy.tenancy.inheritance import Inherited
from policy.tenancy.proportion import water_fill
from policy.tenancy.rules import OPT_OUT_ANNOTATION, OptOut, Preemption, Queue, Rules
from policy.tenancy.screening import Judgement, Screen, delay_left, screen
from policy.tenancy.shares import QueueStanding, Standing, assess, reassess, with_pending

__all__ = [
    "OPT_OUT_ANNOTATION",
    "Inherited",
    "Judgement",
    "OptOut",
    "Preemption",
    "Projected",
    "Queue",
    "QueueStanding",
    "Rules",
    "Screen",
    "Standing",
    "assess",
    "delay_left",
    "reassess",
    "screen",
    "water_fill",
    "with_in_flight",
    "with_pending",
]
