"""`kubectl reprieve`: the kubeconfig, context and namespace found as kubectl finds them, and the
`reprieve` command line each invocation becomes (tests/e2e/test_kubectl.py runs it for real)."""

from __future__ import annotations

import pytest
import yaml

from extender import kubectl
from extender.cli import main as reprieve
from extender.commands import cluster

CONTEXTS = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [{"name": "u", "user": {"token": "t"}}],
    "contexts": [
        {"name": "dev", "context": {"cluster": "c", "user": "u", "namespace": "team-a"}},
        {"name": "prod", "context": {"cluster": "c", "user": "u"}},
    ],
    "current-context": "dev",
}


@pytest.fixture
def kubeconfig(tmp_path, monkeypatch):
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(CONTEXTS))
    monkeypatch.setenv("KUBECONFIG", str(path))
    return str(path)


def translate(*argv: str) -> list[str]:
    return kubectl.reprieve_args(kubectl._parser().parse_args(list(argv)))


def test_kubeconfig_is_the_flag_else_KUBECONFIG_else_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    assert cluster.kubeconfig_path() == str(tmp_path / ".kube" / "config")
    monkeypatch.setenv("KUBECONFIG", "/a:/b")
    assert cluster.kubeconfig_path() == "/a:/b"  # the kubernetes client merges the list, as kubectl does
    assert cluster.kubeconfig_path("/flag") == "/flag"


@pytest.mark.parametrize(
    "argv, pod",
    [
        pytest.param(("explain", "shop/web-0"), "shop/web-0", id="namespace-in-the-name"),
        pytest.param(("explain", "web-0"), "team-a/web-0", id="the-current-context's-namespace"),
        pytest.param(("explain", "web-0", "--context", "prod"), "default/web-0", id="a-context-without-one-means-default"),
        pytest.param(("explain", "web-0", "-n", "shop"), "shop/web-0", id="namespace-flag"),
        pytest.param(("explain", "shop/web-0", "-n", "shop"), "shop/web-0", id="both-agreeing"),
    ],
)
def test_explain_becomes_reprieve_explain_on_the_live_cluster(kubeconfig, argv, pod):
    argv_out = translate(*argv)
    assert argv_out[:3] == ["explain", "--kubeconfig", kubeconfig]
    assert argv_out[argv_out.index("--pod") + 1] == pod
    assert ("--context" in argv_out) == ("--context" in argv)


def test_explain_passes_nodes_policy_and_output(kubeconfig):
    assert translate("explain", "a/b", "--nodes", "n1,n2", "--policy", "p.yaml", "-o", "json") == [
        "explain", "--kubeconfig", kubeconfig, "--pod", "a/b", "--output", "json", "--nodes", "n1,n2", "--policy", "p.yaml",
    ]


def test_check_policy_becomes_reprieve_check_policy(kubeconfig):
    assert translate("check-policy", "p.yaml", "--context", "prod") == [
        "check-policy", "p.yaml", "--kubeconfig", kubeconfig, "--context", "prod",
    ]


@pytest.mark.parametrize(
    "argv, message",
    [
        pytest.param(("explain", "shop/web-0", "-n", "other"), "kubectl reprieve: shop/web-0: namespace shop contradicts --namespace other", id="two-namespaces"),
        pytest.param(("explain", "a/b/c"), "kubectl reprieve: a/b/c: expected POD or NAMESPACE/POD", id="too-many-slashes"),
        pytest.param(("explain", "web-0", "--context", "stage"), "no context 'stage' (it has dev, prod)", id="unknown-context"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(kubeconfig, capsys, argv, message):
    assert kubectl.main(list(argv)) == 2
    assert message in capsys.readouterr().err


def test_a_missing_kubeconfig_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    assert kubectl.main(["explain", "web-0"]) == 2
    assert f"kubeconfig {tmp_path / 'none'}:" in capsys.readouterr().err


def test_no_current_context(tmp_path, capsys, monkeypatch):
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump({**CONTEXTS, "current-context": ""}))
    monkeypatch.setenv("KUBECONFIG", str(path))
    assert kubectl.main(["explain", "web-0"]) == 2
    assert "(is current-context set? --context names one)" in capsys.readouterr().err


def test_reprieve_explain_needs_a_cluster_and_context_goes_with_kubeconfig(capsys):
    assert reprieve(["explain", "--pod", "a/b"]) == 2
    assert "explain needs --snapshot PATH, or --kubeconfig PATH and/or --context NAME" in capsys.readouterr().err
    assert reprieve(["explain", "--snapshot", "examples/cluster.yaml", "--context", "x", "--pod", "a/b"]) == 2
    assert "--context goes with --kubeconfig, not --snapshot" in capsys.readouterr().err


def test_an_unreachable_server_fails_at_once(kubeconfig, capsys):
    # The context's server is 127.0.0.1:1: the probe list fails now, not after the cache's timeout.
    assert reprieve(["explain", "--kubeconfig", kubeconfig, "--pod", "a/b"]) == 2
    assert "context dev (https://127.0.0.1:1): cannot reach the API server" in capsys.readouterr().err
