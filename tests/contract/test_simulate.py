"""`reprieve simulate`: the table and JSON on the shipped workload, the README and
docs/quality.md staying true, every JSON field documented, and bad input.

The shipped workload's numbers are worked out in examples/workload/cluster.yaml's header and in
tests/unit/test_replay.py (one hand-built case per lane); here they are checked through the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from extender.commands import simulate
from policy import replay
from tests.contract import cli
from tests.conftest import ROOT

WORKLOAD = ("--snapshot", "examples/workload/cluster.yaml", "--pods", "examples/workload/pending.yaml")
DOCS = ROOT / "docs" / "simulate.md"


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # the documented commands use paths relative to the checkout


def run(capsys, *args: str) -> tuple[int, str, str]:
    return cli.run(capsys, "simulate", *args)


def report(capsys, *args: str) -> dict:
    return cli.report(capsys, "simulate", *args)


def test_shipped_workload_json_totals(capsys):
    doc = report(capsys, *WORKLOAD)
    assert doc["version"] == 1 and doc["kind"] == "simulate"
    assert doc["workload"] == {"nodes": 38, "bound_pods": 69, "pending_pods": 31, "budgets": 8, "priority_floor": 1}
    stock, mine, diff = doc["totals"]["stock"], doc["totals"]["reprieve"], doc["totals"]["difference"]
    # Lane q: 8 Guaranteed (stock) or Burstable (reprieve) victims; lane p: 7 Guaranteed db pods
    # behind a budget allowing none (stock) or 7 Burstable web pods within their allowance;
    # lane e: 16 Burstable (stock) or BestEffort (reprieve) victims. One victim per preemptor.
    # Work lost, at the dump's latest time: reprieve's Burstable victims in lane q and web pods
    # in lane p ran longer than stock's (the QoS classes and budgets rank first), its BestEffort
    # ones in lane e ask no cpu: 530 cpu-seconds against 320.
    assert stock == {"preemptions": 31, "victims": 31, "pdb_violations": 7, "jobs_failed": 0, "broken_gangs": 0, "members_stranded": 0, "managed_pods_lost": 0, "guaranteed_victims": 15,
                     "burstable_victims": 16, "priority_loss": 31, "priority_loss_stranded": 31, "no_home": 31, "retries_burned": 0, "room_wait_seconds": 31, "work_lost_cpu_seconds": 320,
                     "gpu_seconds_lost": 0, "cascade": 0, "pending": 0}
    assert mine == {"preemptions": 31, "victims": 31, "pdb_violations": 0, "jobs_failed": 0, "broken_gangs": 0, "members_stranded": 0, "managed_pods_lost": 0, "guaranteed_victims": 0,
                    "burstable_victims": 15, "priority_loss": 31, "priority_loss_stranded": 31, "no_home": 31, "retries_burned": 0, "room_wait_seconds": 31, "work_lost_cpu_seconds": 530,
                    "gpu_seconds_lost": 0, "cascade": 0, "pending": 0}
    assert doc["input"]["now"] == 1_795_168_820.0  # the dump's latest time, whenever it is replayed
    assert diff == {k: mine[k] - stock[k] for k in stock}
    steps = {side: {s["pod"]: s for s in doc["steps"][side]} for side in ("stock", "reprieve")}
    assert steps["stock"]["replay/urgent-p-08"]["victims"][0].startswith("replay/db-")
    assert steps["reprieve"]["replay/urgent-p-08"]["victims"][0].startswith("replay/web-")


def test_json_is_stable_and_sorted(capsys):
    args = ("--generate", "12", "--seed", "3", "--replace", "--output", "json")
    _, first, _ = run(capsys, *args)
    _, second, _ = run(capsys, *args)
    assert first == second
    assert first == json.dumps(json.loads(first), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_every_json_field_is_documented(capsys):
    docs = DOCS.read_text()
    found: set[str] = set()
    for args in (WORKLOAD, ("--generate", "12", "--seed", "3", "--replace")):
        found |= cli.json_keys(report(capsys, *args))
    missing = sorted(k for k in found if f"`{k}`" not in docs)
    assert not missing, f"not in docs/simulate.md: {missing}"


def test_replacements_show_in_the_steps(capsys):
    doc = report(capsys, "--generate", "12", "--seed", "3", "--replace")
    for side in ("stock", "reprieve"):
        steps = doc["steps"][side]
        replacements = [s for s in steps if s["depth"] > 0]
        assert replacements and all(s["pod"].endswith("-r") for s in replacements)
        assert len(steps) == doc["workload"]["pending_pods"] + len(replacements)


@pytest.mark.parametrize("args", [WORKLOAD, ("--generate", "40", "--seed", "123456789", "--replace")])
def test_table_fits_80_columns(capsys, args):
    code, out, _ = run(capsys, *args)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80, out


def _pasted(text: str, command: str) -> str:
    after = text.split(f"$ {command}\n", 1)[1]
    return after.split("\n```\n", 1)[0] + "\n"


def test_readme_shows_real_output(capsys):
    readme = (ROOT / "README.md").read_text()
    command = "reprieve simulate " + " ".join(WORKLOAD)
    pasted = _pasted(readme, ".venv/bin/" + command)
    _, out, _ = run(capsys, *WORKLOAD)
    assert out == pasted


def test_docs_quality_shows_what_its_commands_print(capsys):
    # make bench-quality writes docs/quality.md; the replay is deterministic, so it stays true.
    text = (ROOT / "docs" / "quality.md").read_text()
    commands = [line[2:] for line in text.splitlines() if line.startswith("$ reprieve simulate")]
    assert len(commands) == 3
    for command in commands:
        _, out, _ = run(capsys, *command.split()[2:])
        assert out == _pasted(text, command), command


def test_pods_as_json_and_single_documents_without_uids(capsys, tmp_path):
    pods = yaml.safe_load((ROOT / "examples/workload/pending.yaml").read_text())["items"][:2]
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": pods}))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    from_json = report(capsys, "--snapshot", WORKLOAD[1], "--pods", str(tmp_path / "pods.json"))
    from_yaml = report(capsys, "--snapshot", WORKLOAD[1], "--pods", str(tmp_path / "pods.yaml"))
    assert from_json["totals"] == from_yaml["totals"]
    assert from_json["totals"]["stock"]["guaranteed_victims"] == 2  # two lane-q preemptors
    assert [s["pod"] for s in from_json["steps"]["reprieve"]] == ["replay/urgent-q-00", "replay/urgent-q-01"]


BAD_FILES = {
    "bound.yaml": "kind: Pod\napiVersion: v1\nmetadata: {name: a}\nspec: {nodeName: q-00, containers: [{name: c}]}\n",
    "not-yaml.yaml": "kind: [unclosed\n",
    "node.yaml": "kind: Node\napiVersion: v1\nmetadata: {name: n}\n",
    "class.yaml": "kind: Pod\napiVersion: v1\nmetadata: {name: a}\nspec: {priorityClassName: gold, containers: [{name: c}]}\n",
    "twice.yaml": "kind: Pod\napiVersion: v1\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n---\n"
    "kind: Pod\napiVersion: v1\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n",
    "quantity.yaml": "kind: Pod\napiVersion: v1\nmetadata: {name: a}\nspec: {containers: [{name: c, resources: {requests: {cpu: fast}}}]}\n",
    "empty.yaml": "# nothing\n",
    "scalar.yaml": "7\n",
}

BAD = [
    pytest.param((), "give --snapshot (with --pods, or alone to replay its own pending pods), or --generate N", id="nothing"),
    pytest.param(("--pods", WORKLOAD[3]), "give --snapshot", id="pods-without-snapshot"),
    pytest.param(("--snapshot", WORKLOAD[1]), "no pending Pods to replay; give the queue with --pods FILE", id="snapshot-without-pending-pods"),
    pytest.param(("--generate", "5", "--snapshot", WORKLOAD[1]), "--generate makes its own cluster", id="generate-and-snapshot"),
    pytest.param(("--generate", "0"), "--generate must be at least 1", id="generate-zero"),
    pytest.param(("--snapshot", WORKLOAD[1], "--pods", "missing.yaml"), "--pods missing.yaml: cannot read", id="missing-pods"),
    pytest.param(
        ("--snapshot", WORKLOAD[1], "--pods", "{tmp}/bound.yaml"),
        "bound.yaml: no pending Pod objects (left out Pods the scheduler would not queue: 1 bound to a node)",
        id="only-a-bound-pod",
    ),
    pytest.param(("--snapshot", WORKLOAD[1], "--pods", "{tmp}/not-yaml.yaml"), "not valid YAML", id="not-yaml"),
    pytest.param(
        ("--snapshot", WORKLOAD[1], "--pods", "{tmp}/node.yaml"),
        "node.yaml: no pending Pod objects (left out objects that are not Pods: 1 Node)",
        id="only-another-kind",
    ),
    pytest.param(("--snapshot", WORKLOAD[1], "--pods", "{tmp}/scalar.yaml"), "document 0: expected a Kubernetes object, found int", id="not-an-object"),
    pytest.param(("--snapshot", WORKLOAD[1], "--pods", "{tmp}/class.yaml"), "no PriorityClass 'gold'", id="unknown-class"),
    pytest.param(("--snapshot", WORKLOAD[1], "--pods", "{tmp}/twice.yaml"), "document 1: Pod default/a: UID pending:default/a appears twice", id="twice"),
    pytest.param(("--snapshot", WORKLOAD[1], "--pods", "{tmp}/quantity.yaml"), "'fast' is not a quantity", id="bad-quantity"),
    pytest.param(("--snapshot", WORKLOAD[1], "--pods", "{tmp}/empty.yaml"), "no Pod objects", id="empty"),
    pytest.param(("--snapshot", "none.yaml", "--pods", WORKLOAD[3]), "cannot read snapshot none.yaml", id="missing-snapshot"),
    pytest.param((*WORKLOAD, "--shape", "gpu"), "--shape and --pressure shape a generated workload: give --generate N", id="shape-without-generate"),
    pytest.param(("--generate", "8", "--pressure", "0"), "--pressure must be above 0 and at most 10, not 0.0", id="pressure-zero"),
    pytest.param(("--generate", "8", "--pressure", "nan"), "--pressure must be above 0 and at most 10, not nan", id="pressure-nan"),
]


@pytest.mark.parametrize("args, message", BAD)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, args, message):
    for name, text in BAD_FILES.items():
        (tmp_path / name).write_text(text)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    code, out, err = run(capsys, *args)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("reprieve: "), err
    assert message in err.replace(str(tmp_path) + "/", ""), err


def test_real_exit_status():
    done = subprocess.run(
        [sys.executable, "-m", "extender.cli", "simulate", "--generate", "0"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == "reprieve: --generate must be at least 1, not 0"


@pytest.mark.parametrize(
    "container, message",
    [
        pytest.param("{name: c, resources: {requets: {cpu: '1'}}}", "spec.containers.0.resources.requets: unknown field (did you mean requests?)", id="typo"),
        pytest.param(
            "{name: c, resources: {limits: {nvidia.com/gpu: 0.5}}}",
            "spec.containers.0.resources.limits.nvidia.com/gpu: 0.5 must be a whole number (nvidia.com/gpu is an extended resource)", id="half-a-gpu",
        ),
    ],
)
def test_pending_pods_are_checked_as_the_api_server_would(capsys, tmp_path, container, message):
    pods = tmp_path / "pods.yaml"
    pods.write_text(f"kind: Pod\napiVersion: v1\nmetadata: {{name: a}}\nspec: {{containers: [{container}]}}\n")
    code, out, err = run(capsys, "--snapshot", WORKLOAD[1], "--pods", str(pods))
    assert (code, out) == (2, "")
    assert err == f"reprieve: --pods {pods}: document 0: {message}\n"


def test_items_left_out_of_the_snapshot_are_named_and_strict_stops(capsys, tmp_path):
    dump = tmp_path / "cluster.yaml"
    dump.write_text((ROOT / WORKLOAD[1]).read_text() + "\n---\nmetadata: {name: orphan}\n")
    code, out, err = run(capsys, "--snapshot", str(dump), "--pods", WORKLOAD[3])
    assert code == 0 and out.splitlines()[1].startswith("38 nodes, 69 bound pods")
    assert err == f"reprieve: {dump}: document 1 (orphan): left out: no kind, so reprieve cannot tell what it is\n"
    code, out, err = run(capsys, "--snapshot", str(dump), "--pods", WORKLOAD[3], "--strict")
    assert (code, out) == (2, "")
    assert err == f"reprieve: {dump}: document 1 (orphan): left out: no kind, so reprieve cannot tell what it is; --strict makes each an error\n"


@pytest.mark.parametrize(
    "seed, column, stock, reprieve",
    [
        pytest.param(30, "broken_gangs", 0, 1, id="seed-30-more-gangs"),
        pytest.param(11, "jobs_failed", 1, 2, id="seed-11-more-jobs-failed"),
        pytest.param(30, "jobs_failed", 0, 1, id="seed-30-more-jobs-failed"),
    ],
)
def test_docs_name_the_seeds_where_reprieve_breaks_more_gangs_or_fails_more_jobs(capsys, seed, column, stock, reprieve):
    # docs/simulate.md: of seeds 0-49, reprieve ends with more broken gangs on one, seed 30, and
    # more Jobs failed on two, seeds 11 and 30.
    totals = report(capsys, "--generate", "16", "--seed", str(seed))["totals"]
    assert (totals["stock"][column], totals["reprieve"][column]) == (stock, reprieve)
    assert f"seed {seed}: {stock} → {reprieve}" in " ".join(DOCS.read_text().split())
    assert "more on one (seed 30: 0 → 1)" in " ".join(DOCS.read_text().split())


def test_a_gpu_shaped_workload_under_pressure(capsys):
    doc = report(capsys, "--generate", "40", "--shape", "gpu", "--pressure", "1.3", "--placement", "most-allocated")
    assert doc["input"]["shape"] == "gpu" and doc["input"]["pressure"] == 1.3 and doc["input"]["placement"] == "most-allocated"
    assert doc["workload"]["bound_pods"] == 0 and doc["workload"]["pending_pods"] == 40  # tasks arrive onto an empty cluster
    stock = doc["totals"]["stock"]
    assert stock["preemptions"] > 0 and stock["pending"] > 0  # 30% more than fits: some preempt, some wait


def test_a_step_names_the_criterion_that_left_the_schedulers_pick(capsys):
    # examples/gpu/dump.yaml: stock evicts report-1 on cpu-1 for shop/web-2; reprieve evicts
    # report-0 on cpu-0, whose room left fits the pending ops/node-debugger (docs/policy.md).
    doc = report(capsys, "--snapshot", "examples/gpu/dump.yaml")
    stock = next(s for s in doc["steps"]["stock"] if s["pod"] == "shop/web-2")
    mine = next(s for s in doc["steps"]["reprieve"] if s["pod"] == "shop/web-2")
    assert (stock["node"], mine["node"]) == ("cpu-1", "cpu-0")
    assert mine["why"].endswith(
        "; over cpu-1, the scheduler's pick: decided by pending pods left without room: "
        "1 pending pod(s) without room on cpu-0 against 2 pending pod(s) without room on cpu-1"
    )


def test_a_steps_reason_shows_times_as_people_read_them():
    # policy writes times as seconds since the epoch (extender/times.py); a step's why is shown
    # as explain shows them.
    step = replay.Step("ns/p", 0, "n1", (), 0, (), "not chosen: start 1795168860s since the epoch here")
    assert simulate._step(step)["why"] == "not chosen: start 2026-11-20T10:01:00Z here"
