"""Reading PromQL against a real /metrics: which metric names and label matchers an expression
uses (``selectors``), and what an app exposes (``exposed_metrics``). Shared by the alert rules
and dashboard tests; the ``exposed`` fixture is in conftest.py."""

from __future__ import annotations

import re

from prometheus_client.parser import text_string_to_metric_families

from extender.config import Mode, Settings
from extender.serving.app import create_app
from extender.state.source import StaticCluster
from policy.view import ClusterView
from tests.conftest import ROOT

REQUESTS = ROOT / "examples" / "requests"

# PromQL words that are not metric names.
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset"}
_SUFFIXES = {"counter": ("_total", "_created"), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum", "_created")}
# One token at a time, left to right, so that the insides of strings, ranges and grouping
# clauses are never read as metric names.
_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"'  # a string
    r"|\[[^\]]*\]"  # a range or subquery
    r"|\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)"  # a grouping clause
    r"|\d+(?:ms|s|m|h|d|w|y)\b"  # a duration
    r"|\d+(?:\.\d+)?(?:e[+-]?\d+)?"  # a number
    r"|(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?P<matchers>\{[^}]*\})?"
    r"(?P<call>(?=\s*(?:\(|(?:by|without)\s*\()))?"  # a function, or an aggregation: sum by (x) (...)
    r"|."
)
_MATCHER = re.compile(r'(?P<label>[a-zA-Z_]\w*)\s*(?P<op>=~|!~|!=|=)\s*"(?P<value>(?:[^"\\]|\\.)*)"')


def selectors(expr: str) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """The metric names an expression reads, each with its label matchers."""
    found = []
    for m in _TOKEN.finditer(expr):
        name = m.group("name")
        if name and m.group("call") is None and name not in _KEYWORDS:
            found.append((name, [(x["label"], x["op"], x["value"]) for x in _MATCHER.finditer(m.group("matchers") or "")]))
    return found


def unexposed(expr: str, exposed: dict[str, list[dict[str, str]]], *, scrape_labels: frozenset[str] = frozenset()) -> list[str]:
    """What ``expr`` reads that /metrics does not show: a metric name, a label, or a value an
    ``=`` matcher wants. ``scrape_labels`` (job, instance) are added by Prometheus, not shown."""
    problems = []
    for name, matchers in selectors(expr):
        if name not in exposed:
            problems.append(f"{name} is not on reprieve's /metrics")
            continue
        labels = exposed[name]
        for label, op, value in matchers:
            if label in scrape_labels or not labels:
                continue
            if not any(label in s for s in labels):
                problems.append(f"{name} has no label {label}")
            elif op == "=" and not any(s.get(label) == value for s in labels):
                problems.append(f'{name}{{{label}="{value}"}} never appears')
    return problems


def exposed_metrics(view: ClusterView) -> dict[str, list[dict[str, str]]]:
    """Every sample name an app's /metrics shows, with the label sets seen, after it served each
    verb once in each mode (families without samples yet count by their type's sample names)."""
    seen: dict[str, list[dict[str, str]]] = {}
    for mode in Mode:
        client = create_app(Settings(mode=mode), cluster=StaticCluster(view)).test_client()
        for verb in ("filter", "prioritize", "preempt"):
            client.post(f"/{verb}", data=(REQUESTS / f"{verb}.json").read_bytes())
        for family in text_string_to_metric_families(client.get("/metrics").data.decode()):
            for suffix in _SUFFIXES[family.type]:
                seen.setdefault(family.name + suffix, [])
            for s in family.samples:
                seen.setdefault(s.name, []).append(s.labels)
    return seen
