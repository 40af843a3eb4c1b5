"""The pending pod's own constraints (node selector, required node affinity, taints and
tolerations, cordon) on a GPU cluster dump, examples/gpu/dump.yaml, whose header works every
case out by hand: explain's fits and candidates, simulate's placements and queue, and the
served preempt verb, asked about the nodes the scheduler's filters pass, all agree.

Also simulate's queue: the dump's own pending pods in the scheduler's order, ``--pods`` taking a
full dump, and a pod in both being the same pod.
"""

from __future__ import annotations

import json

import pytest
import yaml

from extender.config import Settings
from extender.serving.app import create_app
from extender.state import snapshot
from extender.state.source import StaticCluster
from tests.contract import cli
from tests.conftest import ROOT

DUMP = ROOT / "examples" / "gpu" / "dump.yaml"
GPU_NODES = ("gpu-a100-0", "gpu-h100-0")
CORDONED = "node(s) were unschedulable: cordoned (spec.unschedulable)"
TAINTED = "node(s) had untolerated taint {nvidia.com/gpu: present} (NoSchedule)"
SELECTOR = "node(s) didn't match Pod's node affinity/selector"

# Per pending pod of the dump, from its header: where it fits without preemption, the nodes
# stock preemption proposes (the scheduler's candidates), and why each other node is filtered out.
EXPECTED = {
    "ml/train-h100": ([], {"gpu-h100-0"}, {"cpu-0": SELECTOR, "cpu-1": SELECTOR, "cpu-2": CORDONED, "gpu-a100-0": SELECTOR}),
    "ml/train-any": ([], set(GPU_NODES), {"cpu-0": SELECTOR, "cpu-1": SELECTOR, "cpu-2": CORDONED}),
    "shop/web-2": ([], {"cpu-0", "cpu-1"}, {"cpu-2": CORDONED, **dict.fromkeys(GPU_NODES, TAINTED)}),
    "research/notebook": ([], set(), {"cpu-2": CORDONED, **dict.fromkeys(GPU_NODES, TAINTED)}),
    "ops/node-debugger": (["cpu-2"], set(), dict.fromkeys(GPU_NODES, TAINTED)),
}
# Stock's and reprieve's choice for each preemptor on the dump as it is: (node, victims).
CHOICES = {
    "ml/train-h100": (("gpu-h100-0", ["ml/finetune-1"]), ("gpu-h100-0", ["ml/finetune-0"])),
    "ml/train-any": (("gpu-a100-0", ["ml/sweep-0"]), ("gpu-a100-0", ["ml/sweep-0"])),
    # reprieve: report-0 (Burstable, 2 cpu) on cpu-0 rather than report-2 (Burstable, 1 cpu) on
    # cpu-1: alike up to the number of victims, but the cpu cpu-0 has left fits the pending
    # ops/node-debugger (policy.criteria.pending_room), cpu-1's none.
    "shop/web-2": (("cpu-1", ["batch/report-1"]), ("cpu-0", ["batch/report-0"])),
}
QUEUE = ["ml/train-h100", "ml/train-any", "shop/web-2", "research/notebook", "ops/node-debugger"]


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def explain(capsys, pod: str) -> dict:
    return cli.report(capsys, "explain", "--snapshot", str(DUMP), "--pod", pod)


def simulate(capsys, *args: str) -> tuple[dict, str]:
    code, out, err = cli.run(capsys, "simulate", "--snapshot", str(DUMP), *args, "--output", "json")
    assert code == 0, err
    return json.loads(out), err


def names(victims) -> list[str]:
    return [v["name"] for v in victims]


def dump_items() -> list[dict]:
    return yaml.safe_load(DUMP.read_text())["items"]


def raw_pod(key: str) -> dict:
    ns, name = key.split("/")
    return next(o for o in dump_items() if o["kind"] == "Pod" and o["metadata"]["namespace"] == ns and o["metadata"]["name"] == name)


@pytest.mark.parametrize("pod", list(EXPECTED))
def test_explain_applies_the_pods_constraints_before_fit_and_preemption(capsys, pod):
    fits, candidates, filtered = EXPECTED[pod]
    result = explain(capsys, pod)
    assert result["preemption"]["fits"] == fits
    assert result["preemption"]["needed"] is (not fits)
    rows = {r["name"]: r for r in result["nodes"]}
    assert {n for n, r in rows.items() if r["stock"]["candidate"]} == candidates
    for name, reason in filtered.items():
        row = rows[name]
        assert (row["fits"], row["stock"]["status"], row["stock"]["reasons"]) == (False, "not a candidate: filtered out", [reason])
        assert row["reprieve"]["verdict"] is None  # never asked about
    assert result["pod"]["unmodelled"] == []


def test_the_table_says_why_a_node_is_filtered_out(capsys):
    code, out, _ = cli.run(capsys, "explain", "--snapshot", str(DUMP), "--pod", "shop/web-2")
    assert code == 0
    text = " ".join(out.split())
    assert "Fits without preemption on: no node" in text  # the GPU nodes have 8 cpu free each
    assert f"gpu-h100-0 stock not a candidate: filtered out why {TAINTED}" in text
    assert "reprieve not asked: the scheduler's filters reject the node" in text


@pytest.mark.parametrize("pod", list(CHOICES))
def test_explain_simulate_and_the_served_verb_agree(capsys, tmp_path, pod):
    stock_choice, reprieve_choice = CHOICES[pod]
    result = explain(capsys, pod)
    p = result["preemption"]
    assert (p["stock"]["chosen"], names(p["stock"]["victims"])) == stock_choice
    assert (p["reprieve"]["chosen"], names(p["reprieve"]["victims"])) == reprieve_choice

    # The served verb, sent what the scheduler sends: its own victims on the nodes its filters
    # passed (the hand-worked candidates) and only those.
    proposals = {
        r["name"]: {"Pods": [{"UID": v["uid"]} for v in r["stock"]["victims"]], "NumPDBViolations": r["stock"]["pdb_violations"]}
        for r in result["nodes"]
        if r["stock"]["candidate"]
    }
    assert set(proposals) == EXPECTED[pod][1]
    client = create_app(Settings(), cluster=StaticCluster(snapshot.load(DUMP))).test_client()
    body = {"Pod": raw_pod(pod), "NodeNameToMetaVictims": proposals, "NodeNameToVictims": None}
    answer = client.post("/preempt", data=json.dumps(body), content_type="application/json").json["NodeNameToMetaVictims"]
    offered = {
        r["name"]: {"Pods": [{"UID": v["uid"]} for v in r["reprieve"]["victims"]], "NumPDBViolations": r["reprieve"]["pdb_violations"]}
        for r in result["nodes"]
        if r["reprieve"]["offered"]
    }
    assert answer == offered and reprieve_choice[0] in answer

    # simulate with this pod alone in the queue, on the dump as it is: --pods names the
    # dump's own copy of it, which is the same pod.
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(raw_pod(pod)))
    alone, err = simulate(capsys, "--pods", str(tmp_path / "pod.yaml"))
    assert "1 Pod(s) also pending in the snapshot" in err
    for side, choice in (("stock", stock_choice), ("reprieve", reprieve_choice)):
        (step,) = alone["steps"][side]
        assert (step["pod"], step["node"], step["victims"]) == (pod, *choice)


def test_simulate_replays_the_dumps_own_pending_pods_in_queue_order(capsys):
    doc, err = simulate(capsys)
    assert doc["input"]["pods"] is None
    assert doc["workload"]["pending_pods"] == len(QUEUE)
    for side in ("stock", "reprieve"):
        steps = doc["steps"][side]
        # Priority first (training 1000, web 500, interactive 200, batch 100), then creation:
        # train-h100 (11:00) before train-any (11:20), though the file has train-any first.
        assert [s["pod"] for s in steps] == QUEUE
        placed = {s["pod"]: s["node"] for s in steps}
        assert placed["research/notebook"] is None  # every GPU node tainted against it
        # The cordoned node, whose cordon it tolerates (stock); the room reprieve left for it on cpu-0.
        assert placed["ops/node-debugger"] == {"stock": "cpu-2", "reprieve": "cpu-0"}[side]
        assert placed["shop/web-2"] not in GPU_NODES
    stock = {s["pod"]: (s["node"], s["victims"]) for s in doc["steps"]["stock"]}
    ours = {s["pod"]: (s["node"], s["victims"]) for s in doc["steps"]["reprieve"]}
    # The first in the queue meets the dump as it is; train-any then finds gpu-h100-0 taken.
    assert stock["ml/train-h100"] == CHOICES["ml/train-h100"][0] and ours["ml/train-h100"] == CHOICES["ml/train-h100"][1]
    assert stock["ml/train-any"] == ours["ml/train-any"] == ("gpu-a100-0", ["ml/sweep-0"])
    assert doc["totals"]["stock"]["guaranteed_victims"] == 2 and doc["totals"]["reprieve"]["guaranteed_victims"] == 0
    assert err == f"reprieve: snapshot {DUMP}: left out pending Pods the scheduler would not queue: 1 scheduling-gated\n"


def test_pods_takes_a_full_dump_and_a_pod_in_both_is_replayed_once(capsys):
    doc, err = simulate(capsys, "--pods", str(DUMP))
    assert doc["input"]["pods"] == str(DUMP)
    own, _ = simulate(capsys)
    for side in ("stock", "reprieve"):
        # The same pods, in file order (namespace/name, as kubectl lists them) this time.
        assert [s["pod"] for s in doc["steps"][side]] == sorted(QUEUE)
    assert doc["workload"] == own["workload"]
    assert doc["totals"]["stock"] == own["totals"]["stock"]  # here the order does not change stock's outcome
    # reprieve's: in file order ops/node-debugger is bound before shop/web-2 preempts, so no
    # pending pod is left for the room cpu-0 would keep (policy.criteria.pending_room) and
    # reprieve takes report-2 on cpu-1; in queue order the debugger still waits for it.
    web = [next(s for s in d["steps"]["reprieve"] if s["pod"] == "shop/web-2") for d in (doc, own)]
    assert [(s["node"], s["victims"]) for s in web] == [("cpu-1", ["batch/report-2"]), ("cpu-0", ["batch/report-0"])]
    lines = err.splitlines()
    assert f"reprieve: --pods {DUMP}: left out Pods the scheduler would not queue: 8 bound to a node, 1 scheduling-gated" in lines
    assert f"reprieve: --pods {DUMP}: left out objects that are not Pods: 5 Node, 1 PodDisruptionBudget, 5 PriorityClass" in lines
    assert f"reprieve: --pods {DUMP}: 5 Pod(s) also pending in the snapshot: each is the same pod, replayed once" in lines


def test_the_pods_file_copy_of_a_snapshot_pod_is_the_one_replayed(capsys, tmp_path):
    # The same UID as the dump's ml/train-h100, now asking for an a100: it goes where its own
    # copy says, and is not also replayed (or left holding anything) as the snapshot's copy.
    changed = raw_pod("ml/train-h100")
    changed["spec"]["nodeSelector"] = {"accelerator": "a100"}
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(changed))
    doc, _ = simulate(capsys, "--pods", str(tmp_path / "pods.yaml"))
    for side in ("stock", "reprieve"):
        assert [(s["pod"], s["node"], s["victims"]) for s in doc["steps"][side]] == [("ml/train-h100", "gpu-a100-0", ["ml/sweep-0"])]


def test_a_pod_bound_in_the_snapshot_cannot_be_pending_in_pods(capsys, tmp_path):
    bound = raw_pod("ml/finetune-0")
    del bound["spec"]["nodeName"]
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(bound))
    code, out, err = cli.run(capsys, "simulate", "--snapshot", str(DUMP), "--pods", str(tmp_path / "pods.yaml"))
    assert (code, out) == (2, "")
    assert err.startswith("reprieve: --pods ") and err.count("\n") == 1
    assert "Pod ml/finetune-0: UID 00000000-0000-4000-9000-000000000001 is bound to gpu-h100-0 in the snapshot, not pending" in err


def test_a_dump_without_pending_pods_says_to_give_them(capsys):
    code, out, err = cli.run(capsys, "simulate", "--snapshot", "examples/workload/cluster.yaml")
    assert (code, out) == (2, "")
    assert err == "reprieve: snapshot examples/workload/cluster.yaml: no pending Pods to replay; give the queue with --pods FILE\n"


def test_what_the_pod_uses_that_reprieve_does_not_model_heads_the_report(capsys, tmp_path):
    pod = raw_pod("shop/web-2")
    pod["metadata"] = {"name": "web-3", "namespace": "shop"}
    pod["spec"]["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]
    pod["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname"}]}}
    (tmp_path / "web-3.yaml").write_text(yaml.safe_dump(pod))
    result = cli.report(capsys, "explain", "--snapshot", str(DUMP), "--pod", str(tmp_path / "web-3.yaml"))
    assert result["pod"]["unmodelled"] == ["inter-pod anti-affinity", "topology spread constraints"]
    code, out, _ = cli.run(capsys, "explain", "--snapshot", str(DUMP), "--pod", str(tmp_path / "web-3.yaml"))
    header = out.split("\n\n", 1)[0]
    assert "not modelled: inter-pod anti-affinity, topology spread constraints; the scheduler" in " ".join(header.split())
    assert max(len(line) for line in out.splitlines()) <= 80


def test_docs_simulate_shows_the_dump_run_as_it_prints(capsys):
    text = (ROOT / "docs" / "simulate.md").read_text()
    command = "reprieve simulate --snapshot examples/gpu/dump.yaml"
    pasted = text.split(f"$ {command}\n", 1)[1].split("\n```\n", 1)[0] + "\n"
    code, out, err = cli.run(capsys, "simulate", "--snapshot", "examples/gpu/dump.yaml")
    assert code == 0 and out == pasted
    assert " ".join(err.split()) in " ".join(text.split())  # the stderr line it quotes


def test_the_header_orders_pod_unmodelled_loaded_and_policy(capsys, tmp_path):
    # offline-a's "not modelled" line and offline-b's loaded and policy lines, in that order.
    pod = raw_pod("shop/web-2")
    pod["metadata"] = {"name": "web-3", "namespace": "shop"}
    pod["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]}}
    (tmp_path / "web-3.yaml").write_text(yaml.safe_dump(pod))
    code, out, _ = cli.run(capsys, "explain", "--snapshot", str(DUMP), "--pod", str(tmp_path / "web-3.yaml"))
    header = out.split("\n\n", 1)[0].splitlines()
    assert code == 0 and header[0] == "reprieve explain: shop/web-3 (pod)"
    starts = ("  not modelled: inter-pod affinity;", f"  snapshot {DUMP}: 5 nodes,", "  no policy file (Kubernetes rules only)")
    at = [next(i for i, line in enumerate(header) if line.startswith(start)) for start in starts]
    assert 2 <= at[0] < at[1] < at[2] == len(header) - 1


def test_the_dump_alone_names_what_its_loader_left_out_and_strict_stops(capsys, tmp_path):
    dump = tmp_path / "dump.yaml"
    dump.write_text(DUMP.read_text() + "\n---\nmetadata: {name: orphan}\n")
    code, out, err = cli.run(capsys, "simulate", "--snapshot", str(dump))
    assert code == 0 and out.splitlines()[1].startswith("5 nodes, 8 bound pods, 1 PDBs, 5 pending pods")
    assert err.splitlines() == [
        f"reprieve: {dump}: document 1 (orphan): left out: no kind, so reprieve cannot tell what it is",
        f"reprieve: snapshot {dump}: left out pending Pods the scheduler would not queue: 1 scheduling-gated",
    ]
    code, out, err = cli.run(capsys, "simulate", "--snapshot", str(dump), "--strict")
    assert (code, out) == (2, "")
    assert err == f"reprieve: {dump}: document 1 (orphan): left out: no kind, so reprieve cannot tell what it is; --strict makes each an error\n"
