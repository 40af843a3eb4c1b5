"""The explain report: stock preemption and reprieve side by side, as plain data.

policy.stock gives what upstream DefaultPreemption would do (and the proposals the scheduler
would send); policy.preempt.decide gives reprieve's answer to them, exactly as the preempt verb
asks for it. docs/explain.md documents every field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from extender import times
from policy import ranking, resources, stock
from policy.filter import filter_nodes
from policy.causes import GUARDED
from policy.guards import Guards
from policy.model import Pod
from policy.preempt import NodeOutcome, PreemptDecision, Proposal, Verdict, decide
from policy.prioritize import score_nodes
from policy.qos import QoS
from policy.tenancy import Rules
from policy.view import ClusterView

VERSION = 1


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
    and minimum runtime (policy.guards) and ``now`` the time the preemption delay and the
    minimum runtime are judged at, all passed on to decide().
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
    )
    rows = [_node_row(both, name) for name in (node_names if node_names is not None else sorted(proposals))]
    differences = _differences(rows, both.pick, both.final, decision)
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
    return {
        "name": name,
        "fits": None if both.fits is None else name in both.fits,
        "stock": stock_side,
        "reprieve": reprieve_side,
        "differs": differs,
    }


def _stock_side(both: _Both, name: str) -> dict:
    pick, proposal, dry = both.pick, both.proposals.get(name), both.dry_run.get(name)
    side = {
        "candidate": proposal is not None,
        "status": "not evaluated",
        "victims": [],
        "pdb_violations": None,
        "cost": None,
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
        side["cost"] = _cost(pick.costs[name]) if name in pick.costs else None
        side["reasons"] = [*(dry.reasons if dry else ()), *([pick.reasons[name]] if name in pick.reasons else [])]
        if name not in pick.ranks:
            side["reasons"].append("not ranked: a victim is not in the snapshot")
    side["reasons"] = [times.readable(r) for r in side["reasons"]]
    return side


def _reprieve_side(both: _Both, name: str) -> dict:
    outcome, proposal = both.outcomes.get(name), both.proposals.get(name)
    if outcome is None:
        return {
            "verdict": None, "cause": "", "victims": [], "pdb_violations": None, "violated_budgets": [],
            "kept_scheduler_victims": False, "rank": None, "cost": None, "offered": False, "chosen": False,
            "reasons": [],
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
        "offered": outcome.verdict in (Verdict.CHOSEN, Verdict.PASSED_THROUGH),
        "chosen": name in both.final.tied,
        "reasons": [times.readable(r) for r in outcome.reasons],
    }


def _cost(cost: ranking.Cost) -> dict:
    """A ranking key by its criteria's JSON names (policy.ranking.Criterion.field), in its order."""
    shown = {}
    for criterion, value in zip(cost.layout.criteria, cost.key):
        if criterion.plain is not None:  # e.g. the plain sum of priorities (compared shifted per victim)
            value = criterion.plain(value, cost.value)
        if criterion.unit is ranking.Unit.TIME:
            value = times.iso(-value)
        elif value == -float("inf"):  # no live victim: every one terminating
            value = None
        shown[criterion.field] = value
    return shown


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


def _differences(rows: list[dict], stock_pick: stock.Pick, final: stock.Pick, decision: PreemptDecision) -> list[str]:
    """One line per difference between stock preemption and reprieve, most important first."""
    lines = []
    if set(stock_pick.tied) != set(final.tied):
        lines.append(_choice_difference(rows, stock_pick, final, decision))
    for row in rows:
        s, r = row["stock"], row["reprieve"]
        if "candidate" in row["differs"]:
            why = r["reasons"][0] if r["reasons"] else "not asked"
            lines.append(f"{row['name']}: reprieve drops the node: {why}")
        if "victims" in row["differs"]:
            lines.append(f"{row['name']}: {_victim_difference(s['victims'], r['victims'])}")
        if "pdb_violations" in row["differs"]:
            lines.append(
                f"{row['name']}: PDB violations {s['pdb_violations']} by stock's count, "
                f"{r['pdb_violations']} by reprieve's exact count"
            )
    return lines


_GUARDED = {c.value for c in GUARDED}


def _held(decision: PreemptDecision) -> bool:
    """No node offered, and the guards dropped some (policy.preempt.answer words the reason)."""
    return not decision.answer and not decision.refusal.value and any(
        o.verdict is Verdict.DROPPED and o.cause in GUARDED for o in decision.outcomes
    )


def _choice_difference(rows: list[dict], stock_pick: stock.Pick, final: stock.Pick, decision: PreemptDecision) -> str:
    ours = " or ".join(final.tied) or "no node"
    theirs = " or ".join(stock_pick.tied) or "no node"
    text = f"reprieve preempts on {ours}, stock on {theirs}"
    if decision.refusal.value:
        return f"{text}: {decision.reasons[0]}"
    row = next((r for r in rows if r["name"] == stock_pick.chosen), None)
    if row is None or not row["reprieve"]["reasons"] or row["reprieve"]["chosen"]:
        return text
    if row["reprieve"]["verdict"] == Verdict.DROPPED.value and row["reprieve"]["cause"] in _GUARDED:
        return f"{text}; reprieve drops {row['name']}: {row['reprieve']['reasons'][0]}"
    why = row["reprieve"]["reasons"][-1].removeprefix("not chosen: ").replace(" here vs ", f" on {row['name']} vs ")
    return f"{text}; reprieve's ranking puts {row['name']} behind: {why}"


def _victim_difference(stock_victims: list[dict], reprieve_victims: list[dict]) -> str:
    ours = {v["uid"] for v in reprieve_victims}
    theirs = {v["uid"] for v in stock_victims}
    spared = [v for v in stock_victims if v["uid"] not in ours]
    extra = [v for v in reprieve_victims if v["uid"] not in theirs]
    names = lambda vs: ", ".join(v["name"] or v["uid"] for v in vs)  # noqa: E731
    if spared and extra:
        text = f"reprieve evicts {names(extra)} instead of {names(spared)}"
    elif spared:
        text = f"reprieve spares {names(spared)}"
    else:
        text = f"reprieve also evicts {names(extra)}"
    tags = []
    for s in spared:
        if s["pdbs"] and not any(set(e["pdbs"]) & set(s["pdbs"]) for e in extra):
            tags.append(f"spares a PDB-protected pod ({s['name']}, {', '.join(s['pdbs'])})")
        for e in extra:
            if e["priority"] == s["priority"] and e["qos"] and s["qos"] and QoS.from_wire(e["qos"]) < QoS.from_wire(s["qos"]):
                tags.append(f"QoS: {e['qos']} before {s['qos']} at priority {s['priority']}")
            elif e["priority"] is not None and s["priority"] is not None and e["priority"] != s["priority"]:
                higher = "higher" if e["priority"] > s["priority"] else "lower"
                tags.append(f"{higher} priority {e['priority']} instead of {s['priority']}")
    return text + (f": {'; '.join(dict.fromkeys(tags))}" if tags else "")


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
