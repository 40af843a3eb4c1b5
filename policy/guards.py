"""Rules that hold whatever the ranking says: budgets preemption never violates and pods it
leaves alone until they have run a while (the policy file's ``strictBudgets`` and
``minimumRuntime``; docs/policy.md, "Strict budgets and minimum runtime").

``Guards`` is the validated pair (extender.policy_file reads it). For one request it gives:

* ``strict_of``: the request's budgets_of (policy.pdb) narrowed to the strict budgets, which the
  criterion ``strict budget violations`` (policy.criteria.strict_budgets) counts exactly as PDB
  violations are counted; a node whose cheapest victims still violate one is dropped;
* ``inside``: why a pod is inside its minimum runtime ('' if it is not); such a pod is never a
  victim, like a pod of a protected namespace.

``check`` judges victims reprieve did not choose (the scheduler's, kept as proposed) by both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from policy.causes import Cause
from policy.model import DisruptionBudget, Pod
from policy.pdb import BudgetsOf, count_violations
from policy.view import ClusterView

# pod -> why it is inside its minimum runtime ('' if not), for one request's ``now``
Inside = Callable[[Pod], str]


@dataclass(frozen=True, slots=True)
class StrictBudgets:
    """Which PodDisruptionBudgets preemption never violates. A list left out (None) or empty
    selects nothing by itself; a rule that leaves both lists out makes every budget strict (an
    empty list is not left out: ``{namespaces: []}`` selects nothing)."""

    namespaces: frozenset[str] | None = None
    priority_classes: frozenset[str] | None = None

    @property
    def every(self) -> bool:
        return self.namespaces is None and self.priority_classes is None

    def strict(self, budget: DisruptionBudget, members: Sequence[Pod]) -> bool:
        """Whether ``budget`` is strict: it lives in a listed namespace, or some pod it covers
        (``members``: every pod of the view it covers, bound or pending) names a listed
        PriorityClass in spec.priorityClassName."""
        if self.every or budget.namespace in (self.namespaces or ()):
            return True
        classes = self.priority_classes or ()
        return bool(classes) and any(p.priority_class in classes for p in members)

    def describe(self) -> str:
        if self.every:
            return "every PodDisruptionBudget"
        parts = []
        if self.namespaces:
            parts.append(f"those in namespace(s) {', '.join(sorted(self.namespaces))}")
        if self.priority_classes:
            parts.append(f"those covering pods of PriorityClass(es) {', '.join(sorted(self.priority_classes))}")
        if not parts:
            return "no PodDisruptionBudget (its lists are empty; leave both out to make every budget strict)"
        return "PodDisruptionBudgets: " + "; and ".join(parts)


@dataclass(frozen=True, slots=True)
class MinimumRuntime:
    """Pods that preemption leaves alone until they have run ``duration`` seconds since
    status.startTime. A list left out (or empty) does not restrict which pods match; a rule
    that names neither matches every pod."""

    duration: float  # seconds, > 0
    namespaces: frozenset[str] = frozenset()
    priority_classes: frozenset[str] = frozenset()
    index: int = 0  # its place in the file's minimumRuntime list, for reasons

    def matches(self, pod: Pod) -> bool:
        if self.namespaces and pod.namespace not in self.namespaces:
            return False
        return not self.priority_classes or pod.priority_class in self.priority_classes

    def protects(self, pod: Pod, now: float | None) -> bool:
        """``pod`` matches and has run less than ``duration`` at ``now`` (Guards.inside: a start
        or a now unknown counts as just started; a terminating pod is never protected)."""
        if pod.terminating or not self.matches(pod):
            return False
        return now is None or pod.start_time is None or now - pod.start_time < self.duration

    def describe(self) -> str:
        who = []
        if self.priority_classes:
            who.append(f"PriorityClass(es) {', '.join(sorted(self.priority_classes))}")
        if self.namespaces:
            who.append(f"namespace(s) {', '.join(sorted(self.namespaces))}")
        return f"minimumRuntime[{self.index}]: {span(self.duration)} for pods of " + (" in ".join(who) or "every kind")


@dataclass(frozen=True, slots=True)
class Guards:
    strict: StrictBudgets | None = None  # None: no strictBudgets rule
    runtime: tuple[MinimumRuntime, ...] = ()

    def strict_of(self, budgets_of: BudgetsOf, view: ClusterView) -> BudgetsOf | None:
        """``budgets_of`` narrowed to the strict budgets (None without the rule). Each budget is
        judged once per call (a request): by its namespace, or by the pods the view shows it
        covers."""
        rule = self.strict
        if rule is None:
            return None
        members = view.budget_members
        judged: dict[str, bool] = {}
        found: dict[str, tuple[DisruptionBudget, ...]] = {}

        def is_strict(budget: DisruptionBudget) -> bool:
            verdict = judged.get(budget.key)
            if verdict is None:
                verdict = judged[budget.key] = rule.strict(budget, members.get(budget.key, ()))
            return verdict

        def strict_of(pod: Pod) -> Sequence[DisruptionBudget]:
            budgets = budgets_of(pod)
            if not budgets:
                return ()
            known = found.get(pod.uid)
            if known is None:
                known = found[pod.uid] = tuple(b for b in budgets if is_strict(b))
            return known

        return strict_of

    def inside(self, now: float | None) -> Inside | None:
        """pod -> why it is inside its minimum runtime at ``now`` ('' if it is not); None
        without the rule. A pod whose start is unknown (no status.startTime yet, or no ``now``
        to measure from) counts as just started: inside. A terminating pod is never inside: it
        is leaving anyway."""
        rules = self.runtime
        if not rules:
            return None

        def inside(pod: Pod) -> str:
            protecting = [r for r in rules if r.protects(pod, now)]
            if not protecting:
                return ""
            longest = max(protecting, key=lambda r: r.duration)  # the last to let it go
            where = f"its minimum runtime of {span(longest.duration)} (minimumRuntime[{longest.index}])"
            if now is None or pod.start_time is None:
                return f"start unknown, so inside {where}"
            return f"has run {span(max(0.0, now - pod.start_time))} of {where}"

        return inside


def check(victims: Sequence[Pod], *, inside: Inside | None, strict_of: BudgetsOf | None) -> tuple[Cause, str]:
    """Whether victims reprieve did not choose keep the guards: (Cause.NONE, '') if they do,
    else the cause and why (the first pod inside its minimum runtime, or the strict budgets the
    set violates, counted as policy.pdb counts violations, ``victims`` most important first)."""
    if inside is not None:
        for pod in victims:
            why = inside(pod)
            if why:
                return Cause.MIN_RUNTIME, f"{pod.key} {why}"
    if strict_of is not None:
        violations = count_violations(victims, strict_of)
        if violations.count:
            return Cause.STRICT_BUDGET, f"{violations.count} victim(s) violate strict PodDisruptionBudget {', '.join(violations.budgets)}"
    return Cause.NONE, ""


def span(seconds: float) -> str:
    """A duration as the policy file writes it: ``10m``, ``1m30s``, ``2h``, ``500ms``."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + (f"{secs}s" if secs else "")
    return text or "0s"
