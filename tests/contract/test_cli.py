"""The command line itself: --version, what every --help says, short forms, hidden test flags,
where settings come from (serve's environment, not the offline commands'), and `make run PORT=`."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib

import pytest

from extender import cli, kubectl
from tests.conftest import EXAMPLE, ROOT
from tests.contract import cli as run_cli
from tests.ports import free_port

CHECKOUT = ROOT / "examples" / "pods" / "checkout-0.yaml"


def test_version_is_the_packages(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out == f"reprieve {declared}\n"


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    [action] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


FLAGS = [
    pytest.param(prog, name, command, id=f"{prog}-{name}")
    for prog, parser in (("reprieve", cli._parser()), ("kubectl-reprieve", kubectl._parser()))
    for name, command in subcommands(parser).items()
]


@pytest.mark.parametrize("prog, name, command", FLAGS)
def test_every_help_lists_choices_and_defaults(prog, name, command):
    text = " ".join(command.format_help().split())
    for action in command._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        flag = "/".join(action.option_strings) or action.dest
        assert action.help, f"{prog} {name} {flag}: no help"
        if action.choices:
            for choice in action.choices:
                assert str(choice) in text, f"{prog} {name} {flag}: choice {choice} not in --help"
        if action.default not in (None, False) and action.option_strings:
            shown = f"{action.default:g}" if isinstance(action.default, float) else str(action.default)
            assert f"default {shown}" in action.help, f"{prog} {name} {flag}: --help does not say the default {shown}"


def test_the_named_flags_say_choices_and_defaults():
    serve = " ".join(subcommands(cli._parser())["serve"].format_help().split())
    for expected in (
        "--mode {enforce,shadow}",
        "(default enforce; env REPRIEVE_MODE)",
        "--log-level {DEBUG,INFO,WARNING,ERROR}",
        "(default INFO; env REPRIEVE_LOG_LEVEL)",
        "(default 127.0.0.1:8888; env REPRIEVE_BIND)",
        "(default 4)",
        "(default 5)",
    ):
        assert expected in serve
    for name in ("explain", "simulate"):
        assert "-o {table,json}, --output {table,json} table (80 columns) or json (default table)" in " ".join(
            subcommands(cli._parser())[name].format_help().split()
        )


def test_the_test_only_flag_is_hidden_but_works():
    serve = subcommands(cli._parser())["serve"]
    assert "fault-watch-delay" not in serve.format_help()
    assert cli._parser().parse_args(["serve", "--fault-watch-delay", "1.5"]).fault_watch_delay == 1.5


@pytest.mark.parametrize("command, args", [("explain", ("--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT))), ("simulate", ("--generate", "3"))])
def test_o_is_output_everywhere(capsys, command, args):
    long = run_cli.run(capsys, command, *args, "--output", "json")
    short = run_cli.run(capsys, command, *args, "-o", "json")
    assert long == short and long[0] == 0
    json.loads(short[1])


def test_make_run_takes_a_port():
    def dry(*args: str) -> str:
        return subprocess.run(["make", "-n", "run", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout

    assert "serve --snapshot examples/cluster.yaml --bind 127.0.0.1:9123" in dry("PORT=9123")
    assert "--bind 127.0.0.1:8888" in dry()


# Where settings come from.


def test_explain_ignores_the_environment_and_says_so(capsys, monkeypatch):
    args = ("--snapshot", str(EXAMPLE), "--pod", str(CHECKOUT))
    plain = run_cli.report(capsys, "explain", *args)
    monkeypatch.setenv("REPRIEVE_POLICY", str(ROOT / "examples" / "policy.yaml"))
    monkeypatch.setenv("REPRIEVE_SNAPSHOT", str(EXAMPLE))
    code, out, err = run_cli.run(capsys, "explain", *args, "-o", "json")
    assert code == 0 and json.loads(out) == plain  # the policy would change the answer (test_explain)
    assert json.loads(out)["input"]["policy"] is None
    assert err.splitlines() == [
        "reprieve: note: REPRIEVE_POLICY is set but not used: only serve reads the environment; give --policy to use it",
    ]  # REPRIEVE_SNAPSHOT: --snapshot is given
    code, _, err = run_cli.run(capsys, "explain", "--pod", str(CHECKOUT))
    assert code == 2 and "REPRIEVE_SNAPSHOT is set but not used" in err and "explain needs --snapshot PATH" in err


def test_serve_reads_the_environment_and_logs_what_it_took(monkeypatch, caplog):
    monkeypatch.setenv("REPRIEVE_MODE", "shadow")
    monkeypatch.setenv("REPRIEVE_BIND", "127.0.0.1:1")
    monkeypatch.setenv("REPRIEVE_SNAPSHOT", str(EXAMPLE))
    args = cli._parser().parse_args(["serve", "--bind", "127.0.0.1:2", "--kubeconfig", "kc"])
    assert args.mode == "shadow"
    assert cli._environment(args) == [
        "REPRIEVE_SNAPSHOT=" + str(EXAMPLE) + " (overridden by its flag)",
        "REPRIEVE_BIND=127.0.0.1:1 (overridden by its flag)",
        "REPRIEVE_MODE=shadow",
    ]
    assert args.snapshot is None  # --kubeconfig wins over the environment's snapshot


def serve(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "extender.cli", "serve", *args, "--bind", f"127.0.0.1:{free_port()}"],
        capture_output=True, text=True, timeout=timeout,
    )


def test_serve_refuses_an_empty_dump(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    done = serve("--snapshot", str(empty))
    assert done.returncode == 2
    assert done.stderr.strip().endswith(f"reprieve: snapshot {empty} has no nodes, so there is nothing to decide on "
                                        "(a dump is what kubectl get nodes,pods,pdb,priorityclasses,jobs -A -o yaml prints)")


def test_serve_strict_stops_on_an_item_left_out(tmp_path):
    dump = tmp_path / "dump.yaml"
    dump.write_text(EXAMPLE.read_text() + "\n---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n")
    done = serve("--snapshot", str(dump), "--strict")
    assert done.returncode == 2
    assert f"reprieve: {dump}: document 1 (Service shop/web): left out: reprieve does not read kind Service" in done.stderr
    assert done.stderr.rstrip().endswith("--strict makes each an error")


def test_serve_names_an_item_left_out_and_serves(tmp_path):
    dump = tmp_path / "dump.yaml"
    dump.write_text(EXAMPLE.read_text() + "\n---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "extender.cli", "serve", "--snapshot", str(dump), "--bind", f"127.0.0.1:{free_port()}"],
        stderr=subprocess.PIPE, text=True,
    )
    try:
        lines = []
        for line in proc.stderr:
            lines.append(json.loads(line))
            if lines[-1]["msg"].startswith("listening on"):
                break
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    [warning] = [entry for entry in lines if entry["level"] == "warning"]
    assert warning["msg"].startswith(f"{dump}: document 1 (Service shop/web): left out: reprieve does not read kind Service")
    assert warning["time"].endswith("Z")
    [serving] = [entry for entry in lines if entry["msg"].startswith("serving on")]
    assert serving["msg"].endswith(f"{dump}: 4 nodes, 13 pods, 2 PDBs; 1 item(s) left out, each named above")


def test_simulate_notes_an_unused_environment_in_plain_text(capsys, monkeypatch):
    monkeypatch.setenv("REPRIEVE_POLICY", "unused.yaml")
    code, out, err = run_cli.run(capsys, "simulate", "--generate", "3")
    assert code == 0 and out.startswith("generated workload")
    # simulate takes --policy (reprieve's side decides under it), so the note says to give it.
    assert err == "reprieve: note: REPRIEVE_POLICY is set but not used: only serve reads the environment; give --policy to use it\n"


def test_check_policy_strict_too(capsys, tmp_path):
    dump = tmp_path / "dump.yaml"
    dump.write_text(EXAMPLE.read_text() + "\n---\nmetadata: {name: orphan}\n")
    policy = str(ROOT / "examples" / "policy.yaml")
    code, out, err = run_cli.run(capsys, "check-policy", policy, "--snapshot", str(dump))
    assert code == 0 and out.startswith("policy valid")
    assert err == f"reprieve: {dump}: document 1 (orphan): left out: no kind, so reprieve cannot tell what it is\n"
    code, out, err = run_cli.run(capsys, "check-policy", policy, "--snapshot", str(dump), "--strict")
    assert (code, out) == (2, "") and err.endswith("--strict makes each an error\n")
