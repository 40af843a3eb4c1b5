"""Fewest victims whose PriorityClass opts out of preemption (policy.tenancy, with a policy only).

Such a pod is a last resort: it goes only where no victim set without it fits, so this
criterion comes first in every order (a policy's ``ranking:`` cannot move it).
"""

from __future__ import annotations

from policy.criteria.criterion import Criterion, Facts, Kind
from policy.model import Pod


def _of_pod(pod: Pod, facts: Facts) -> int:
    return int(pod.uid in facts.opted_out)


def _brief(value: float, _) -> str | None:
    return f"{value} opted-out victim(s)" if value else None


CRITERION = Criterion(
    name="opted-out victims", field="opted_out_victims", kind=Kind.SUM, of_pod=_of_pod, brief=_brief
)
