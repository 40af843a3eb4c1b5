"""The explain report: stock preemption and reprieve side by side, as plain data.

policy.stock gives what upstream DefaultPreemption would do (and the proposals the scheduler
would send); policy.preempt.decide gives reprieve's answer to them, exactly as the preempt verb
asks for it. docs/explain.md documents every field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from extender import times
from policy import ranking, resources, stock
from policy.filter import filter_nodes
from policy.causes import GUARDED
from policy.criteria import work_lost
from policy.guards import Guards
from policy.model import Pod
from policy.preempt import NodeOutcome, PreemptDecision, Proposal, Verdict, decide
from policy.prioritize import score_nodes
from policy.tenancy import Rules
from policy.view import ClusterView

VERSION = 2  # 2: nodes[].stock.cost is reprieve's key of stock's victims (upstream's: upstream_cost)


def preemption_report(
    *,
    view: ClusterView,
    preemptor: Pod,
    node_names: Sequence[str] | None = None,
    proposals: Mapping[str, Proposal] | None = None,
    rules: Rules | None = None,
    now: float | None = None,
    order: ranking.Order = ranking.DEFAULT,
    guards: Guards | None = None,
) -> dict:
    """Stock and reprieve preemption side by side.

    With ``node_names`` (a pod), stock preemption is dry-run on those nodes and its
    candidates are what reprieve is asked about; with ``proposals`` (a captured preempt
    request), they are the scheduler's candidates as sent (it found the pod eligible).
    ``rules`` are reprieve's multi-tenant rules (policy.tenancy), ``guards`` its strict budgets
    and minimum runtime (policy.guards) and ``now`` the time the preemption delay, the
    minimum runtime and the work lost since the last checkpoint are judged at, all passed on
    to decide().
    """
    if proposals is None:
        dry = stock.decide(view=view, preemptor=preemptor, node_names=node_names or ())
        proposals = dry.proposals
        fits, refusal, dry_run = list(dry.fits), dry.refusal, dry.nodes
    else:
        fits, refusal, dry_run = None, "", {}
    # The one call into reprieve's policy, as the preempt verb makes it but with every node
    # solved (exhaustive), so that each shows its own victims and cost.
    decision = decide(
        view=view, preemptor=preemptor, proposals=proposals, rules=rules, now=now, exhaustive=True, order=order,
        guards=guards,
    )

    outcomes = {o.node: o for o in decision.outcomes}
    both = _Both(
        view=view,
        fits=fits,
        refusal=refusal,
        dry_run=dry_run,
        proposals=proposals,
        pick=stock.pick(_stock_costs(view, proposals)),
        outcomes=outcomes,
        costs={n: o.cost for n, o in outcomes.items() if o.cost is not None},
        # The scheduler then picks among reprieve's answer with its own rules (E-1, C-2).
        final=stock.pick(_stock_costs(view, decision.answer)),
        now=now,
    )
    rows = [_node_row(both, name) for name in (node_names if node_names is not None else sorted(proposals))]
    choice = _choice(both)
    differences = _differences(rows, both, decision, choice)
    return {
        "version": VERSION,
        "kind": "preemption",
        "pod": _pod(preemptor),
        "preemption": {
            "needed": fits is None or not fits,
            "fits": fits,
            "stock": {
                "refusal": refusal,
                "chosen": both.pick.chosen,
                "tied": list(both.pick.tied),
                "victims": _victims(view, proposals[both.pick.chosen].uids) if both.pick.chosen else [],
                "unranked": [n for n in proposals if n not in both.pick.costs],
            },
            "reprieve": {
                "refusal": decision.refusal.value,
                "offered": list(decision.answer),
                "chosen": both.final.chosen,
                "tied": list(both.final.tied),
                "victims": _victims(view, decision.answer[both.final.chosen].uids) if both.final.chosen else [],
                "unranked": [n for n in decision.answer if n not in both.final.costs],
                "reasons": list(decision.reasons),
                # Why no node is offered where the guards (policy.guards) dropped nodes; else None.
                "held": decision.reasons[0] if _held(decision) else None,
            },
            "differs": bool(differences),
            "decided_by": _decided(*choice) if choice else None,
        },
        "nodes": rows,
        "differences": differences,
    }


@dataclass(frozen=True)
class _Both:
    """Both decisions, for the per-node rows."""

    view: ClusterView
    fits: list[str] | None  # None for a request: not asked
    refusal: str  # stock's
    dry_run: Mapping[str, stock.Victims | stock.NotCandidate]
    proposals: Mapping[str, Proposal]  # the scheduler's, as reprieve receives them
    pick: stock.Pick  # stock's choice among the proposals
    outcomes: Mapping[str, NodeOutcome]  # reprieve's, by node
    costs: Mapping[str, ranking.Cost]  # reprieve's ranking keys
    final: stock.Pick  # the scheduler's choice among reprieve's answer
    now: float | None = None  # when the work lost is measured (policy.criteria.work_lost)


def _stock_costs(view: ClusterView, proposals: Mapping[str, Proposal]) -> dict[str, stock.Cost]:
    """Upstream's ranking keys; nodes with a victim the snapshot does not know are left out."""
    costs = {}
    for name, proposal in proposals.items():
        victims = [view.pods.get(uid) for uid in proposal.uids]
        if victims and None not in victims:
            costs[name] = stock.cost(victims, proposal.num_pdb_violations)
    return costs


def _node_row(both: _Both, name: str) -> dict:
    stock_side = _stock_side(both, name)
    reprieve_side = _reprieve_side(both, name)
    differs = []
    if stock_side["candidate"] and reprieve_side["verdict"] in ("dropped", None):
        differs.append("candidate")
    if stock_side["candidate"] and reprieve_side["victims"]:
        if {v["uid"] for v in stock_side["victims"]} != {v["uid"] for v in reprieve_side["victims"]}:
            differs.append("victims")
        if stock_side["pdb_violations"] != reprieve_side["pdb_violations"]:
            differs.append("pdb_violations")
    if (name in both.pick.tied) != (name in both.final.tied):
        differs.append("chosen")
    outcome = both.outcomes.get(name)
    ours, theirs = both.costs.get(name), outcome.proposed_cost if outcome else None
    return {
        "name": name,
        "fits": None if both.fits is None else name in both.fits,
        "stock": stock_side,
        "reprieve": reprieve_side,
        "differs": differs,
        # What decided between the two victim sets, both costed by reprieve's order and facts.
        "decided_by": _decided(ours, theirs) if "victims" in differs and ours and theirs else None,
    }


def _stock_side(both: _Both, name: str) -> dict:
    pick, proposal, dry = both.pick, both.proposals.get(name), both.dry_run.get(name)
    side = {
        "candidate": proposal is not None,
        "status": "not evaluated",
        "victims": [],
        "pdb_violations": None,
        "cost": None,
        "summary": None,
        "upstream_cost": None,
        "rank": pick.ranks.get(name),
        "chosen": name in pick.tied,
        "reasons": [],
    }
    if both.fits is not None and name in both.fits:
        side["status"] = "fits without preemption"
    elif isinstance(dry, stock.NotCandidate):  # filtered out comes first: filters run before preemption
        side["status"] = f"not a candidate: {dry.cause.value}"
        side["reasons"] = [dry.reason]
    elif both.refusal:
        side["reasons"] = [both.refusal]
    elif proposal is not None:
        side["status"] = "candidate"
        side["victims"] = _victims(both.view, proposal.uids)
        side["pdb_violations"] = proposal.num_pdb_violations
        # Costed as reprieve's own victims are (same order, budgets, gangs, homes, rules), so
        # that every criterion has a value on both sides; upstream ranked by its own key.
        outcome = both.outcomes.get(name)
        if outcome is not None and outcome.proposed_cost is not None:
            side["cost"] = _cost(outcome.proposed_cost)
            side["summary"] = _summary(outcome.proposed_cost, both, proposal.uids)
        side["upstream_cost"] = _cost(pick.costs[name]) if name in pick.costs else None
        side["reasons"] = [*(dry.reasons if dry else ()), *([pick.reasons[name]] if name in pick.reasons else [])]
        if name not in pick.ranks:
            side["reasons"].append("not ranked: a victim is not in the snapshot")
    side["reasons"] = [times.readable(r) for r in side["reasons"]]
    return side


def _summary(cost: ranking.Cost, both: _Both, uids: Sequence[str]) -> str:
    """The cost in brief, with the GPU-seconds the victims lose apart where they hold GPUs."""
    gpu = work_lost.gpu_seconds([both.view.pods[u] for u in uids if u in both.view.pods], both.now)
    brief = cost.describe()
    if not gpu:
        return brief
    return ", ".join(p for p in (brief, f"{gpu:.0f} GPU-seconds lost") if p)


def _reprieve_side(both: _Both, name: str) -> dict:
    outcome, proposal = both.outcomes.get(name), both.proposals.get(name)
    if outcome is None:
        return {
            "verdict": None, "cause": "", "victims": [], "pdb_violations": None, "violated_budgets": [],
            "kept_scheduler_victims": False, "rank": None, "cost": None, "summary": None, "offered": False,
            "chosen": False, "reasons": [],
        }  # fmt: skip
    # Unjudged: passed through, or (not offered) outranked without a cost of its own.
    passed = outcome.verdict is Verdict.PASSED_THROUGH or (outcome.verdict is Verdict.OUTRANKED and outcome.cost is None)
    uids = proposal.uids if passed else tuple(p.uid for p in outcome.victims)
    cost = both.costs.get(name)
    return {
        "verdict": outcome.verdict.value,
        "cause": outcome.cause.value,
        "victims": _victims(both.view, uids),
        "pdb_violations": proposal.num_pdb_violations if passed else (outcome.violations.count if cost else None),
        "violated_budgets": list(outcome.violations.budgets),
        "kept_scheduler_victims": outcome.kept_scheduler_victims,
        "rank": (1 + sum(c.key < cost.key for c in both.costs.values())) if cost else None,
        "cost": _cost(cost) if cost else None,
        "summary": _summary(cost, both, uids) if cost else None,
        "offered": outcome.verdict in (Verdict.CHOSEN, Verdict.PASSED_THROUGH),
        "chosen": name in both.final.tied,
        "reasons": [times.readable(r) for r in outcome.reasons],
    }


def _cost(cost: ranking.Cost) -> dict:
    """A ranking key by its criteria's JSON names (policy.ranking.Criterion.field), in its order."""
    return {criterion.field: _plain(cost, criterion) for criterion in cost.layout.criteria}


def _plain(cost: ranking.Cost, criterion: ranking.Criterion) -> object:
    """``cost``'s value of ``criterion`` for JSON."""
    value = cost.value(criterion)
    if criterion.plain is not None:  # e.g. the plain sum of priorities (compared shifted per victim)
        value = criterion.plain(value, cost.value)
    if criterion.unit is ranking.Unit.TIME:
        return times.iso(-value)
    return None if value == -float("inf") else value  # -inf: no live victim, every one terminating


def _decided(ours: ranking.Cost, theirs: ranking.Cost) -> dict:
    """The first criterion, in the decision's order, on which two costs differ, with both values
    (``criterion`` null where they are equal on every one)."""
    c = ours.deciding(theirs)
    if c is None:
        return {"criterion": None, "field": None, "reprieve": None, "stock": None}
    return {"criterion": c.name, "field": c.field, "reprieve": _plain(ours, c), "stock": _plain(theirs, c)}


def _victims(view: ClusterView, uids: Iterable[str]) -> list[dict]:
    out = []
    for uid in uids:
        pod = view.pods.get(uid)
        if pod is None:
            out.append({"uid": uid, "name": None, "priority": None, "qos": None, "pdbs": [], "start_time": None, "terminating": None})
            continue
        out.append(
            {
                "uid": uid,
                "name": pod.key,
                "priority": pod.priority,
                "qos": pod.qos.wire,
                "pdbs": sorted(b.key for b in view.budgets_covering(pod)),
                "start_time": times.iso(pod.start_time),
                "terminating": pod.terminating,
            }
        )
    return out


def _pod(pod: Pod) -> dict:
    return {
        "name": pod.key,
        "uid": pod.uid,
        "priority": pod.priority,
        "priority_class": pod.priority_class,
        "qos": pod.qos.wire,
        "requests": resources.describe(pod.requests),
        "nominated_node": pod.nominated_node_name,
        "preemption_policy": "Never" if pod.preemption_never else "PreemptLowerPriority",
        "unmodelled": list(pod.unmodelled),
    }


def _differences(rows: list[dict], both: _Both, decision: PreemptDecision, choice: tuple | None) -> list[str]:
    """One line per difference between stock preemption and reprieve, most important first,
    each with what decided it: the first criterion, in the decision's order, on which the two
    costs differ (policy.ranking.Cost.decided_by)."""
    lines = []
    if set(both.pick.tied) != set(both.final.tied):
        lines.append(_choice_difference(rows, both, decision, choice))
    for row in rows:
        s, r = row["stock"], row["reprieve"]
        if "candidate" in row["differs"]:
            why = r["reasons"][0] if r["reasons"] else "not asked"
            lines.append(f"{row['name']}: reprieve drops the node: {why}")
        if "victims" in row["differs"]:
            outcome = both.outcomes[row["name"]]
            text = _victim_difference(s["victims"], r["victims"])
            if outcome.cost is not None and outcome.proposed_cost is not None:
                spared = {v["name"] for v in s["victims"]} - {v["name"] for v in r["victims"]}
                text += _why_other_victims(outcome.cost, outcome.proposed_cost, _naming(r, spared))
            lines.append(f"{row['name']}: {text}")
        if "pdb_violations" in row["differs"]:
            lines.append(
                f"{row['name']}: PDB violations {s['pdb_violations']} by stock's count, "
                f"{r['pdb_violations']} by reprieve's exact count"
            )
    return [times.readable(line) for line in lines]


_GUARDED = {c.value for c in GUARDED}


def _held(decision: PreemptDecision) -> bool:
    """No node offered, and the guards dropped some (policy.preempt.answer words the reason)."""
    return not decision.answer and not decision.refusal.value and any(
        o.verdict is Verdict.DROPPED and o.cause in GUARDED for o in decision.outcomes
    )


def _choice(both: _Both) -> tuple[ranking.Cost, ranking.Cost] | None:
    """reprieve's costs on its own node and on stock's, where the two choose differently and
    reprieve costed both (its own victims on each: what its ranking compared)."""
    ours, theirs = both.final.chosen, both.pick.chosen
    if ours is None or theirs is None or ours == theirs or set(both.pick.tied) == set(both.final.tied):
        return None
    if ours not in both.costs or theirs not in both.costs:
        return None
    return both.costs[ours], both.costs[theirs]


def _choice_difference(rows: list[dict], both: _Both, decision: PreemptDecision, choice: tuple | None) -> str:
    ours = " or ".join(both.final.tied) or "no node"
    theirs = " or ".join(both.pick.tied) or "no node"
    text = f"reprieve preempts on {ours}, stock on {theirs}"
    if decision.refusal.value:
        return f"{text}: {decision.reasons[0]}"
    if choice is not None:
        mine, stocks = both.final.chosen, both.pick.chosen
        here, there = f" on {mine}", f" on {stocks}"
        if choice[0].key == choice[1].key:
            return (
                f"{text}; reprieve's victims on {mine} and on {stocks} are equal on every criterion: "
                f"a tie, broken differently (reprieve offers the first by name)"
            )
        return f"{text}; reprieve ranks its victims on {mine} first, {choice[0].decided_by(choice[1], here, there)}"
    row = next((r for r in rows if r["name"] == both.pick.chosen), None)
    if row is None or not row["reprieve"]["reasons"] or row["reprieve"]["chosen"]:
        return text
    if row["reprieve"]["verdict"] == Verdict.DROPPED.value and row["reprieve"]["cause"] in _GUARDED:
        return f"{text}; reprieve drops {row['name']}: {row['reprieve']['reasons'][0]}"
    why = row["reprieve"]["reasons"][-1].removeprefix("not chosen: ").replace(" here vs ", f" on {row['name']} vs ")
    return f"{text}; reprieve's ranking puts {row['name']} behind: {why}"


def _why_other_victims(ours: ranking.Cost, theirs: ranking.Cost, why: str) -> str:
    """What decided between reprieve's victims on a node and stock's there, both costed alike;
    where stock's cost less (the rules protect one, or reprieve's view leaves less room), ``why``
    reprieve does not take them."""
    if ours.key < theirs.key:
        return f", {ours.decided_by(theirs)}"
    if ours.key == theirs.key:
        return ": equal on every criterion, a tie broken differently"
    c = ours.deciding(theirs)
    return f", though stock's victims rank first by {c.name} ({theirs.show(c)} against {ours.show(c)})" + (
        f"; reprieve: {why}" if why else ""
    )


def _naming(side: dict, pods: set[str]) -> str:
    """reprieve's first reason on a node that names one of ``pods``, else its cause."""
    named = [re.compile(rf"(?<![\w./-]){re.escape(p)}(?![\w./-])") for p in pods if p]
    return next((r for r in side["reasons"] if any(n.search(r) for n in named)), side["cause"])


def _victim_difference(stock_victims: list[dict], reprieve_victims: list[dict]) -> str:
    ours = {v["uid"] for v in reprieve_victims}
    theirs = {v["uid"] for v in stock_victims}
    spared = [v for v in stock_victims if v["uid"] not in ours]
    extra = [v for v in reprieve_victims if v["uid"] not in theirs]
    names = lambda vs: ", ".join(v["name"] or v["uid"] for v in vs)  # noqa: E731
    if spared and extra:
        return f"reprieve evicts {names(extra)} instead of {names(spared)}"
    if spared:
        return f"reprieve spares {names(spared)}"
    return f"reprieve also evicts {names(extra)}"


def args_report(*, view: ClusterView, pod: Pod, node_names: Sequence[str]) -> dict:
    """What reprieve's filter and prioritize answer for an ExtenderArgs body (either verb's)."""
    decision = filter_nodes(view=view, pod=pod, node_names=node_names)
    scores = {s.node: s.score for s in score_nodes(view=view, pod=pod, node_names=node_names)}
    rows = []
    for name in node_names:
        info = view.nodes.get(name)
        short = stock.shortfall(view=view, pod=pod, node=info) if info is not None else {}
        reason = decision.rejected.get(name, "")
        if short and not reason:
            reason = (
                f"passed though short of {resources.describe(short)} here: reprieve leaves resource "
                "shortages to the scheduler's own filters (its view is fresher)"
            )
        elif info is None:
            reason = "node unknown to the snapshot: filter passes it"
        rows.append(
            {
                "name": name,
                "known": info is not None,
                "fits": None if info is None else not short,
                "filter": "rejected" if name in decision.rejected else "passed",
                "reason": reason,
                "score": scores.get(name),
            }
        )
    return {
        "version": VERSION,
        "kind": "filter-prioritize",
        "pod": _pod(pod),
        "nodes": rows,
    }
