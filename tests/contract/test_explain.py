"""`reprieve explain`: table and JSON on the example snapshot, requests, and bad input.

The expectations are worked out by hand from examples/cluster.yaml (four 4-cpu nodes):
- node-a runs web-a1 (1000, 1 cpu) and batch/report-1 (100, 1 cpu, Burstable, started
  11-20 09:40), batch/report-2 (100, 1 cpu, Guaranteed, started 11-21 17:20), scratch-a
  (100, BestEffort): 1 cpu free.
- node-b: web-b2 (1000, 1), etl-0 (100, 1.5, G), etl-1 (100, 1.5, B); batch/etl allows 0.
- node-c: web-c3 (1000, 1), notebook-0 (100, 1): 2 free, held for ml/trainer-0 (10000, 2).
- node-d: coredns (100000), infer-0 (10000, 1), backfill-0 (100, 2, B, started 11-21 09:00).
shop/checkout-0 (10000, 2 cpu) fits nowhere. Stock, per node (slack = 4 - kept - 2):
- node-a: all four lower; slack 2: web-a1 back (1), scratch-a back (pod slot), report-1
  (older than report-2) back (0); report-2 goes. 0 violations.
- node-b: slack 2; etl-0, etl-1 violating (allowance 0) go back first: etl-0 (0.5 left),
  etl-1 cannot (1 violation), web-b2 cannot. Victims web-b2, etl-1.
- node-c: slack 4 - 2 (held) - 2 = 0: web-c3 and notebook-0 both go.
- node-d: slack 4 - 1.1 - 2 = 0.9: backfill-0 goes.
Stock ranking: b has a violation; c's top victim is 1000; a and d tie on 100, sum and count;
a's top victim started later (11-21 17:20 vs 09:00): node-a, evicting report-2.
reprieve evicts report-1 on node-a instead (Burstable before Guaranteed), and then node-d wins
its ranking: same QoS counts, and backfill-0 (11-21 09:00) started after report-1 (11-20).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from extender.commands import explain
from extender.serving.app import create_app
from extender.state.source import StaticCluster
from extender.config import Settings
from tests.contract import cli
from tests.conftest import EXAMPLE, ROOT

CHECKOUT = ROOT / "examples" / "pods" / "checkout-0.yaml"
REQUESTS = ROOT / "examples" / "requests"
PDB_COUNT = Path(__file__).parent / "explain" / "pdb-count.yaml"
DOCS = ROOT / "docs" / "explain.md"


def run(capsys, *args: str) -> tuple[int, str, str]:
    return cli.run(capsys, "explain", *args)


def report(capsys, *args: str) -> dict:
    return cli.report(capsys, "explain", *args)


def names(victims) -> list[str]:
    return [v["name"] for v in victims]


def row(result: dict, node: str) -> dict:
    return next(r for r in result["nodes"] if r["name"] == node)


def flat(text: str) -> str:
    return " ".join(text.split())


def test_json_on_the_example_shows_stock_and_reprieve_disagree(capsys):
    result = report(capsys, "--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT))
    p = result["preemption"]
    assert p["needed"] is True and p["fits"] == []
    assert p["stock"]["chosen"] == "node-a" and names(p["stock"]["victims"]) == ["batch/report-2"]
    assert p["reprieve"]["offered"] == ["node-d"]
    assert p["reprieve"]["chosen"] == "node-d" and names(p["reprieve"]["victims"]) == ["analytics/backfill-0"]
    assert p["differs"] is True

    a = row(result, "node-a")
    assert names(a["stock"]["victims"]) == ["batch/report-2"] and a["stock"]["rank"] == 1
    assert names(a["reprieve"]["victims"]) == ["batch/report-1"]
    assert a["reprieve"]["verdict"] == "outranked" and a["reprieve"]["rank"] == 2
    assert a["differs"] == ["victims", "chosen"]
    b = row(result, "node-b")
    assert names(b["stock"]["victims"]) == names(b["reprieve"]["victims"]) == ["shop/web-7d4b9c-b2", "batch/etl-1"]
    assert b["stock"]["pdb_violations"] == b["reprieve"]["pdb_violations"] == 1
    assert b["reprieve"]["violated_budgets"] == ["batch/etl"]
    assert b["stock"]["victims"][0]["pdbs"] == ["shop/web"]
    assert (b["stock"]["rank"], b["reprieve"]["rank"], b["differs"]) == (4, 4, [])
    c = row(result, "node-c")
    assert names(c["reprieve"]["victims"]) == ["shop/web-7d4b9c-c3", "analytics/notebook-0"]
    assert any("room held for nominated ml/trainer-0" in r for r in c["reprieve"]["reasons"])
    assert (c["stock"]["rank"], c["reprieve"]["rank"]) == (3, 3)
    d = row(result, "node-d")
    assert d["reprieve"]["verdict"] == "chosen" and d["reprieve"]["chosen"] is True
    assert (d["stock"]["rank"], d["reprieve"]["rank"], d["differs"]) == (2, 1, ["chosen"])
    assert d["stock"]["upstream_cost"] == {
        "pdb_violations": 0,
        "highest_priority": 100,
        "priority_sum": 100,
        "victims": 1,
        "top_victims_start": "2026-11-21T09:00:00Z",
    }
    # Stock's victims costed as reprieve's own: the same victims on node-d, the same cost.
    assert d["stock"]["cost"] == d["reprieve"]["cost"] == {
        "opted_out_victims": 0,
        "pdb_violations": 0,
        "jobs_failed": 0,
        "broken_gangs": 0,
        "pods_lost_with_gangs": 0,
        "highest_priority": 100,
        "pods_lost_with_managers": 0,
        "retries_burned": 0,
        "guaranteed": 0,
        "burstable": 1,
        "homeless_victims": 1,
        "priority_sum": 100,
        "victims": 1,
        "pending_without_room": 0,  # examples/cluster.yaml has no pod waiting
        "work_lost_core_seconds": 167880,  # 2 cores' worth (one of node-d's 2 GPUs) x 83,940 s, at the dump's latest time
        "highest_deletion_cost": 0,
        "time_to_room_seconds": 30,  # the example's pods set no grace period: the API server's 30 s
        "top_victims_start": "2026-11-21T09:00:00Z",
    }
    # On node-a, report-2 (Guaranteed, stock's) against report-1 (Burstable, reprieve's).
    assert (a["stock"]["cost"]["guaranteed"], a["reprieve"]["cost"]["guaranteed"]) == (1, 0)
    assert a["decided_by"] == {"criterion": "Guaranteed victims", "field": "guaranteed", "reprieve": 0, "stock": 1}
    assert d["decided_by"] is None  # the same victims

    # reprieve's own victims on node-d and on node-a differ first on the work lost, at the dump's
    # latest time: backfill-0, 2 cores' worth x 83,940 s, against report-1, 1 core x 167,940 s.
    assert result["differences"][0] == (
        "reprieve preempts on node-d, stock on node-a; reprieve ranks its victims on node-d first, decided by "
        "work lost since the last checkpoint: 167880 core-seconds on node-d against 167940 core-seconds on node-a"
    )
    assert p["decided_by"] == {
        "criterion": "work lost since the last checkpoint", "field": "work_lost_core_seconds",
        "reprieve": 167880, "stock": 167940,
    }
    assert "node-a: reprieve evicts batch/report-1 instead of batch/report-2, decided by Guaranteed victims: 0 against 1" in result["differences"]


def test_table_on_the_example_marks_the_differences(capsys):
    code, out, _ = run(capsys, "--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT))
    assert code == 0
    text = flat(out)
    assert "Stock kube-scheduler: preempts on node-a, evicting batch/report-2" in text
    assert "reprieve: preempts on node-d, evicting analytics/backfill-0 *" in text
    assert "* node-a: reprieve evicts batch/report-1 instead of batch/report-2, decided by Guaranteed victims: 0 against 1" in text
    # Each side's cost in brief, both costed by reprieve's ranking.
    assert (
        "evicts batch/report-2 (100, Guaranteed) cost 0 PDB violation(s), highest victim priority 100, 1 with no home, "
        "1 Guaranteed / 0 Burstable of 1 live victim(s)"
    ) in text
    assert "node-a * differs: victims, chosen" in text
    assert "evicts batch/report-2 (100, Guaranteed)" in text
    assert "evicts batch/report-1 (100, Burstable)" in text
    assert "shop/web-7d4b9c-b2 (1000, Guaranteed, PDB shop/web)" in text


def test_json_is_stable_and_sorted(capsys):
    args = ("--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT), "--output", "json")
    _, first, _ = run(capsys, *args)
    _, second, _ = run(capsys, *args)
    assert first == second
    assert first == explain.as_json(json.loads(first)).decode() + "\n"


def test_every_json_field_is_documented(capsys):
    docs = DOCS.read_text()
    found: set[str] = set()
    for args in (
        ("--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT)),
        ("--snapshot", str(EXAMPLE), "--request", str(REQUESTS / "preempt.json")),
        ("--snapshot", str(EXAMPLE), "--request", str(REQUESTS / "filter.json")),
    ):
        found |= cli.json_keys(report(capsys, *args))
    missing = sorted(k for k in found if f"`{k}`" not in docs)
    assert not missing, f"not in docs/explain.md: {missing}"


TABLES = [
    pytest.param(("--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT)), id="pod-file"),
    pytest.param(("--snapshot", str(EXAMPLE), "--pod", "ml/trainer-0"), id="pod-in-snapshot-that-fits"),
    pytest.param(("--snapshot", str(EXAMPLE), "--request", str(REQUESTS / "preempt.json")), id="preempt-request"),
    pytest.param(("--snapshot", str(EXAMPLE), "--request", str(REQUESTS / "filter.json")), id="filter-request"),
    pytest.param(("--snapshot", str(EXAMPLE), "--request", str(REQUESTS / "prioritize.json")), id="prioritize-request"),
    pytest.param(("--snapshot", str(PDB_COUNT), "--pod", "shop/urgent"), id="pdb-count"),
    pytest.param(("--snapshot", str(ROOT / "examples" / "leaderworkerset.yaml"), "--pod", "ml/trainer"), id="leaderworkerset"),
    pytest.param(
        ("--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT), "--policy", str(ROOT / "examples" / "policy.yaml")),
        id="policy-keeps-stocks-victims",
    ),
    pytest.param(
        (
            "--snapshot",
            str(ROOT / "tests/golden/preempt-nocache-scheduler/snapshot.yaml"),
            "--request",
            str(ROOT / "tests/golden/preempt-nocache-scheduler/request.json"),
        ),
        id="long-names",
    ),
]


@pytest.mark.parametrize("args", TABLES)
def test_table_fits_80_columns(capsys, args):
    code, out, _ = run(capsys, *args)
    assert code == 0
    assert out.count("\n") > 5
    wide = [line for line in out.splitlines() if len(line) > 80]
    assert not wide


def test_preempt_request_uses_its_proposals_and_answers_as_the_verb_does(capsys, example_view):
    result = report(capsys, "--snapshot", str(EXAMPLE), "--request", str(REQUESTS / "preempt.json"))
    p = result["preemption"]
    # The request proposes report-2 on node-a (0 violations) and etl-1, etl-0 on node-b (1).
    assert p["fits"] is None
    assert p["stock"]["chosen"] == "node-a" and names(p["stock"]["victims"]) == ["batch/report-2"]
    assert p["reprieve"]["chosen"] == "node-a" and names(p["reprieve"]["victims"]) == ["batch/report-1"]
    b = row(result, "node-b")
    assert names(b["stock"]["victims"]) == ["batch/etl-1", "batch/etl-0"]
    assert names(b["reprieve"]["victims"]) == ["shop/web-7d4b9c-b2", "batch/etl-1"]
    assert b["differs"] == ["victims"]
    assert any(
        line == "node-b: reprieve evicts shop/web-7d4b9c-b2 instead of batch/etl-0, decided by PDB violations: 1 against 2"
        for line in result["differences"]
    ), result["differences"]
    # The proposal's count is the scheduler's (1); its cost counts as reprieve does (2: the
    # budget allows none).
    assert (b["stock"]["pdb_violations"], b["stock"]["upstream_cost"]["pdb_violations"]) == (1, 1)
    assert b["stock"]["cost"]["pdb_violations"] == 2
    # Exactly what the preempt verb answers for the same body.
    client = create_app(Settings(), cluster=StaticCluster(example_view)).test_client()
    answer = client.post("/preempt", data=(REQUESTS / "preempt.json").read_bytes(), content_type="application/json").json
    offered = {
        r["name"]: {"Pods": [{"UID": v["uid"]} for v in r["reprieve"]["victims"]], "NumPDBViolations": r["reprieve"]["pdb_violations"]}
        for r in result["nodes"]
        if r["reprieve"]["offered"]
    }
    assert offered == answer["NodeNameToMetaVictims"]


def test_where_the_rules_leave_stocks_cheaper_victims_the_difference_says_why(capsys):
    # examples/policy.yaml: shop is above its guaranteed share, so the pods of other queues are
    # out of reach. On node-a stock evicts batch/report-2 (priority 100); reprieve may take only
    # shop's own web pod (1000): stock's rank first, and the line gives reprieve's reason.
    args = ("--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT), "--policy", str(ROOT / "examples" / "policy.yaml"))
    result = report(capsys, *args)
    a = row(result, "node-a")
    assert names(a["reprieve"]["victims"]) == ["shop/web-7d4b9c-a1"]
    assert a["decided_by"] == {"criterion": "highest victim priority", "field": "highest_priority", "reprieve": 1000, "stock": 100}
    [line] = [d for d in result["differences"] if d.startswith("node-a:")]
    assert line.startswith(
        "node-a: reprieve evicts shop/web-7d4b9c-a1 instead of batch/report-2, though stock's victims rank first by "
        "highest victim priority (100 against 1000); reprieve: 3 protected: batch/report-1, batch/report-2, batch/scratch-a"
    ), line


def test_filter_and_prioritize_request(capsys, example_view):
    result = report(capsys, "--snapshot", str(EXAMPLE), "--request", str(REQUESTS / "filter.json"))
    assert result["kind"] == "filter-prioritize"
    a, c = row(result, "node-a"), row(result, "node-c")
    assert (a["fits"], a["filter"]) == (True, "passed")
    # node-c: 2 cpu free, but held for ml/trainer-0 (10000 >= 1000).
    assert (c["fits"], c["filter"]) == (False, "rejected")
    assert c["reason"] == "fits only in room held for nominated ml/trainer-0 (priority 10000)"
    result = report(capsys, "--snapshot", str(EXAMPLE), "--request", str(REQUESTS / "prioritize.json"))
    client = create_app(Settings(), cluster=StaticCluster(example_view)).test_client()
    answer = client.post("/prioritize", data=(REQUESTS / "prioritize.json").read_bytes(), content_type="application/json").json
    assert {r["name"]: r["score"] for r in result["nodes"]} == {s["Host"]: s["Score"] for s in answer}
    assert "reprieve leaves resource shortages" in row(result, "node-b")["reason"]


def test_stock_pdb_count_differs_from_reprieves_exact_count(capsys):
    # n1: web-old (1 cpu, older) and web-big (3 cpu) under a budget allowing 1; n2: cache
    # (4 cpu, priority 200). urgent needs 3. Stock on n1: web-old spends the allowance in
    # the split (1-1=0), web-big is violating (-1), cannot come back (slack 1): 1 violation
    # counted, though evicting web-big alone is within the budget. So stock goes to n2 (0
    # violations) and evicts priority 200; reprieve counts 0 on n1 and prefers it (100 < 200).
    result = report(capsys, "--snapshot", str(PDB_COUNT), "--pod", "shop/urgent")
    p = result["preemption"]
    assert p["stock"]["chosen"] == "n2" and names(p["stock"]["victims"]) == ["shop/cache"]
    assert p["reprieve"]["chosen"] == "n1" and names(p["reprieve"]["victims"]) == ["shop/web-big"]
    n1 = row(result, "n1")
    assert (n1["stock"]["pdb_violations"], n1["reprieve"]["pdb_violations"]) == (1, 0)
    assert n1["differs"] == ["pdb_violations", "chosen"]
    assert "n1: PDB violations 1 by stock's count, 0 by reprieve's exact count" in result["differences"]


def test_nodes_restricts_the_dry_run(capsys):
    # Only node-a and node-b: both pick node-a (node-b violates 1); only the victims differ.
    result = report(capsys, "--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT), "--nodes", "node-b,node-a")
    assert [r["name"] for r in result["nodes"]] == ["node-b", "node-a"]
    assert result["input"]["nodes"] == ["node-b", "node-a"]
    assert result["preemption"]["stock"]["chosen"] == result["preemption"]["reprieve"]["chosen"] == "node-a"
    assert [d.split(":")[0] for d in result["differences"]] == ["node-a"]


def test_a_pod_that_fits_needs_no_preemption(capsys):
    # ml/trainer-0 is nominated to node-c: the 2 free cpu held there are its own.
    result = report(capsys, "--snapshot", str(EXAMPLE), "--pod", "ml/trainer-0")
    assert result["preemption"]["fits"] == ["node-c"]
    assert result["preemption"]["needed"] is False
    assert row(result, "node-c")["stock"]["status"] == "fits without preemption"
    _, out, _ = run(capsys, "--snapshot", str(EXAMPLE), "--pod", "ml/trainer-0")
    assert "Fits without preemption on: node-c" in out


def test_preemption_policy_never(capsys, tmp_path):
    pod = tmp_path / "polite.yaml"
    pod.write_text(
        "kind: Pod\nmetadata: {name: polite, namespace: shop}\n"
        "spec: {priority: 10000, preemptionPolicy: Never, containers: [{resources: {requests: {cpu: '3'}}}]}\n"
    )
    p = report(capsys, "--snapshot", str(EXAMPLE), "--pod", str(pod))["preemption"]
    assert "preemptionPolicy=Never" in p["stock"]["refusal"]
    assert p["reprieve"]["refusal"] == "preemptionPolicy Never"
    assert p["stock"]["chosen"] is None and p["reprieve"]["chosen"] is None
    assert p["differs"] is False


BAD_FILES = {
    "not-yaml.yaml": "kind: Pod\nmetadata: {name: [\n",
    "node.yaml": "kind: Node\nmetadata: {name: n}\n",
    "quantity.yaml": "kind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {containers: [{resources: {requests: {cpu: fast}}}]}\n",
    "class.yaml": "kind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {priorityClassName: gold}\n",
    "two.yaml": "kind: Pod\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {name: b}\n",
    "not-json.json": "{nope",
    "no-pod.json": '{"NodeNameToMetaVictims": {}}',
}

BAD = [
    pytest.param(("--pod", "shop/nope"), "--pod shop/nope: no such file, and no pod shop/nope", id="unknown-pod"),
    pytest.param(("--pod", "shop/web-7d4b9c-a1"), "already bound to node-a", id="bound-pod"),
    pytest.param(("--pod", "missing.yaml"), "--pod missing.yaml: cannot read", id="missing-pod-file"),
    pytest.param(("--pod", "{tmp}/not-yaml.yaml"), "not valid YAML", id="pod-file-not-yaml"),
    pytest.param(("--pod", "{tmp}/node.yaml"), "kind is 'Node', expected Pod", id="pod-file-wrong-kind"),
    pytest.param(("--pod", "{tmp}/quantity.yaml"), "spec.containers.0.resources.requests.cpu: 'fast' is not a quantity", id="bad-quantity"),
    pytest.param(("--pod", "{tmp}/class.yaml"), "spec.priorityClassName: no PriorityClass 'gold'", id="unknown-priority-class"),
    pytest.param(("--pod", "{tmp}/two.yaml"), "expected exactly one Pod", id="two-pods"),
    pytest.param(("--pod", str(CHECKOUT), "--nodes", "node-a,node-x"), "--nodes: unknown node 'node-x'", id="unknown-node"),
    pytest.param(("--request", "{tmp}/not-json.json"), "--request", id="request-not-json"),
    pytest.param(("--request", "{tmp}/no-pod.json"), "Pod is required", id="request-without-pod"),
    pytest.param(("--request", str(REQUESTS / "preempt.json"), "--nodes", "node-a"), "--nodes goes with --pod", id="nodes-with-request"),
]


@pytest.mark.parametrize("args, message", BAD)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, args, message):
    for name, text in BAD_FILES.items():
        (tmp_path / name).write_text(text)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    code, out, err = run(capsys, "--snapshot", str(EXAMPLE), *args)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("reprieve: "), err
    assert message in err.replace(str(tmp_path) + "/", "")


def test_bad_snapshot_and_real_exit_status(tmp_path):
    # Through the real entry point: exit status 2, one line, no traceback.
    done = subprocess.run(
        [sys.executable, "-m", "extender.cli", "explain", "--snapshot", str(tmp_path / "none.yaml"), "--pod", "a/b"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip() == f"reprieve: cannot read snapshot {tmp_path / 'none.yaml'}: No such file or directory"


def test_readme_shows_real_output(capsys):
    # The README's "See what reprieve decides" pastes the head of this run's report, up to
    # its differences, and "..." for the rest: it must stay true.
    readme = (ROOT / "README.md").read_text()
    command = "reprieve explain --snapshot examples/cluster.yaml --pod examples/pods/checkout-0.yaml --nodes node-a,node-d"
    after = readme.split(command + "\n```\n```\n", 1)[1]
    pasted = after.split("\n```\n", 1)[0] + "\n"
    head, _, rest = pasted.rpartition("...\n")
    assert rest == "" and "Differences (*):" in head
    _, out, _ = run(capsys, *command.split()[2:])
    assert out.startswith(head)
    assert out[len(head) :].startswith("\nnode-a")  # the differences end where the paste does


def test_request_with_nodes_and_victims_the_snapshot_does_not_know(capsys, tmp_path):
    body = json.loads((REQUESTS / "preempt.json").read_text())
    body["NodeNameToMetaVictims"]["ghost"] = {"Pods": [{"UID": "nobody"}], "NumPDBViolations": 0}
    body["NodeNameToMetaVictims"]["node-d"] = {"Pods": [{"UID": "unknown-uid"}], "NumPDBViolations": 0}
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    result = report(capsys, "--snapshot", str(EXAMPLE), "--request", str(request))
    # Neither can be ranked from the snapshot; reprieve offers node-a, which it can judge.
    ghost, d = row(result, "ghost"), row(result, "node-d")
    assert (ghost["reprieve"]["verdict"], ghost["reprieve"]["cause"]) == ("outranked", "unknown node")
    assert (d["reprieve"]["verdict"], d["reprieve"]["cause"]) == ("outranked", "unknown victim")
    assert d["reprieve"]["victims"] == [
        {"uid": "unknown-uid", "name": None, "priority": None, "qos": None, "pdbs": [], "start_time": None, "terminating": None}
    ]
    p = result["preemption"]
    assert p["reprieve"]["offered"] == ["node-a"]
    assert p["stock"]["unranked"] == ["ghost", "node-d"] and p["reprieve"]["unranked"] == []
    assert p["stock"]["chosen"] == p["reprieve"]["chosen"] == "node-a"
    code, out, _ = run(capsys, "--snapshot", str(EXAMPLE), "--request", str(request))
    assert code == 0 and "UID unknown-uid (not in the snapshot)" in out
    assert all(len(line) <= 80 for line in out.splitlines())


# What was loaded and what decided it (issue 26): the header and input say so.


def test_header_and_input_say_what_was_loaded_and_which_policy_decided(capsys, tmp_path):
    code, out, _ = run(capsys, "--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT))
    assert code == 0
    # examples/cluster.yaml: 4 nodes; 13 pods, of which ml/trainer-0 is pending; shop/web and batch/etl.
    header = flat(out.split("\n\n")[0])
    assert header.endswith(
        f"snapshot {EXAMPLE}: 4 nodes, 13 pods (1 pending), 2 PDBs no policy file (Kubernetes rules only); ranking: default"
    )
    source = report(capsys, "--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT))["input"]
    assert source["loaded"] == {"nodes": 4, "pods": 13, "pending": 1, "budgets": 2, "left_out": 0}
    assert (source["policy"], source["queues"]) == (None, None)
    assert source["ranking"][:3] == ["opted-out victims", "PDB violations", "Jobs failed"]

    policy = ROOT / "examples" / "policy.yaml"
    code, out, _ = run(capsys, "--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT), "--policy", str(policy))
    assert flat(out.split("\n\n")[0]).endswith(f"2 PDBs policy {policy} (multi-tenant rules, 7 queue(s)); ranking: default")
    source = report(capsys, "--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT), "--policy", str(policy))["input"]
    assert (source["policy"], source["queues"]) == (str(policy), 7)

    order = tmp_path / "order.yaml"
    order.write_text("ranking: [broken gangs]\n")
    code, out, _ = run(capsys, "--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT), "--policy", str(order))
    assert f"2 PDBs policy {order} (ranking only); ranking: opted-out victims, broken gangs, PDB violations," in flat(out)
    source = report(capsys, "--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT), "--policy", str(order))["input"]
    assert source["ranking"][:3] == ["opted-out victims", "broken gangs", "PDB violations"] and source["queues"] is None


def with_a_service(tmp_path) -> Path:
    dump = tmp_path / "dump.yaml"
    dump.write_text(EXAMPLE.read_text() + "\n---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n")
    return dump


def test_items_left_out_are_named_on_stderr_and_counted(capsys, tmp_path):
    dump = with_a_service(tmp_path)
    code, out, err = run(capsys, "--snapshot", str(dump), "--pod", str(CHECKOUT))
    assert code == 0
    assert err == (
        f"reprieve: {dump}: document 1 (Service shop/web): left out: reprieve does not read kind Service "
        "(it reads Node, Pod, PodDisruptionBudget, PriorityClass, Job, PodGroup)\n"
    )
    assert f"snapshot {dump}: 4 nodes, 13 pods (1 pending), 2 PDBs, 1 item(s) left out (named on stderr)" in flat(out)
    assert report(capsys, "--snapshot", str(dump), "--pod", str(CHECKOUT))["input"]["loaded"]["left_out"] == 1


def test_strict_makes_an_item_left_out_an_error(capsys, tmp_path):
    dump = with_a_service(tmp_path)
    code, out, err = run(capsys, "--snapshot", str(dump), "--strict", "--pod", str(CHECKOUT))
    assert (code, out) == (2, "")
    assert err.startswith(f"reprieve: {dump}: document 1 (Service shop/web): left out: reprieve does not read kind Service")
    assert err.endswith("--strict makes each an error\n") and err.count("\n") == 1


def test_a_dump_without_nodes_is_an_error(capsys, tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    code, _, err = run(capsys, "--snapshot", str(empty), "--pod", str(CHECKOUT))
    assert code == 2 and f"snapshot {empty} has no nodes, so there is nothing to decide on" in err


# A pod file is hand-written: checked as the API server would, before anything is decided.

HANDWRITTEN = [
    pytest.param(
        "containers: [{name: m, image: x, resources: {requets: {cpu: '2'}}}]",
        "spec.containers.0.resources.requets: unknown field (did you mean requests?)", id="typo-requests",
    ),
    pytest.param("nodeSelectr: {a: b}\n  containers: []", "spec.nodeSelectr: unknown field (did you mean nodeSelector?)", id="typo-spec"),
    pytest.param(
        "containers: [{name: m, resources: {limits: {example.com/gpu: 0.5}}}]",
        "spec.containers.0.resources.limits.example.com/gpu: 0.5 must be a whole number (example.com/gpu is an extended resource)",
        id="half-a-gpu",
    ),
    pytest.param(
        "containers: [{name: m, resources: {requests: {example.com/gpu: 1}, limits: {example.com/gpu: 2}}}]",
        "spec.containers.0.resources.requests.example.com/gpu: 1 must equal the limit, 2 (example.com/gpu cannot be overcommitted)",
        id="gpu-request-below-limit",
    ),
    pytest.param(
        "containers: [{name: m, resources: {requests: {example.com/gpu: 1}}}]",
        "spec.containers.0.resources.limits.example.com/gpu: required: example.com/gpu cannot be overcommitted, so its limit must be set, equal to the request",
        id="gpu-without-limit",
    ),
    pytest.param(
        "initContainers: [{name: i, resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}}]\n  containers: []",
        "spec.initContainers.0.resources.requests.cpu: 2 must be at most the limit, 1", id="cpu-request-above-limit",
    ),
    pytest.param(
        "containers: [{name: m, resources: {requests: {gpu: 1}}}]",
        "spec.containers.0.resources.requests.gpu: not a standard resource (cpu, memory, ephemeral-storage, hugepages-<size>); "
        "an extended resource has a domain, such as nvidia.com/gpu", id="gpu-without-a-domain",
    ),
    pytest.param(
        "containers: [{name: m, resources: {requests: {memroy: 1Gi}}}]",
        "spec.containers.0.resources.requests.memroy: not a standard resource (cpu, memory, ephemeral-storage, hugepages-<size>); did you mean memory?",
        id="typo-memory",
    ),
]


@pytest.mark.parametrize("spec, message", HANDWRITTEN)
def test_a_pod_file_is_checked_as_the_api_server_would(capsys, tmp_path, spec, message):
    pod = tmp_path / "pod.yaml"
    pod.write_text(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: shop}}\nspec:\n  priority: 10000\n  {spec}\n")
    code, out, err = run(capsys, "--snapshot", str(EXAMPLE), "--pod", str(pod))
    assert (code, out) == (2, "")
    assert err == f"reprieve: --pod {pod}: {message}\n"


def test_what_the_api_server_admitted_is_read_as_before(capsys, tmp_path):
    # A pod as `kubectl get pod -o yaml` prints it (every field the API fills in, status too),
    # and a captured request whose pod carries fields no Pod has: both accepted. Only files
    # written by hand are held to the API's schema; the verbs' bodies never are (test_http).
    golden = ROOT / "tests" / "golden" / "preempt-nocache-scheduler"
    body = json.loads((golden / "request.json").read_text())
    pod = tmp_path / "pod.json"
    pod.write_text(json.dumps({"apiVersion": "v1", "kind": "Pod", **body["Pod"]}))
    code, _, err = run(capsys, "--snapshot", str(golden / "snapshot.yaml"), "--pod", str(pod))
    assert code == 0, err
    body["Pod"]["spec"]["containers"][0]["resources"]["requets"] = {"cpu": "1"}
    body["Pod"]["surprise"] = {"fromTheFuture": True}
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    code, _, err = run(capsys, "--snapshot", str(golden / "snapshot.yaml"), "--request", str(request))
    assert code == 0, err


def test_jobs_in_the_dump_decide_between_equal_victims(capsys, tmp_path):
    # n1 (4 cpu): two equal 2-cpu pods of two Jobs, priority 10; counting's started later, and
    # its Job (backoffLimit 0) fails with one eviction; tolerant's Job ignores DisruptionTarget.
    # urgent needs 2: stock takes the younger pod (failing its Job), reprieve tolerant's.
    import yaml

    from tests.contract.objects import HIGH, dump, k8s_node, k8s_pod

    def owned(pod: dict, job: str) -> dict:
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": f"uid-{job}", "controller": True}]
        return pod

    def job(name: str, spec: dict) -> dict:
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "batch", "uid": f"uid-{name}"},
                "spec": spec, "status": {"active": 1}}

    ignore = {"podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump(
        k8s_node("n1", cpu="4"),
        owned(k8s_pod("tolerant-x", "batch", node="n1", cpu="2", minute=0), "tolerant"),
        owned(k8s_pod("counting-x", "batch", node="n1", cpu="2", minute=5), "counting"),
        job("tolerant", ignore), job("counting", {"backoffLimit": 0}),
        k8s_pod("urgent", "shop", cpu="2", priority=HIGH),
    )))
    result = report(capsys, "--snapshot", str(path), "--pod", "shop/urgent")
    p = result["preemption"]
    assert names(p["stock"]["victims"]) == ["batch/counting-x"]
    assert names(p["reprieve"]["victims"]) == ["batch/tolerant-x"]
    cost = row(result, "n1")["reprieve"]["cost"]
    assert (cost["jobs_failed"], cost["retries_burned"]) == (0, 0)
    # Stock's victim costed as reprieve's own: one Job failed, one retry burned; the Jobs decided.
    assert (row(result, "n1")["stock"]["cost"]["jobs_failed"], row(result, "n1")["stock"]["cost"]["retries_burned"]) == (1, 1)
    assert row(result, "n1")["decided_by"] == {"criterion": "Jobs failed", "field": "jobs_failed", "reprieve": 0, "stock": 1}
    assert "n1: reprieve evicts batch/tolerant-x instead of batch/counting-x, decided by Jobs failed: 0 against 1" in result["differences"]
    assert result["input"]["loaded"]["left_out"] == 0  # the Jobs are read, not left out


def test_the_docs_leaderworkerset_example_is_real_output(capsys):
    # docs/explain.md, "What decided each difference": the head of this run, "..." for the rest.
    command = "reprieve explain --snapshot examples/leaderworkerset.yaml --pod ml/trainer"
    pasted = DOCS.read_text().split(f"$ {command}\n", 1)[1].split("\n```\n", 1)[0] + "\n"
    head, _, rest = pasted.rpartition("...\n")
    assert rest == "" and "decided by pods lost with broken gangs: 3 against 4" in flat(head)
    code, out, _ = run(capsys, *command.split()[2:])
    assert code == 0 and out.startswith(head)
    result = report(capsys, *command.split()[2:])
    gpu = row(result, "gpu-0")
    assert (gpu["stock"]["cost"]["broken_gangs"], gpu["reprieve"]["cost"]["broken_gangs"]) == (1, 1)
    assert gpu["decided_by"] == {"criterion": "pods lost with broken gangs", "field": "pods_lost_with_gangs", "reprieve": 3, "stock": 4}
