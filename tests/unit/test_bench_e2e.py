"""The end-to-end benchmark's own parts that need no control plane: the do-nothing extenders'
answers (they must be valid answers the scheduler accepts, or the floor it measures is wrong),
the scheduler configurations it writes per stanza, and the profile summary."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import urllib.request
from pathlib import Path

import orjson
import pytest
import yaml

from tests.e2e.client import wait_for
from tests.e2e.controlplane import port_in_use
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    """A bench script as a module, without putting bench/ on sys.path (its names are generic)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


e2e = _load("e2e")
noop_extender = _load("noop_extender")


def test_noop_filter_passes_every_node_it_was_sent():
    client = noop_extender.create_app().test_client()
    body = {"Pod": {"metadata": {"name": "p"}}, "NodeNames": ["a", "b"], "Nodes": None}
    answer = orjson.loads(client.post("/filter", data=orjson.dumps(body)).data)
    assert answer["NodeNames"] == ["a", "b"]
    assert answer["FailedNodes"] == {} and answer["FailedAndUnresolvableNodes"] == {} and answer["Error"] == ""


def test_noop_prioritize_scores_nothing_and_preempt_echoes_the_proposal():
    client = noop_extender.create_app().test_client()
    assert client.post("/prioritize", data=b'{"Pod":{},"NodeNames":["a"]}').data == b"[]"
    proposal = {"n1": {"Pods": [{"UID": "u1"}, {"UID": "u2"}], "NumPDBViolations": 1}}
    answer = orjson.loads(client.post("/preempt", data=orjson.dumps({"Pod": {}, "NodeNameToMetaVictims": proposal})).data)
    assert answer == {"NodeNameToMetaVictims": proposal}
    whole = {"n1": {"Pods": [{"metadata": {"uid": "u1"}}], "NumPDBViolations": 0}}
    answer = orjson.loads(client.post("/preempt", data=orjson.dumps({"Pod": {}, "NodeNameToVictims": whole})).data)
    assert answer == {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "u1"}], "NumPDBViolations": 0}}}


def test_noop_answers_take_what_the_server_passes():
    # reprieve's server calls a verb's answer with when the request arrived and whether its
    # caller has gone (extender/serving/connection.py); an answer without them failed every call.
    from extender.serving.connection import INLINE_BYTES

    proposal = orjson.dumps({"Pod": {}, "NodeNameToMetaVictims": {"n1": {"Pods": [], "NumPDBViolations": 0}}})
    for path, body in (("/filter", b'{"Pod":{},"NodeNames":["a"]}'), ("/prioritize", b"{}"), ("/preempt", proposal)):
        assert len(body) <= INLINE_BYTES  # answered inline, through ANSWERS
        status, _ = noop_extender.ANSWERS[path](body, arrived=0.0, closed=lambda: False)
        assert status == 200, path


def test_the_go_noop_answers_as_the_python_one(tmp_path):
    # The floor in Go (--floors): valid answers, the same as noop_extender's, or it measures
    # nothing. Needs go, as the end-to-end toolchain does.
    binary = e2e.build_noop_go(tmp_path / "noop-go")
    port = free_port()
    server = subprocess.Popen([str(binary), "--bind", f"127.0.0.1:{port}"])

    def post(path: str, body: dict) -> object:
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=orjson.dumps(body), method="POST")
        with urllib.request.urlopen(request, timeout=5) as response:
            return orjson.loads(response.read())

    def listening() -> bool:
        assert server.poll() is None, f"the Go noop exited with {server.returncode}"
        return port_in_use(port)

    try:
        wait_for("the Go noop to listen", listening, 30, interval=0.05)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            assert response.status == 200  # what e2e.py waits for
        python = noop_extender.create_app().test_client()
        proposal = {"n1": {"Pods": [{"UID": "u1"}, {"UID": "u2"}], "NumPDBViolations": 1}}
        whole = {"n1": {"Pods": [{"metadata": {"uid": "u1"}}], "NumPDBViolations": 2}}
        bodies = [
            ("/filter", {"Pod": {"metadata": {"name": "p"}}, "NodeNames": ["a", "b"], "Nodes": None}),
            ("/filter", {"Pod": {}, "NodeNames": None, "Nodes": {"items": [{"metadata": {"name": "a"}}]}}),
            ("/prioritize", {"Pod": {}, "NodeNames": ["a"]}),
            ("/preempt", {"Pod": {}, "NodeNameToMetaVictims": proposal}),
            ("/preempt", {"Pod": {}, "NodeNameToMetaVictims": None, "NodeNameToVictims": whole}),  # nodeCacheCapable: false
        ]
        for path, body in bodies:
            expected = orjson.loads(python.post(path, data=orjson.dumps(body)).data)
            assert post(path, body) == expected, path
            if path != "/prioritize":  # the same under /scores/
                assert post("/scores" + path, body) == expected, path
        # Under /scores/, prioritize scores every node it was sent 0.
        assert post("/scores/prioritize", {"Pod": {}, "NodeNames": ["a", "b"]}) == [{"Host": "a", "Score": 0}, {"Host": "b", "Score": 0}]
    finally:
        server.kill()
        server.wait()


def test_each_stanza_names_exactly_its_verbs(tmp_path):
    plane = e2e.BenchPlane(tmp_path, tmp_path)
    plane.extender_ports = {"reprieve": plane.reprieve_port, "noop": 12345, "noop-go": 23456}
    for config in e2e.configs(list(e2e.STANZAS)) + e2e.FLOORS:
        written = yaml.safe_load(plane.bench_scheduler_config(config, "bench-scheduler").read_text())
        assert written["clientConnection"]["qps"] == 1000
        if config.extender is None:
            assert "extenders" not in written
            continue
        (stanza,) = written["extenders"]
        verbs = {k[: -len("Verb")] for k in stanza if k.endswith("Verb")}
        assert verbs == set(config.verbs), config
        port = {"reprieve": plane.reprieve_port, "noop": 12345, "noop-go": 23456}[config.extender]
        assert stanza["urlPrefix"] == f"http://127.0.0.1:{port}{config.path}"
        assert stanza["nodeCacheCapable"] is True  # the rest as shipped
        if "prioritize" in config.verbs:  # kube-scheduler refuses a prioritizeVerb without a weight
            assert stanza["weight"] >= 1, config


def test_profile_summary_splits_samples_by_role():
    raw = "\n".join(
        [
            "thread (1): reflector-pods;run (/x/extender/live/reflector.py:50);loads (/x/orjson.py:1) 30",
            "thread (2): publisher;_publish_loop (/x/extender/live/cache.py:150) 10",
            "thread (3): ThreadPoolExecutor-0_0;handle (/x/extender/serving/wsgi.py:1);handle (/x/extender/serving/verbs/filter.py:13) 40",
            "thread (3): ThreadPoolExecutor-0_0;handle (/x/extender/serving/wsgi.py:1);dumps (/x/flask/app.py:1) 20",
        ]
    )
    result = e2e.Result("reprieve/full", "basic", "before", 10, 10, 1.0, 9.0, 0, 0, 1.0, 10, 0.01, 0, 0.01, 0.5)
    summary = e2e.summarize_profile(raw, result)
    assert summary.startswith("100 samples")
    for role, share in (("watch: reflector", "30%"), ("watch: publisher", "10%"), ("verb: filter", "40%"), ("http:", "20%")):
        assert any(line.startswith(f"| {role}") and line.endswith(f"| {share} |") for line in summary.splitlines()), role


def test_churn_percentiles_stay_within_what_was_measured():
    # statistics.quantiles' default (exclusive) puts the p90 of two values above the larger.
    churn = _load("churn")
    result = churn.Churn(
        scheduler=churn.REPRIEVE, to_bind={"high-000": 1.0, "high-001": 2.0}, unbound=["high-002"],
        preempted={"high-001"}, preemptions=1, deletions=2, claims=0, low_created=30,
    )
    assert result.row() == "| reprieve | 2 of 3 | 1.50 / 1.90 / 2.00 | 1 | 2.00 / 2.00 / 2.00 | 1 | 2 | 0 | 30 |"


def test_churn_raises_a_failed_call_as_soon_as_it_is_done():
    churn = _load("churn")
    from concurrent.futures import Future

    done, failed, pending = Future(), Future(), Future()
    done.set_result(None)
    failed.set_exception(RuntimeError("403 from the API server"))
    assert churn._unfinished([done, pending]) == [pending]
    with pytest.raises(RuntimeError, match="403"):
        churn._unfinished([done, failed, pending])


def test_burst_sums_the_schedulers_time_over_labels_and_only_postfilter():
    burst = _load("burst")
    text = "\n".join([
        "# HELP scheduler_scheduling_algorithm_duration_seconds [ALPHA] Scheduling algorithm latency in seconds",
        "scheduler_scheduling_algorithm_duration_seconds_bucket{le=\"0.001\"} 3",
        "scheduler_scheduling_algorithm_duration_seconds_sum 2.5",
        "scheduler_scheduling_algorithm_duration_seconds_count 40",
        'scheduler_framework_extension_point_duration_seconds_sum{extension_point="PostFilter",profile="a",status="Success"} 1.25',
        'scheduler_framework_extension_point_duration_seconds_sum{extension_point="PostFilter",profile="a",status="Unschedulable"} 0.25',
        'scheduler_framework_extension_point_duration_seconds_sum{extension_point="PodGroupPostFilter",profile="a",status="Success"} 9',
        'scheduler_framework_extension_point_duration_seconds_sum{extension_point="Filter",profile="a",status="Success"} 7',
    ])
    assert burst.sums(text) == {"algorithm": 2.5, "cycles": 40, "postfilter": 1.5}
