"""Golden wire contract: for each verb and both nodeCacheCapable modes, the request bytes the
scheduler sends and the exact answer reprieve gives on the example snapshot.

A case may bring its own cluster (snapshot.yaml) and policy file (policy.yaml):
preempt-cache-strict-budget is the empty answer a strict budget leaves (a 200 with no node,
not an error, so that the scheduler does not go ahead with its own victims).

Set REPRIEVE_UPDATE_GOLDEN=1 to rewrite the answers after a deliberate change, then review
the diff: every answer is checked by hand once.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from extender import policy_file
from extender.state import snapshot
from extender.serving.app import create_app
from extender.state.source import StaticCluster
from extender.config import Settings

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "request.json").exists())


@pytest.mark.parametrize("case", CASES)
def test_golden(example_view, case):
    # A case may bring the cluster it was captured on; otherwise it runs on the example snapshot.
    own = GOLDEN / case / "snapshot.yaml"
    view = snapshot.load(own) if own.exists() else example_view
    # ... and the policy file it was decided under (none: Kubernetes rules only).
    path = GOLDEN / case / "policy.yaml"
    policy = policy_file.load(path) if path.exists() else policy_file.Policy(None)
    client = create_app(
        Settings(), cluster=StaticCluster(view), rules=policy.rules, order=policy.order, guards=policy.guards
    ).test_client()
    request = (GOLDEN / case / "request.json").read_bytes()
    response = client.post("/" + case.split("-")[0], data=request, content_type="application/json")
    assert response.status_code == 200, response.data
    expected_path = GOLDEN / case / "response.json"
    if os.environ.get("REPRIEVE_UPDATE_GOLDEN"):
        expected_path.write_bytes(response.data + b"\n")
    assert response.data == expected_path.read_bytes().rstrip(b"\n")


def test_every_verb_and_mode_has_a_golden_case():
    verbs = {c.split("-")[0] for c in CASES}
    assert verbs == {"filter", "prioritize", "preempt"}
    for verb in verbs:
        modes = {c.split("-", 1)[1].split("-")[0] for c in CASES if c.startswith(verb)}
        assert {"cache", "nocache"} <= modes, verb


def test_answers_use_canonical_keys_and_integers():
    for case in CASES:
        answer = orjson.loads((GOLDEN / case / "response.json").read_bytes())
        if case.startswith("filter"):
            assert list(answer) == ["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"]
        elif case.startswith("prioritize"):
            assert all(list(e) == ["Host", "Score"] and type(e["Score"]) is int for e in answer)
        else:
            assert list(answer) == ["NodeNameToMetaVictims"]
            assert all(type(v["NumPDBViolations"]) is int for v in answer["NodeNameToMetaVictims"].values())
