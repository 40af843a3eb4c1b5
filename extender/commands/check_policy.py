"""``reprieve check-policy``: validate a policy file and show what it says about a cluster."""

from __future__ import annotations

from extender.policy_file import Policy
from policy import resources
from policy.guards import Guards, MinimumRuntime, StrictBudgets, span
from policy.tenancy import Preemption, Rules, Standing, assess
from policy.view import ClusterView


def report(policy: Policy, view: ClusterView | None, now: float | None = None) -> str:
    """The ranking's order and the guards (with a cluster: what they protect in it at ``now``);
    then one block per queue, parents before children: configuration, then (with a cluster)
    usage, deserved share, the share preemption defends, and who may preempt whom."""
    ranked = f"ranking: {', '.join(policy.order.names)}"
    rules = policy.rules
    guarded = _guards(policy.guards, view, now)
    if rules is None:
        if guarded:
            return "\n".join(["policy valid: no multi-tenant (queue) rules", ranked, *guarded]) + "\n"
        return f"policy valid: the ranking's order only, no multi-tenant rules\n{ranked}\n"
    standing = assess(rules, view) if view is not None else None
    lines = [
        f"policy valid: {len(rules.queue_names())} queue(s), default queue {rules.default_queue}",
        ranked,
        *guarded,
        f"protected namespaces: {', '.join(sorted(rules.protected_namespaces)) or 'none'}",
        f"opt-out: PriorityClass annotation {rules.opt_out_annotation}=\"false\" ({rules.opt_out.value})",
        f"same application: {_application(rules)}",
        f"preemption delay: {rules.delay:g}s",
    ]
    for name in _tree_order(rules):
        lines.append("")
        lines.extend(_queue(rules, standing, name))
    if standing is None:
        lines += ["", "(give --snapshot or --kubeconfig to see usage, deserved shares and who may preempt)"]
    return "\n".join(lines) + "\n"


def _queue(rules: Rules, standing: Standing | None, name: str) -> list[str]:
    q = rules.queue(name)
    depth = len(rules.lineage(name)) - 1
    pad = "  " * depth
    title = f"{pad}queue {name}" + (f" (in {q.parent})" if q.parent else "")
    if name == rules.default_queue:
        title += " [default]"
    out = [title]
    pad += "  "
    members = []
    if q.namespaces:
        members.append(f"namespaces {', '.join(sorted(q.namespaces))}")
    if q.selector is not None:
        members.append("a label selector")
    if name == rules.default_queue and not members:
        members.append("every pod no other queue matches")
    out.append(f"{pad}pods: {' and '.join(members) if members else 'none directly'}")
    config = [f"preemption {q.preemption.value}"]
    if q.weight:
        config.append(f"weight {q.weight}")
    if q.guaranteed:
        config.append(f"guaranteed {resources.describe(q.guaranteed)}")
    if q.delay is not None:
        config.append(f"delay {q.delay:g}s")
    out.append(f"{pad}{', '.join(config)}")
    if standing is None:
        return out
    s = standing.queues[name]
    out.append(f"{pad}usage     {resources.describe(s.usage) or '-'}")
    out.append(f"{pad}demand    {resources.describe(s.demand) or '-'}")
    for resource, got in sorted(s.inherited.items()):
        out.append(f"{pad}inherited {got.describe(resource)}")
    if q.weight:
        out.append(f"{pad}deserved  {resources.describe(s.deserved) or '-'}")
    out.append(f"{pad}share     {resources.describe(s.share) or 'none'}")
    out.append(f"{pad}may preempt other queues: {_claims(s)}")
    out.append(f"{pad}may lose pods to other queues: {_exposed(rules, s)}")
    return out


def _claims(s) -> str:
    """Whether the queue may take other queues' pods: only for a pod short of a resource it is
    below its share of, on the node (docs/policy.md, "Shares are judged where the preemption is")."""
    below = sorted(r for r, share in s.share.items() if s.usage.get(r, 0) < share)
    if below:
        which = "it" if len(below) == 1 else "one of these"
        return f"yes, below its share of {', '.join(below)}, for a pod short of {which} on the node"
    origins = sorted({got.origin for got in s.inherited.values()})
    grows = (
        f"; what it takes from other queues under {', '.join(origins)} raises the guarantee it inherits"
        if origins else ""
    )
    if s.share:
        return f"no, not below its share{grows}"
    return f"no, it has no share{grows}"


def _exposed(rules: Rules, s) -> str:
    """Whether the queue may lose pods to other queues: to pods short only of resources it is
    above its share of (or has none of)."""
    disabled = next((q for q in rules.lineage(s.name) if rules.queue(q).preemption is Preemption.DISABLED), None)
    if disabled is not None:
        return f"no, preemption disabled on {disabled}"
    if not s.usage:
        return "no, it uses nothing"
    if not s.share:
        return "yes, it has no share"
    spare = {r: s.usage.get(r, 0) - share for r, share in s.share.items() if s.usage.get(r, 0) > share}
    tight = ", ".join(sorted(r for r in s.share if r not in spare))
    origins = sorted({got.origin for got in s.inherited.values()})
    caveat = (
        f"; the guarantee it inherits does not hold against queues under {', '.join(origins)} with a share of their own"
        if origins else ""
    )
    if not spare:
        # Resources it has no share of protect nothing: a pod short only of those may take its pods.
        return (
            f"no, at or below its share of {tight} "
            f"(a pod short of none of these on the node could still take its pods){caveat}"
        )
    if tight:
        return (
            f"yes, above its share by {resources.describe(spare)}; not to pods short of {tight} on the node "
            f"(at or below its share there){caveat}"
        )
    return f"yes, above its share by {resources.describe(spare)}{caveat}"


def _guards(guards: Guards | None, view: ClusterView | None, now: float | None) -> list[str]:
    """strictBudgets and minimumRuntime, each with (given a cluster) what it protects in it."""
    if guards is None:
        return []
    lines = []
    if guards.strict is not None:
        lines.append(f"strict budgets: {guards.strict.describe()} (preemption never violates them)")
        if view is not None:
            lines += _strict_now(guards.strict, view)
    for rule in guards.runtime:
        lines.append(f"minimum runtime: {rule.describe()} (preemption leaves them alone until then)")
        if view is not None:
            lines += _young_now(rule, view, now)
    return lines


def _strict_now(rule: StrictBudgets, view: ClusterView) -> list[str]:
    """The strict budgets of the cluster, and why each is."""
    found = []
    for budget in sorted((b for bs in view.budgets.values() for b in bs), key=lambda b: b.key):
        members = view.budget_members.get(budget.key, ())
        if not rule.strict(budget, members):
            continue
        if rule.every or budget.namespace in (rule.namespaces or ()):
            why = f"namespace {budget.namespace}" if not rule.every else "every budget"
        else:
            classes = sorted({p.priority_class for p in members if p.priority_class in (rule.priority_classes or ())})
            why = f"covers pods of {', '.join(classes)}"
        found.append(
            f"{budget.key} ({why}; allows {budget.disruptions_allowed} disruption(s), covers {len(members)} pod(s))"
        )
    if not found:
        return ["  in the cluster: no PodDisruptionBudget is strict"]
    return [f"  in the cluster: {len(found)} strict: " + _listing(found)]


def _young_now(rule: MinimumRuntime, view: ClusterView, now: float | None) -> list[str]:
    """The running pods ``rule`` matches, and those it protects at ``now`` (how long each has
    left, or that its start is unknown)."""
    matching = [p for p in view.pods.values() if p.node_name is not None and not p.terminating and rule.matches(p)]
    if not matching:
        return ["  in the cluster: no running pod matches"]
    young = []
    for pod in sorted(matching, key=lambda p: p.key):
        if rule.protects(pod, now):
            known = now is not None and pod.start_time is not None
            young.append(f"{pod.key} ({span(rule.duration - (now - pod.start_time)) + ' left' if known else 'start unknown'})")
    head = f"  in the cluster: {len(young)} of {len(matching)} running pod(s) it matches protected now"
    return [head + (": " + _listing(young) if young else "")]


def _listing(items: list[str], limit: int = 10) -> str:
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f" and {more} more" if more > 0 else "")


def _application(rules: Rules) -> str:
    ways = []
    if rules.application_label:
        ways.append(f"label {rules.application_label}")
    if rules.application_owner:
        ways.append("controlling owner reference")
    return " or ".join(ways) if ways else "not identified (no protection)"


def _tree_order(rules: Rules) -> list[str]:
    names = rules.queue_names()
    ordered: list[str] = []

    def visit(parent: str | None) -> None:
        for name in names:
            if rules.parent(name) == parent:
                ordered.append(name)
                visit(name)

    visit(None)
    return ordered
