"""The alert rules (charts/reprieve/files/alerts.yaml, copied to manifests/alerts.yaml): well-formed
rule groups whose expressions read only what reprieve exposes."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.conftest import ROOT
from tests.contract.promql import selectors, unexposed

ALERTS = ROOT / "charts" / "reprieve" / "files" / "alerts.yaml"
DOCS = ROOT / "docs" / "observability.md"

def test_selectors_reads_names_not_functions_labels_or_durations():
    expr = 'sum by (verb, le) (rate(a_total{code=~"5..", verb="x"}[5m])) / on (verb) group_left max(b) > 1e3 unless c offset 1d'
    assert selectors(expr) == [("a_total", [("code", "=~", "5.."), ("verb", "=", "x")]), ("b", []), ("c", [])]


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
    assert selectors(rule["expr"]), "an alert reads at least one metric"
    assert unexposed(rule["expr"], exposed) == []


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
