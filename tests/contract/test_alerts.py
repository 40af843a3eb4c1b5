"""manifests/alerts.yaml: well-formed rule groups whose expressions read only what reprieve exposes."""

from __future__ import annotations

import re

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from extender.serving.app import create_app
from extender.state.source import StaticCluster
from extender.config import Mode, Settings
from tests.conftest import ROOT

ALERTS = ROOT / "manifests" / "alerts.yaml"
DOCS = ROOT / "docs" / "observability.md"
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


def test_selectors_reads_names_not_functions_labels_or_durations():
    expr = 'sum by (verb, le) (rate(a_total{code=~"5..", verb="x"}[5m])) / on (verb) group_left max(b) > 1e3 unless c offset 1d'
    assert selectors(expr) == [("a_total", [("code", "=~", "5.."), ("verb", "=", "x")]), ("b", []), ("c", [])]


@pytest.fixture(scope="module")
def exposed(example_view) -> dict[str, list[dict[str, str]]]:
    """Every sample name an app's /metrics shows, with the label sets seen, after it served each
    verb once in each mode (families without samples yet count by their type's sample names)."""
    seen: dict[str, list[dict[str, str]]] = {}
    for mode in Mode:
        client = create_app(Settings(mode=mode), cluster=StaticCluster(example_view)).test_client()
        for verb in ("filter", "prioritize", "preempt"):
            client.post(f"/{verb}", data=(REQUESTS / f"{verb}.json").read_bytes())
        for family in text_string_to_metric_families(client.get("/metrics").data.decode()):
            for suffix in _SUFFIXES[family.type]:
                seen.setdefault(family.name + suffix, [])
            for s in family.samples:
                seen.setdefault(s.name, []).append(s.labels)
    return seen


def rules():
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [pytest.param(group["name"], rule, id=rule["alert"]) for group in groups for rule in group["rules"]]


def test_rule_groups_are_well_formed():
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    assert groups and len({g["name"] for g in groups}) == len(groups)
    names = [r["alert"] for g in groups for r in g["rules"]]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("group, rule", rules())
def test_rule(group, rule, exposed):
    assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule.keys()
    assert re.fullmatch(r"Reprieve[A-Z]\w+", rule["alert"])
    assert rule["labels"]["severity"] in {"critical", "warning", "info"}
    assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    if "for" in rule:
        assert re.fullmatch(r"\d+[smh]", rule["for"])
    assert rule["expr"].count("(") == rule["expr"].count(")")
    read = selectors(rule["expr"])
    assert read, "an alert reads at least one metric"
    for name, matchers in read:
        assert name in exposed, f"{name} is not on reprieve's /metrics"
        labels = exposed[name]
        for label, op, value in matchers:
            if labels:
                assert any(label in s for s in labels), f"{name} has no label {label}"
            if op == "=" and labels:
                assert any(s.get(label) == value for s in labels), f'{name}{{{label}="{value}"}} never appears'


def doc_queries() -> list[str]:
    """The PromQL in docs/observability.md: promql blocks and the dashboard's inline queries."""
    text = DOCS.read_text()
    blocks = re.findall(r"```promql\n(.*?)```", text, re.S)
    queries = [q for b in blocks for q in b.strip().split("\n\n")]
    inline = [q for q in re.findall(r"`([^`\n]+)`", text) if "reprieve_" in q and "(" in q]
    return queries + inline


def test_docs_queries_read_only_exposed_metrics(exposed):
    queries = doc_queries()
    assert len(queries) > 20
    for query in queries:
        for name, matchers in selectors(query):
            assert name in exposed, f"{name} (in {query!r}) is not on reprieve's /metrics"
            for label, _, _ in matchers:
                assert not exposed[name] or any(label in s for s in exposed[name]), f"{name} has no label {label}"


def test_docs_name_every_exposed_metric_and_no_other(exposed):
    names = set(re.findall(r"`(reprieve_[a-z_]+)", DOCS.read_text()))
    assert len(names) >= 20
    for name in names:
        assert name in exposed or f"{name}_bucket" in exposed, f"docs name {name}, which /metrics does not show"
    # ... and every metric reprieve exposes is documented.
    for name in exposed:
        if name.startswith("reprieve_") and not name.endswith(("_created", "_count", "_sum")):
            assert name.removesuffix("_bucket") in names, f"{name} is not in docs/observability.md"
