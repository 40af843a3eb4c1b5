"""The explain report (extender.commands.explain) as text for an 80-column terminal."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

from policy import ranking as _ranking

WIDTH = 80
MARK = "*"  # marks whatever differs between stock preemption and reprieve
FILTERED = "not a candidate: filtered out"  # a stock status (explain_report, policy.causes.Cause.FILTERED)
DEFAULT_RANKING = _ranking.DEFAULT.names
STRICT = _ranking.STRICT_BUDGETS.name


def render(report: dict) -> str:
    lines = _header(report)
    if report["kind"] == "preemption":
        lines += _preemption(report)
    else:
        lines += _filter_prioritize(report)
    return "\n".join(lines) + "\n"


def _wrap(text: str, first: str = "", rest: str | None = None) -> list[str]:
    """``text`` wrapped to WIDTH; long words are broken so that no line is ever wider."""
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=first,
        subsequent_indent=rest if rest is not None else " " * len(first),
        break_long_words=True,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _header(report: dict) -> list[str]:
    pod, source = report["pod"], report["input"]
    what = f"request {source['request']}" if source["request"] else "pod"
    klass = f" ({pod['priority_class']})" if pod["priority_class"] else ""
    lines = _wrap(f"reprieve explain: {pod['name']} ({what})")
    lines += _wrap(f"priority {pod['priority']}{klass}, {pod['qos']}, requests {pod['requests']}", "  ")
    extras = []
    if pod["nominated_node"]:
        extras.append(f"nominated to {pod['nominated_node']}")
    if pod["preemption_policy"] == "Never":
        extras.append("preemptionPolicy Never")
    if extras:
        lines += _wrap(", ".join(extras), "  ")
    lines += _unmodelled(pod)
    lines += _wrap(_loaded(source), "  ")
    lines += _wrap(_policy(source), "  ")
    return lines + [""]


def _unmodelled(pod: dict) -> list[str]:
    """What the pod uses that reprieve does not model: the scheduler may reject nodes shown here."""
    if not pod["unmodelled"]:
        return []
    return _wrap(
        f"not modelled: {', '.join(pod['unmodelled'])}; the scheduler may reject nodes this "
        "report admits (--nodes leaves them out)",
        "  ",
    )


def _loaded(source: dict) -> str:
    """Where the cluster came from and what of it was read."""
    n = source["loaded"]
    where = f"snapshot {source['snapshot']}" if source["snapshot"] else f"live: {source['cluster']}"
    left = f", {n['left_out']} item(s) left out (named on stderr)" if n["left_out"] else ""
    return f"{where}: {n['nodes']} nodes, {n['pods']} pods ({n['pending']} pending), {n['budgets']} PDBs{left}"


def _policy(source: dict) -> str:
    """The policy file and the ranking that decided."""
    guards = source.get("guards")
    if source["policy"] is None:
        rules = "no policy file (Kubernetes rules only)"
    elif source["queues"] is None:
        rules = f"policy {source['policy']} ({'no queues' if guards else 'ranking only'})"
    else:
        rules = f"policy {source['policy']} (multi-tenant rules, {source['queues']} queue(s))"
    ranking = source["ranking"]
    if tuple(ranking) == DEFAULT_RANKING:
        order = "default"
    elif ranking[0] == STRICT and tuple(ranking[1:]) == DEFAULT_RANKING:
        order = f"{STRICT}, then the default"
    else:
        order = ", ".join(ranking)
    return f"{rules}; ranking: {order}" + "".join(f"; {line}" for line in guards or ())


def _preemption(report: dict) -> list[str]:
    p = report["preemption"]
    lines = []
    if p["fits"] is not None:
        lines += _wrap(f"Fits without preemption on: {', '.join(p['fits']) or 'no node'}")
        if p["fits"]:
            lines += _wrap(
                "The scheduler would bind the pod there and not preempt; below is what "
                "preemption would decide among the other nodes.",
                "  ",
            )
    lines += _choice("Stock kube-scheduler:", p["stock"])
    lines += _choice("reprieve:", p["reprieve"], mark=p["differs"])
    if report["differences"]:
        lines += ["", f"Differences ({MARK}):"]
        for text in report["differences"]:
            lines += _wrap(text, f"  {MARK} ", "    ")
    elif p["stock"]["chosen"] or p["reprieve"]["chosen"]:
        lines += ["", "No differences: reprieve decides as stock preemption does."]
    for row in report["nodes"]:
        lines += [""] + _node(row)
    return lines


def _choice(label: str, side: dict, mark: bool = False) -> list[str]:
    label = f"{label:<22}"
    if side["refusal"]:
        text = f"does not preempt: {side['refusal']}"
    elif not side["chosen"] and side.get("held"):
        text = f"does not preempt: {side['held']}"
    elif not side["chosen"]:
        text = "no candidate node"
    else:
        tied = [n for n in side["tied"] if n != side["chosen"]]
        also = f" (tied with {', '.join(tied)}: picked at random)" if tied else ""
        victims = ", ".join(v["name"] or v["uid"] for v in side["victims"])
        text = f"preempts on {side['chosen']}{also}, evicting {victims}"
    if side["unranked"]:
        text += f"; not ranked, a victim unknown to the snapshot: {', '.join(side['unranked'])}"
    return _wrap(text + (f"  {MARK}" if mark else ""), label, " " * len(label))


def _node(row: dict) -> list[str]:
    flags = f"  {MARK} differs: {', '.join(row['differs'])}" if row["differs"] else ""
    lines = _wrap(f"{row['name']}{flags}")
    s, r = row["stock"], row["reprieve"]
    lines += _side("stock", _stock_status(s), s["victims"], s["reasons"], s["summary"])
    if r["verdict"] is None:
        if s["candidate"]:
            why = "does not preempt for this pod"
        elif s["status"] == FILTERED:
            why = "not asked: the scheduler's filters reject the node"
        else:
            why = "not asked: not a stock candidate"
        lines += _side("reprieve", why, [], [])
    else:
        lines += _side("reprieve", _reprieve_status(r), r["victims"], r["reasons"], r["summary"])
    return lines


def _stock_status(s: dict) -> str:
    if s["status"] != "candidate":
        return s["status"]
    rank = f"rank {s['rank']}" if s["rank"] is not None else "unranked"
    return f"{rank}{', chosen' if s['chosen'] else ''}, {s['pdb_violations']} PDB violation(s)"


def _reprieve_status(r: dict) -> str:
    parts = [r["verdict"]]
    if r["cause"]:
        parts[0] += f" ({r['cause']})"
    if r["rank"] is not None:
        parts.insert(0, f"rank {r['rank']}")
    if r["pdb_violations"] is not None:
        parts.append(f"{r['pdb_violations']} PDB violation(s)")
    if r["chosen"]:
        parts.append("the scheduler's pick")
    return ", ".join(parts)


def _side(name: str, status: str, victims: list[dict], reasons: Iterable[str], summary: str | None = None) -> list[str]:
    """One side of a node's block; ``summary``: its victims' cost in brief, both sides costed
    by reprieve's ranking."""
    label = f"  {name:<10}"
    pad = " " * len(label)
    lines = _wrap(status, label, pad)
    lines += _listed("evicts", [_victim(v) for v in victims], pad)
    lines += _listed("cost", [summary] if summary else [], pad)
    lines += _listed("why", list(reasons), pad)
    return lines


def _listed(label: str, items: list[str], pad: str) -> list[str]:
    """``label`` before the first item, the items one under the other, each wrapped."""
    lines = []
    for i, item in enumerate(items):
        first = pad + (f"{label:<8}" if i == 0 else " " * 8)
        lines += _wrap(item, first, pad + " " * 10)
    return lines


def _victim(v: dict) -> str:
    if v["name"] is None:
        return f"UID {v['uid']} (not in the snapshot)"
    pdbs = f", PDB {', '.join(v['pdbs'])}" if v["pdbs"] else ""
    leaving = ", terminating" if v["terminating"] else ""
    return f"{v['name']} ({v['priority']}, {v['qos']}{pdbs}{leaving})"


def _filter_prioritize(report: dict) -> list[str]:
    width = max([len(r["name"]) for r in report["nodes"]] + [4])
    lines = [f"{'NODE':<{width}}  FITS  FILTER    SCORE"]
    for row in report["nodes"]:
        fits = "?" if row["fits"] is None else ("yes" if row["fits"] else "no")
        score = "-" if row["score"] is None else str(row["score"])
        lines += _wrap(f"{row['name']:<{width}}  {fits:<4}  {row['filter']:<8}  {score}")
        if row["reason"]:
            lines += _wrap(row["reason"], " " * (width + 2))
    lines += ["", "FITS: room without preemption, counting room held for nominated pods."]
    lines += _wrap(
        "The same body can be a filter or a prioritize request: both answers are shown "
        "(filter: passed or rejected; prioritize: the 0-10 score)."
    )
    return lines
