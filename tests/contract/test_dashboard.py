"""manifests/dashboard.json: a Grafana dashboard whose every query reads only what reprieve's
/metrics shows (the alert rules' machinery, tests/contract/promql.py)."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from tests.conftest import ROOT
from tests.contract.promql import selectors, unexposed

DASHBOARD = ROOT / "manifests" / "dashboard.json"
DOCS = ROOT / "docs" / "observability.md"
SCHEDULER_CONFIG = ROOT / "manifests" / "scheduler-config.yaml"
# Target labels Prometheus adds when it scrapes; the dashboard's $job variable selects by one.
SCRAPE_LABELS = frozenset({"job", "instance"})


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def panels() -> list[dict]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def queries():
    return [
        pytest.param(t["expr"], id=f"{p['title']} {t['refId']}") for p in panels() for t in p["targets"]
    ]


@pytest.mark.parametrize("expr", queries())
def test_every_query_reads_only_what_metrics_shows(expr, exposed):
    assert selectors(expr), "a panel reads at least one metric"
    assert expr.count("(") == expr.count(")")
    assert unexposed(expr, exposed, scrape_labels=SCRAPE_LABELS) == []


def test_the_machinery_catches_what_metrics_does_not_show(exposed):
    assert unexposed("rate(reprieve_nonsense_total[5m])", exposed) == ["reprieve_nonsense_total is not on reprieve's /metrics"]
    assert unexposed('reprieve_victims_total{node="a"}', exposed) == ["reprieve_victims_total has no label node"]
    assert unexposed('reprieve_events_dropped_total{cause="bored"}', exposed) == [
        'reprieve_events_dropped_total{cause="bored"} never appears'
    ]
    assert unexposed('reprieve_ready{job=~"$job"}', exposed) == ["reprieve_ready has no label job"]
    assert unexposed('reprieve_ready{job=~"$job"}', exposed, scrape_labels=SCRAPE_LABELS) == []


def test_every_query_selects_the_job_variable():
    for p in panels():
        for t in p["targets"]:
            for name, matchers in selectors(t["expr"]):
                assert ("job", "=~", "$job") in matchers, f"{p['title']}: {name} ignores $job"


def test_panels_are_well_formed_and_use_the_datasource_variable():
    d = dashboard()
    assert d["uid"] == "reprieve" and d["schemaVersion"] >= 36
    ids = [p["id"] for p in d["panels"]]
    assert len(set(ids)) == len(ids)
    names = {v["name"] for v in d["templating"]["list"]}
    assert names == {"datasource", "job"}
    [job] = [v for v in d["templating"]["list"] if v["name"] == "job"]
    assert [name for name, _ in selectors(job["definition"].removeprefix("label_values(").split(",")[0])] == ["reprieve_ready"]
    for p in panels():
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"] and len({t["refId"] for t in p["targets"]}) == len(p["targets"])
        g = p["gridPos"]
        assert g["w"] > 0 and g["h"] > 0 and g["x"] + g["w"] <= 24, p["title"]


def test_it_shows_what_operators_ask_for():
    """The panels issue 13 asks for, each reading the metric that answers it."""
    reads = {p["title"]: {n for t in p["targets"] for n, _ in selectors(t["expr"])} for p in panels()}

    def panel_reading(metric: str) -> list[str]:
        return [title for title, names in reads.items() if metric in names]

    for metric in (
        "reprieve_decisions_total",
        "reprieve_disagreements_total",
        "reprieve_request_duration_seconds_bucket",
        "reprieve_pdb_violations_total",
        "reprieve_victims_total",
        "reprieve_fallbacks_total",
        "reprieve_cache_staleness_seconds",
        "reprieve_events_dropped_total",
    ):
        assert panel_reading(metric), f"no panel reads {metric}"
    assert any("qos" in t["expr"] for p in panels() for t in p["targets"] if "reprieve_victims_total" in t["expr"])


def test_the_latency_panel_marks_the_schedulers_timeout():
    """Its red threshold is the httpTimeout of the shipped scheduler configuration, and so is
    the bucket the past-the-timeout panel counts from."""
    timeout = yaml.safe_load(SCHEDULER_CONFIG.read_text())["extenders"][0]["httpTimeout"]
    seconds = float(re.fullmatch(r"(\d+(?:\.\d+)?)s", timeout).group(1))
    [latency] = [p for p in panels() if p["title"].startswith("Latency")]
    steps = latency["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert steps[-1] == {"color": "red", "value": seconds}
    [past] = [p for p in panels() if p["title"] == "Answers slower than the timeout"]
    assert f'le="{seconds}"' in past["targets"][0]["expr"]


def test_the_docs_describe_every_panel():
    text = DOCS.read_text()
    section = text[text.index("## Dashboard"):]
    for p in dashboard()["panels"]:
        assert p["title"] in section, f"docs/observability.md does not describe the panel {p['title']!r}"
