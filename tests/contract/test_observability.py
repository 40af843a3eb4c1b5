"""Metrics and decision logs: what each verb counts and writes, and what it never writes."""

from __future__ import annotations

import logging
import re
import types

import orjson
import pytest

from extender.serving.app import create_app
from extender.state.source import StaticCluster
from extender.config import Mode, Settings
from extender.serving.logs import JsonFormatter
from extender.serving.verbs import preempt as preempt_verb
from extender.metrics import Metrics, priority_band
from tests.builders import node, pdb, pod, view
from tests.conftest import ROOT

REQUESTS = ROOT / "examples" / "requests"
GOLDEN = ROOT / "tests" / "golden"


def wire_pod(name: str, *, priority: int, cpu: str = "5", never: bool = False, **extra) -> dict:
    spec = {"priority": priority, "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}]}
    if never:
        spec["preemptionPolicy"] = "Never"
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec, **extra}


def preempt(client, proposals: dict[str, tuple[list[str], int]], **pod_args) -> dict:
    body = {
        "Pod": wire_pod("preemptor", priority=10, **pod_args),
        "NodeNameToVictims": None,
        "NodeNameToMetaVictims": {
            n: {"Pods": [{"UID": f"uid-default-{v}"} for v in victims], "NumPDBViolations": count}
            for n, (victims, count) in proposals.items()
        },
    }
    response = client.post("/preempt", data=orjson.dumps(body))
    assert response.status_code == 200, response.data
    return response.json


def sample(metrics: Metrics, name: str, **labels) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def app(cluster_view, mode: Mode = Mode.ENFORCE):
    metrics = Metrics()
    return create_app(Settings(mode=mode), cluster=StaticCluster(cluster_view), metrics=metrics).test_client(), metrics


# ---------------------------------------------------------------- metrics


@pytest.mark.parametrize(
    "priority, band",
    [
        pytest.param(-1, "negative", id="negative"),
        pytest.param(0, "0", id="zero-the-default"),
        pytest.param(1, "1-999", id="one"),
        pytest.param(999, "1-999", id="999"),
        pytest.param(1000, "1000-999999", id="1000"),
        pytest.param(999_999, "1000-999999", id="999999"),
        pytest.param(1_000_000, "1000000-1000000000", id="million"),
        pytest.param(1_000_000_000, "1000000-1000000000", id="highest-user-definable"),
        pytest.param(1_000_000_001, "system", id="above-user-definable"),
        pytest.param(2_000_001_000, "system", id="system-node-critical"),
    ],
)
def test_priority_bands(priority, band):
    assert priority_band(priority) == band


def test_pdb_violations_avoided_can_be_computed():
    # n1 (10 cpu): db (5, behind a budget allowing none) and web (5), both priority 1. The
    # scheduler proposes evicting db: 1 violation. reprieve evicts web instead: 0. Avoided: 1.
    cluster = view(
        [node("n1", cpu=10)],
        [pod("db", node="n1", priority=1, cpu=5, labels={"app": "db"}), pod("web", node="n1", priority=1, cpu=5)],
        [pdb("db", allowed=0, match={"app": "db"})],
    )
    client, metrics = app(cluster)
    assert preempt(client, {"n1": (["db"], 1)})["NodeNameToMetaVictims"]["n1"]["Pods"] == [{"UID": "uid-default-web"}]
    scheduler = sample(metrics, "reprieve_pdb_violations_total", source="scheduler")
    reprieve = sample(metrics, "reprieve_pdb_violations_total", source="reprieve")
    assert (scheduler, reprieve) == (1, 0)


def test_pdb_violations_count_the_cheapest_node_on_offer(example_view):
    # The example proposal: node-a costs 0 violations, node-b 1. The scheduler itself would
    # pick node-a (fewest violations first), so nothing is avoided even though node-b is dropped.
    client, metrics = app(example_view)
    client.post("/preempt", data=(REQUESTS / "preempt.json").read_bytes())
    assert sample(metrics, "reprieve_pdb_violations_total", source="scheduler") == 0
    assert sample(metrics, "reprieve_pdb_violations_total", source="reprieve") == 0


def test_preempt_counts_outcome_nodes_victims_and_disagreement(example_view):
    client, metrics = app(example_view)
    client.post("/preempt", data=(REQUESTS / "preempt.json").read_bytes())
    assert sample(metrics, "reprieve_decisions_total", verb="preempt", outcome="answered", refusal="") == 1
    assert sample(metrics, "reprieve_preempt_nodes_total", verdict="chosen", cause="") == 1
    # node-b is not solved: it violates a budget whatever it evicts, node-a none.
    assert sample(metrics, "reprieve_preempt_nodes_total", verdict="outranked", cause="not solved") == 1
    # batch/report-1: Burstable, priority 100.
    assert sample(metrics, "reprieve_victims_total", qos="Burstable", priority_band="1-999") == 1
    assert sample(metrics, "reprieve_disagreements_total", verb="preempt", mode="enforce") == 1


@pytest.mark.parametrize(
    "running, proposals, pod_args, outcome, refusal, node_verdict",
    [
        pytest.param(
            [pod("low", node="n1", priority=1, cpu=10)], {"n1": (["low"], 0)}, {"never": True},
            "refused", "preemptionPolicy Never", None, id="refused-never",
        ),
        pytest.param(
            # Only a higher-priority pod runs on n1: nothing to evict, the node is dropped.
            [pod("high", node="n1", priority=100, cpu=10)], {"n1": (["high"], 0)}, {},
            "no candidate", "", ("dropped", "no lower-priority pods"), id="no-candidate-left",
        ),
    ],
)
def test_preempt_outcomes(running, proposals, pod_args, outcome, refusal, node_verdict):
    client, metrics = app(view([node("n1", cpu=10)], running))
    assert preempt(client, proposals, **pod_args) == {"NodeNameToMetaVictims": {}}
    assert sample(metrics, "reprieve_decisions_total", verb="preempt", outcome=outcome, refusal=refusal) == 1
    # Nothing is evicted: not a preemption whose PDB cost could be compared.
    assert sample(metrics, "reprieve_pdb_violations_total", source="scheduler") == 0
    if node_verdict:
        verdict, cause = node_verdict
        assert sample(metrics, "reprieve_preempt_nodes_total", verdict=verdict, cause=cause) == 1


def test_fallbacks_by_cause():
    cluster = view([node("n1", cpu=10)], [pod("low", node="n1", priority=1, cpu=10)])
    client, metrics = app(cluster)
    preempt(client, {"ghost": (["x"], 0)})  # a node reprieve does not know
    preempt(client, {"n1": (["low", "stranger"], 0)})  # a victim it does not know
    client.post("/filter", data=orjson.dumps({"Pod": wire_pod("p", priority=1), "NodeNames": ["n1", "ghost"]}))
    assert sample(metrics, "reprieve_fallbacks_total", verb="preempt", cause="unknown node") == 1
    assert sample(metrics, "reprieve_fallbacks_total", verb="preempt", cause="unknown victim") == 1
    assert sample(metrics, "reprieve_fallbacks_total", verb="filter", cause="unknown node") == 1
    assert sample(metrics, "reprieve_preempt_nodes_total", verdict="passed through", cause="unknown node") == 1


def test_every_ok_answer_is_a_decision_or_a_not_ready_answer(example_view):
    client, metrics = app(example_view, Mode.SHADOW)
    for verb in ("filter", "prioritize", "preempt"):
        for _ in range(2):
            client.post(f"/{verb}", data=(REQUESTS / f"{verb}.json").read_bytes())
        client.post(f"/{verb}", data=b"{}")  # a 400 is neither
        decided = sum(
            s.value
            for family in metrics.registry.collect()
            if family.name == "reprieve_decisions"
            for s in family.samples
            if s.name == "reprieve_decisions_total" and s.labels["verb"] == verb
        )
        assert decided + sample(metrics, "reprieve_not_ready_answers_total", verb=verb) == 2
        assert sample(metrics, "reprieve_requests_total", verb=verb, code="200") == 2


def test_mode_and_readiness_gauges(example_view):
    client, metrics = app(example_view, Mode.SHADOW)
    text = client.get("/metrics").data.decode()
    assert 'reprieve_mode{mode="shadow"} 1.0' in text
    assert "reprieve_ready 1.0" in text


# ---------------------------------------------------------------- decision logs


def decision_lines(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "reprieve.decisions"]


@pytest.mark.parametrize(
    "verb, level, keys",
    [
        pytest.param("filter", logging.INFO, {"candidates", "passed", "rejected"}, id="filter-rejecting-is-info"),
        pytest.param("prioritize", logging.DEBUG, {"candidates", "best", "nodes"}, id="prioritize-is-debug"),
        pytest.param("preempt", logging.INFO, {"candidates", "chosen", "refusal", "reasons", "nodes"}, id="preempt-is-info"),
    ],
)
def test_one_log_line_per_decision(client, caplog, verb, level, keys):
    with caplog.at_level(logging.DEBUG):
        client.post(f"/{verb}", data=(REQUESTS / f"{verb}.json").read_bytes())
    [record] = decision_lines(caplog)
    assert record.getMessage() == verb and record.levelno == level
    line = orjson.loads(JsonFormatter().format(record))
    assert {"mode", "pod", "priority", "outcome", "changed", "duration_ms"} | keys <= line.keys()
    assert line["mode"] == "enforce" and line["pod"].count("/") == 1


def test_filter_passing_every_node_logs_at_debug(client, caplog):
    request = orjson.loads((REQUESTS / "filter.json").read_bytes())
    request["NodeNames"] = ["node-b"]
    with caplog.at_level(logging.DEBUG):
        client.post("/filter", data=orjson.dumps(request))
    [record] = decision_lines(caplog)
    assert record.levelno == logging.DEBUG


def test_at_info_only_changes_and_preemptions_are_logged(client, caplog):
    request = orjson.loads((REQUESTS / "filter.json").read_bytes())
    request["NodeNames"] = ["node-b"]
    with caplog.at_level(logging.INFO):
        client.post("/filter", data=orjson.dumps(request))
        client.post("/prioritize", data=(REQUESTS / "prioritize.json").read_bytes())
    assert decision_lines(caplog) == []


def test_times_in_the_decision_log_are_iso_8601(client, example_view, caplog, monkeypatch):
    # node-a (batch/report-1 by reprieve, Burstable, 1 core, started 2026-11-20T09:40:00Z) and
    # node-d (analytics/backfill-0, 2 cores' worth: one of the node's two GPUs, started
    # 2026-11-21T09:00:00Z) tie up to the start at 2026-11-22T08:20:00Z, when each has lost
    # 168,000 core-seconds (1 x 46 h 40 min, 2 x 23 h 20 min): later is better, so node-d wins
    # and the reason names both start times, as explain and the Events do.
    monkeypatch.setattr(preempt_verb, "time", types.SimpleNamespace(time=lambda: 1_795_335_600.0))
    uid = {p.key: p.uid for p in example_view.pods.values()}
    request = orjson.loads((REQUESTS / "preempt.json").read_bytes())
    request["NodeNameToMetaVictims"] = {
        "node-a": {"Pods": [{"UID": uid["batch/report-2"]}], "NumPDBViolations": 0},
        "node-d": {"Pods": [{"UID": uid["analytics/backfill-0"]}], "NumPDBViolations": 0},
    }
    with caplog.at_level(logging.INFO):
        assert client.post("/preempt", data=orjson.dumps(request)).status_code == 200
    [record] = decision_lines(caplog)
    text = JsonFormatter().format(record)
    line = orjson.loads(text)
    assert "since the epoch" not in text
    assert line["chosen"] == ["node-d"]
    assert line["nodes"]["node-a"]["reasons"][-1] == (
        "not chosen: start of the most important victims (later is better) 2026-11-20T09:40:00Z here vs 2026-11-21T09:00:00Z on node-d"
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", line["time"])


def test_the_log_says_what_decided_against_the_scheduler_victims(client, example_view, caplog):
    # The README's example: on node-a reprieve evicts the Burstable report-1 where the scheduler
    # proposed the Guaranteed report-2; proposed report-1 itself, it agrees and says nothing more.
    uid = {p.key: p.uid for p in example_view.pods.values()}
    request = orjson.loads((REQUESTS / "preempt.json").read_bytes())
    lines = {}
    for proposed in ("batch/report-2", "batch/report-1"):
        request["NodeNameToMetaVictims"] = {"node-a": {"Pods": [{"UID": uid[proposed]}], "NumPDBViolations": 0}}
        caplog.clear()
        with caplog.at_level(logging.INFO):
            assert client.post("/preempt", data=orjson.dumps(request)).status_code == 200
        [record] = decision_lines(caplog)
        lines[proposed] = orjson.loads(JsonFormatter().format(record))["nodes"]["node-a"]
    assert lines["batch/report-2"]["victims"] == ["batch/report-1"]
    assert lines["batch/report-2"]["against_proposed"] == "decided by Guaranteed victims: 0 against 1"
    assert lines["batch/report-1"]["victims"] == ["batch/report-1"] and "against_proposed" not in lines["batch/report-1"]


def pasted_lines(doc: str, msg: str) -> list[dict]:
    """The decision lines of ``msg`` pasted in a doc's json blocks (a wrapped line joined)."""
    text = (ROOT / "docs" / doc).read_text()
    blocks = [b.split("\n```", 1)[0] for b in text.split("```json\n")[1:]]
    lines = [orjson.loads("".join(part.strip() for part in block.splitlines())) for block in blocks if '"logger":"reprieve.decisions"' in block]
    return [line for line in lines if line["msg"] == msg]


@pytest.mark.parametrize(
    "doc, mode, verb",
    [
        pytest.param("running.md", Mode.SHADOW, "preempt", id="running-shadow-preempt"),
        pytest.param("observability.md", Mode.SHADOW, "preempt", id="observability-shadow-preempt"),
        pytest.param("observability.md", Mode.ENFORCE, "filter", id="observability-filter"),
    ],
)
def test_the_docs_log_lines_are_what_reprieve_writes(example_view, caplog, doc, mode, verb):
    client = create_app(Settings(mode=mode), cluster=StaticCluster(example_view)).test_client()
    with caplog.at_level(logging.INFO):
        client.post(f"/{verb}", data=(REQUESTS / f"{verb}.json").read_bytes())
    [record] = decision_lines(caplog)
    written = orjson.loads(JsonFormatter().format(record))
    [pasted] = pasted_lines(doc, verb)
    for moving in ("time", "duration_ms"):
        written.pop(moving), pasted.pop(moving)
    assert pasted == written


SECRET = "hunter2-s3cr3t-token-0xDEADBEEF"


def with_secrets(pod: dict) -> dict:
    """The same pod carrying a secret in every place a careless log line might copy."""
    pod = orjson.loads(orjson.dumps(pod))
    pod["metadata"]["annotations"] = {"vault.example.com/token": SECRET, "kubectl.kubernetes.io/last-applied-configuration": SECRET}
    for c in pod["spec"]["containers"]:
        c["env"] = [{"name": "DB_PASSWORD", "value": SECRET}]
        c["args"] = [f"--token={SECRET}"]
    return pod


def test_no_log_line_carries_env_annotations_or_specs(example_view, caplog):
    bodies = []
    for verb in ("filter", "prioritize", "preempt"):
        for wire_mode in ("cache", "nocache"):
            request = orjson.loads((GOLDEN / f"{verb}-{wire_mode}" / "request.json").read_bytes())
            request["Pod"] = with_secrets(request["Pod"])
            for item in (request.get("Nodes") or {}).get("items") or ():
                item["metadata"]["annotations"] = {"secret": SECRET}
            for victims in (request.get("NodeNameToVictims") or {}).values():
                victims["Pods"] = [with_secrets({"spec": {"containers": [{}]}, **p}) for p in victims["Pods"]]
            bodies.append((verb, orjson.dumps(request)))

    class NotReady(StaticCluster):
        def view(self):
            return None

    clusters = [StaticCluster(example_view), NotReady(example_view)]
    with caplog.at_level(logging.DEBUG):
        for cluster in clusters:
            for mode in Mode:
                client = create_app(Settings(mode=mode), cluster=cluster).test_client()
                for verb, body in bodies:
                    assert client.post(f"/{verb}", data=body).status_code == 200
    lines = [JsonFormatter().format(r) for r in caplog.records]
    assert len(decision_lines(caplog)) == len(bodies) * len(Mode)  # one per decision while ready
    for line in lines:
        assert SECRET not in line and "DB_PASSWORD" not in line and "last-applied" not in line
