"""Shadow mode: the scheduler gets its own answer back; reprieve only counts and logs what it would have done."""

from __future__ import annotations

import logging

import orjson
import pytest

from extender.serving.app import create_app
from extender.state.source import StaticCluster
from extender.config import Mode, Settings
from extender.metrics import Metrics
from tests.conftest import ROOT

GOLDEN = ROOT / "tests" / "golden"


def serve(view, mode: Mode):
    metrics = Metrics()
    client = create_app(Settings(mode=mode), cluster=StaticCluster(view), metrics=metrics).test_client()
    return client, metrics


def stock_answer(verb: str, request: dict):
    """What kube-scheduler would do without reprieve, in the extender's words."""
    if verb == "filter":
        if request["NodeNames"] is not None:
            return {"Nodes": None, "NodeNames": request["NodeNames"], "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": ""}
        return {"Nodes": {"metadata": {}, "items": request["Nodes"]["items"]}, "NodeNames": None, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": ""}
    if verb == "prioritize":
        return []
    if request["NodeNameToMetaVictims"] is not None:
        return {"NodeNameToMetaVictims": request["NodeNameToMetaVictims"]}
    return {
        "NodeNameToMetaVictims": {
            node: {"Pods": [{"UID": p["metadata"]["uid"]} for p in v["Pods"]], "NumPDBViolations": v["NumPDBViolations"]}
            for node, v in request["NodeNameToVictims"].items()
        }
    }


CASES = [pytest.param(verb, mode, id=f"{verb}-{mode}") for verb in ("filter", "prioritize", "preempt") for mode in ("cache", "nocache")]


@pytest.mark.parametrize("verb, wire_mode", CASES)
def test_shadow_answers_as_the_scheduler_would_without_reprieve(example_view, verb, wire_mode):
    # The golden requests are ones where reprieve does change the answer (golden responses).
    request = (GOLDEN / f"{verb}-{wire_mode}" / "request.json").read_bytes()
    enforced = orjson.loads((GOLDEN / f"{verb}-{wire_mode}" / "response.json").read_bytes())
    stock = stock_answer(verb, orjson.loads(request))
    assert enforced != stock, "the case should be one where reprieve disagrees"

    client, metrics = serve(example_view, Mode.SHADOW)
    response = client.post(f"/{verb}", data=request)
    assert response.status_code == 200
    assert orjson.loads(response.data) == stock
    assert metrics.registry.get_sample_value("reprieve_disagreements_total", {"verb": verb, "mode": "shadow"}) == 1


@pytest.mark.parametrize("verb", ["filter", "prioritize", "preempt"])
def test_enforce_counts_the_same_disagreements(example_view, verb):
    client, metrics = serve(example_view, Mode.ENFORCE)
    response = client.post(f"/{verb}", data=(GOLDEN / f"{verb}-cache" / "request.json").read_bytes())
    assert orjson.loads(response.data) == orjson.loads((GOLDEN / f"{verb}-cache" / "response.json").read_bytes())
    assert metrics.registry.get_sample_value("reprieve_disagreements_total", {"verb": verb, "mode": "enforce"}) == 1
    assert metrics.registry.get_sample_value("reprieve_disagreements_total", {"verb": verb, "mode": "shadow"}) is None


def test_shadow_answer_is_the_not_ready_answer(example_view):
    class NotReady(StaticCluster):
        def view(self):
            return None

    for verb in ("filter", "prioritize", "preempt"):
        request = (GOLDEN / f"{verb}-cache" / "request.json").read_bytes()
        shadow, _ = serve(example_view, Mode.SHADOW)
        not_ready = create_app(Settings(), cluster=NotReady(example_view)).test_client()
        assert shadow.post(f"/{verb}", data=request).data == not_ready.post(f"/{verb}", data=request).data, verb


def test_agreement_is_not_counted(example_view):
    # node-b and node-d hold no room for nominated pods: reprieve passes both, as the scheduler does.
    request = orjson.loads((GOLDEN / "filter-cache" / "request.json").read_bytes())
    request["NodeNames"] = ["node-b", "node-d"]
    client, metrics = serve(example_view, Mode.SHADOW)
    assert client.post("/filter", data=orjson.dumps(request)).json["NodeNames"] == ["node-b", "node-d"]
    assert metrics.registry.get_sample_value("reprieve_disagreements_total", {"verb": "filter", "mode": "shadow"}) == 0
    assert metrics.registry.get_sample_value("reprieve_decisions_total", {"verb": "filter", "outcome": "passed", "refusal": ""}) == 1


def test_shadow_log_says_what_reprieve_would_have_done(example_view, caplog):
    client, _ = serve(example_view, Mode.SHADOW)
    with caplog.at_level(logging.INFO, logger="reprieve.decisions"):
        client.post("/preempt", data=(ROOT / "examples" / "requests" / "preempt.json").read_bytes())
    [line] = [r for r in caplog.records if r.name == "reprieve.decisions"]
    fields = line.fields
    assert line.getMessage() == "preempt" and fields["mode"] == "shadow" and fields["changed"] is True
    assert fields["chosen"] == ["node-a"]
    # Stock preemption would evict the Guaranteed report-2 on node-a; reprieve the Burstable report-1.
    assert fields["nodes"]["node-a"]["proposed"] == ["batch/report-2"]
    assert fields["nodes"]["node-a"]["victims"] == ["batch/report-1"]
    assert fields["nodes"]["node-b"]["verdict"] == "outranked"
