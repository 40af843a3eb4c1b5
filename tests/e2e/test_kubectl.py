"""`kubectl reprieve` against the live control plane: the plugin as a command of its own, and
through real kubectl plugin discovery (kubectl of the pinned release, built by tests/e2e/toolchain/build.sh).

The cluster: n1 (4 cpu) runs two equal-priority 2-cpu pods, the Burstable one older; n2
(4 cpu) one pod behind a budget that allows no disruption. A pending priority-10 pod needs 2
cpu. Stock preemption would evict the younger Guaranteed pod on n1 (start time is its only
tie-break; n2 costs a PDB violation); reprieve evicts the Burstable one there. The pod explained
stays pending (no scheduler serves its schedulerName); a twin through reprieve-scheduler then
shows the real decision is the one explain printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.scenario import REPRIEVE

POLICY = Path(__file__).with_name("queues-policy.yaml")
NOBODY = "e2e-unserved-scheduler"  # keeps the explained pod pending


@pytest.fixture
def staged(scenario):
    n1, n2 = scenario.node("n1", cpu="4"), scenario.node("n2", cpu="4")
    scenario.qos_tie(n1)
    scenario.pod("protected", cpu="4", priority=1, node=n2, labels={"app": "db"})
    scenario.running("protected")
    scenario.pdb("db", match={"app": "db"}, min_available=1)
    scenario.pdb_ready("db", allowed=0, healthy=1)
    scenario.pod("urgent", cpu="2", priority=10, scheduler=NOBODY)
    return scenario, n1, n2


def plugin_env(plane, tmp_path: Path) -> dict[str, str]:
    """As an operator's shell: KUBECONFIG set, the plugin and kubectl on PATH, a HOME of its own."""
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "kubectl-reprieve").is_file(), "the kubectl-reprieve console script is not installed"
    path = os.pathsep.join([str(bin_dir), str(plane.bin), os.environ.get("PATH", "")])
    return {**os.environ, "KUBECONFIG": str(plane.kubeconfig), "PATH": path, "HOME": str(tmp_path)}


def run(argv: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stderr}"
    return done.stdout


def names(victims) -> list[str]:
    return [v["name"] for v in victims]


def test_kubectl_reprieve_explain_names_the_node_and_victims_reprieve_then_takes(staged, tmp_path, record_property):
    scenario, n1, n2 = staged
    ns, env = scenario.ns, plugin_env(scenario.plane, tmp_path)

    report = json.loads(run(["kubectl-reprieve", "explain", f"{ns}/urgent", "-o", "json"], env))
    assert report["input"]["snapshot"] is None
    assert report["input"]["cluster"].startswith("context e2e (https://127.0.0.1:")
    assert report["input"]["pod"] == f"{ns}/urgent"
    stock, ours = report["preemption"]["stock"], report["preemption"]["reprieve"]
    assert report["preemption"]["fits"] == []
    assert (stock["chosen"], names(stock["victims"])) == (n1, [f"{ns}/guaranteed"])
    assert (ours["chosen"], names(ours["victims"])) == (n1, [f"{ns}/burstable"])
    n2_row = next(r for r in report["nodes"] if r["name"] == n2)
    assert n2_row["stock"]["pdb_violations"] == 1

    # The same through kubectl's own plugin discovery, namespace by flag, as a table.
    assert "kubectl-reprieve" in run(["kubectl", "plugin", "list"], env)
    printed = run(["kubectl", "reprieve", "explain", "urgent", "-n", ns], env)
    record_property("table", printed)  # docs/explain.md pastes it
    table = " ".join(printed.split())
    assert f"reprieve explain: {ns}/urgent (pod)" in table
    assert "live: context e2e (https://127.0.0.1:" in table
    assert f"Stock kube-scheduler: preempts on {n1}, evicting {ns}/guaranteed" in table
    assert f"reprieve: preempts on {n1}, evicting {ns}/burstable *" in table
    assert (
        f"* {n1}: reprieve evicts {ns}/burstable instead of {ns}/guaranteed, decided by Guaranteed victims: 0 against 1"
    ) in table
    row = next(r for r in report["nodes"] if r["name"] == n1)
    assert row["decided_by"] == {"criterion": "Guaranteed victims", "field": "guaranteed", "reprieve": 0, "stock": 1}

    # What explain printed is what reprieve decides when the real scheduler asks.
    scenario.synced()
    scenario.pod("urgent-twin", cpu="2", priority=10, scheduler=REPRIEVE)
    assert scenario.running("urgent-twin") == ours["chosen"]
    scenario.gone("burstable")
    assert not scenario.terminating("guaranteed") and not scenario.terminating("protected")


def test_kubectl_reprieve_check_policy_and_bad_input(scenario, tmp_path):
    n1 = scenario.node("n1", cpu="6")
    scenario.pod("prod-0", cpu="1", priority=100, node=n1, labels={"e2e/queue": "prod"})
    scenario.running("prod-0")
    env = plugin_env(scenario.plane, tmp_path)
    out = run(["kubectl", "reprieve", "check-policy", str(POLICY)], env)
    blocks = {b.strip().splitlines()[0].strip(): b for b in out.split("\n\n")}
    assert "usage     cpu=1 memory=100Mi pods=1" in blocks["queue prod (in org)"]

    # A pod that is not there, and a context the kubeconfig does not have: one line, exit 2.
    missing = subprocess.run(["kubectl", "reprieve", "explain", f"{scenario.ns}/nope"], capture_output=True, text=True, env=env, timeout=120)
    assert missing.returncode == 2
    assert f"no pod {scenario.ns}/nope in the cluster" in missing.stderr
    wrong = subprocess.run(["kubectl-reprieve", "explain", "x/y", "--context", "prod"], capture_output=True, text=True, env=env, timeout=60)
    assert wrong.returncode == 2
    assert wrong.stderr.strip() == f"reprieve: kubeconfig {scenario.plane.kubeconfig}: no context 'prod' (it has e2e)"
