"""strictBudgets and minimumRuntime (policy.guards) through the commands and the served verb:
check-policy shows them and what they protect, explain shows them and their effect, the
decision log names the cause, simulate --policy replays under them.

tests/contract/explain/strict-budget.yaml: n1 and n2 each run a Kafka broker (2 cpu, behind
kafka/brokers, which allows no disruption) and a batch-low job (2 cpu); shop/urgent needs 4 cpu,
so on either node both go, and the broker's eviction violates the budget.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from extender import policy_file
from extender.config import Settings
from extender.serving.app import create_app
from extender.state import snapshot
from extender.state.source import StaticCluster
from tests.contract import cli
from tests.conftest import EXAMPLE, ROOT

STRICT = Path(__file__).parent / "explain" / "strict-budget.yaml"
GOLDEN = ROOT / "tests" / "golden" / "preempt-cache-strict-budget"


def flat(text: str) -> str:
    return " ".join(text.split())


def policy(tmp_path: Path, text: str) -> str:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return str(path)


def test_check_policy_shows_the_guards_and_what_they_protect(capsys, tmp_path):
    path = policy(tmp_path, "strictBudgets: {namespaces: [kafka]}\nminimumRuntime:\n- {priorityClasses: [batch-low], duration: 10m}\n")
    code, out, _ = cli.run(capsys, "check-policy", path, "--snapshot", str(STRICT))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "policy valid: no multi-tenant (queue) rules"
    assert lines[1].startswith("ranking: strict budget violations, opted-out victims, PDB violations,")
    assert lines[2:5] == [
        "strict budgets: PodDisruptionBudgets: those in namespace(s) kafka (preemption never violates them)",
        "  in the cluster: 1 strict: kafka/brokers (namespace kafka; allows 0 disruption(s), covers 2 pod(s))",
        "minimum runtime: minimumRuntime[0]: 10m for pods of PriorityClass(es) batch-low (preemption leaves them alone until then)",
    ]
    # The jobs started in 2026-11 (check-policy measures from the wall clock): long past 10m.
    assert lines[5] == "  in the cluster: 0 of 2 running pod(s) it matches protected now"
    # Without a cluster, only the rules.
    code, out, _ = cli.run(capsys, "check-policy", path)
    assert "in the cluster" not in out and "strict budgets: PodDisruptionBudgets: those in namespace(s) kafka" in out


def test_check_policy_names_the_pods_a_minimum_runtime_protects_now():
    from extender.commands import check_policy

    view = snapshot.load(STRICT)
    loaded = policy_file.parse({"minimumRuntime": [{"priorityClasses": ["batch-low"], "duration": "2h"}]})
    # 2026-11-21T09:30:00Z: job-0 started 90 min before, job-1 30 min before.
    now = 1_795_253_400.0
    out = check_policy.report(loaded, view, now=now)
    assert "  in the cluster: 2 of 2 running pod(s) it matches protected now: batch/job-0 (30m left), batch/job-1 (1h30m left)" in out
    every = check_policy.report(policy_file.parse({"strictBudgets": {}}), view)
    assert "strict budgets: every PodDisruptionBudget (preemption never violates them)" in every
    assert "kafka/brokers (every budget; allows 0 disruption(s), covers 2 pod(s))" in every


def test_explain_shows_the_guards_and_the_pod_left_pending(capsys, tmp_path):
    path = policy(tmp_path, "strictBudgets: {namespaces: [kafka]}\n")
    code, out, _ = cli.run(capsys, "explain", "--snapshot", str(STRICT), "--pod", "shop/urgent", "--policy", path)
    assert code == 0
    text = flat(out)
    assert (
        f"policy {path} (no queues); ranking: strict budget violations, then the default; "
        "strictBudgets: PodDisruptionBudgets: those in namespace(s) kafka"
    ) in text
    assert "Stock kube-scheduler: preempts on n1 (tied with n2: picked at random), evicting kafka/broker-0, batch/job-0" in text
    assert (
        "reprieve: does not preempt: no candidate node can make room for the pod without violating a strict "
        "PodDisruptionBudget: n1: every victim set that makes room here violates strict PodDisruptionBudget "
        "kafka/brokers"
    ) in text
    assert "reprieve dropped (strict budget)" in text
    assert max(len(line) for line in out.splitlines()) <= 80
    result = cli.report(capsys, "explain", "--snapshot", str(STRICT), "--pod", "shop/urgent", "--policy", path)
    assert result["input"]["guards"] == ["strictBudgets: PodDisruptionBudgets: those in namespace(s) kafka"]
    assert result["input"]["ranking"][0] == "strict budget violations"
    side = result["preemption"]["reprieve"]
    assert side["offered"] == [] and side["held"] == side["reasons"][0]
    assert {r["name"]: r["reprieve"]["cause"] for r in result["nodes"]} == {"n1": "strict budget", "n2": "strict budget"}
    # Without the policy: reprieve preempts on one of stock's tied nodes, and nothing is held: n2,
    # whose batch/job-1 started an hour after job-0, so loses 2 cores x 1 h less work (at the
    # dump's latest time, as explain judges a snapshot).
    plain = cli.report(capsys, "explain", "--snapshot", str(STRICT), "--pod", "shop/urgent")
    assert plain["preemption"]["reprieve"]["offered"] == ["n2"] and plain["preemption"]["reprieve"]["held"] is None
    assert plain["input"]["guards"] is None


def test_explain_with_a_strict_budget_on_the_example_costs_the_chosen_node_none(capsys, tmp_path):
    # examples/cluster.yaml: batch/etl allows no disruption; node-b's victims would violate it.
    path = policy(tmp_path, "strictBudgets: {namespaces: [batch]}\n")
    result = cli.report(capsys, "explain", "--snapshot", str(EXAMPLE), "--pod", str(ROOT / "examples/pods/checkout-0.yaml"),
                        "--policy", path)
    rows = {r["name"]: r["reprieve"] for r in result["nodes"]}
    assert rows["node-b"]["cause"] == "strict budget" and rows["node-b"]["verdict"] == "dropped"
    assert result["preemption"]["reprieve"]["offered"] == ["node-d"]
    assert rows["node-d"]["cost"]["strict_budget_violations"] == 0


def test_explain_shows_a_minimum_runtime_at_work(capsys, tmp_path):
    # Every pod protected for 100000h: no node has a victim left.
    path = policy(tmp_path, "minimumRuntime: [{duration: 100000h}]\n")
    result = cli.report(capsys, "explain", "--snapshot", str(STRICT), "--pod", "shop/urgent", "--policy", path)
    assert result["input"]["guards"] == ["minimumRuntime[0]: 100000h for pods of every kind"]
    assert result["input"]["ranking"][0] == "opted-out victims"  # minimum runtime leaves the order as it is
    assert {r["reprieve"]["cause"] for r in result["nodes"]} == {"minimum runtime"}
    assert result["preemption"]["reprieve"]["held"].startswith(
        "no candidate node can make room for the pod without evicting a pod inside its minimum runtime: n1: every "
        "lower-priority pod is protected: batch/job-0 (has run "
    )


def test_the_preempt_verb_answers_no_node_and_logs_why(caplog):
    loaded = policy_file.load(GOLDEN / "policy.yaml")
    view = snapshot.load(GOLDEN / "snapshot.yaml")
    client = create_app(
        Settings(), cluster=StaticCluster(view), rules=loaded.rules, order=loaded.order, guards=loaded.guards
    ).test_client()
    with caplog.at_level(logging.INFO, logger="reprieve.decisions"):
        response = client.post("/preempt", data=(GOLDEN / "request.json").read_bytes())
    assert (response.status_code, response.data) == (200, b'{"NodeNameToMetaVictims":{}}')
    [line] = [r for r in caplog.records if r.getMessage() == "preempt"]
    details = line.fields
    assert (details["outcome"], details["changed"]) == ("no candidate", True)
    nodes = details["nodes"]
    assert {n: e["cause"] for n, e in nodes.items()} == {"n1": "strict budget", "n2": "strict budget"}
    assert details["reasons"][0].startswith("no candidate node can make room for the pod without violating a strict")


def test_simulate_replays_under_the_policy(capsys, tmp_path):
    # The queue is the snapshot's own pending pod: stock evicts a broker (1 violation);
    # reprieve under the policy leaves the pod pending.
    path = policy(tmp_path, "strictBudgets: {namespaces: [kafka]}\n")
    result = cli.report(capsys, "simulate", "--snapshot", str(STRICT), "--policy", path)
    totals = result["totals"]
    assert (totals["stock"]["pdb_violations"], totals["stock"]["pending"]) == (1, 0)
    assert (totals["reprieve"]["preemptions"], totals["reprieve"]["pending"]) == (0, 1)
    assert result["input"]["policy"] == path
    [step] = result["steps"]["reprieve"]
    assert step["node"] is None and "strict PodDisruptionBudget kafka/brokers" in step["why"]
    plain = cli.report(capsys, "simulate", "--snapshot", str(STRICT))
    assert plain["totals"]["reprieve"]["pending"] == 0 and plain["input"]["policy"] is None
    code, out, _ = cli.run(capsys, "simulate", "--snapshot", str(STRICT), "--policy", path)
    assert code == 0 and out.splitlines()[0].endswith(f", reprieve under policy {path}")


def test_a_bad_guard_stops_every_command_naming_the_key(capsys, tmp_path):
    path = policy(tmp_path, "minimumRuntime: [{duration: 10}]\n")
    for argv in (["check-policy", path], ["simulate", "--snapshot", str(STRICT), "--policy", path],
                 ["explain", "--snapshot", str(STRICT), "--pod", "shop/urgent", "--policy", path]):
        code, _, err = cli.run(capsys, *argv)
        assert code == 2, argv
        assert f"reprieve: policy {path}: minimumRuntime[0].duration: 10 is not a duration" in err
    assert json.loads((GOLDEN / "response.json").read_text()) == {"NodeNameToMetaVictims": {}}
