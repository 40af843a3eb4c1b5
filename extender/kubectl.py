"""The ``kubectl-reprieve`` plugin: ``kubectl reprieve explain|check-policy`` on the cluster of
the current kubeconfig context.

kubectl runs any executable named ``kubectl-reprieve`` on PATH for ``kubectl reprieve ...``,
passing the rest of the command line. This is a thin front: it finds the kubeconfig, context
and namespace as kubectl does and runs the same ``reprieve explain --kubeconfig`` and
``reprieve check-policy --kubeconfig`` (extender.cli).
"""

from __future__ import annotations

import argparse
import sys

from extender import cli
from extender.commands import cluster
from extender.errors import ReprieveError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubectl reprieve",
        description="reprieve's preemption decisions on the cluster of the current kubeconfig context.",
    )
    parser.add_argument("--version", action="version", version=f"kubectl-reprieve {cli.version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    explain = commands.add_parser(
        "explain", help="what reprieve and stock preemption decide for a pending pod (docs/explain.md)"
    )
    explain.add_argument("pod", metavar="[NAMESPACE/]POD", help="the pending pod")
    explain.add_argument("-n", "--namespace", metavar="NAMESPACE", help="the pod's namespace (default: the context's, else default)")
    explain.add_argument("--nodes", metavar="A,B", help="only these nodes, comma-separated (default: every node)")
    explain.add_argument("--policy", metavar="PATH", help="multi-tenant preemption rules and the ranking's order (docs/policy.md)")
    explain.add_argument(
        "-o", "--output", choices=cli.OUTPUTS, default=cli.OUTPUTS[0], help="table (80 columns) or json (default table)"
    )
    _kube_flags(explain)
    check = commands.add_parser("check-policy", help="validate a policy file against the cluster's queues")
    check.add_argument("policy", metavar="FILE", help="the policy file (see docs/policy.md)")
    _kube_flags(check)
    return parser


def _kube_flags(command: argparse.ArgumentParser) -> None:
    command.add_argument("--kubeconfig", metavar="PATH", help="the kubeconfig (default: $KUBECONFIG, else ~/.kube/config)")
    command.add_argument("--context", metavar="NAME", help="the kubeconfig context (default: its current-context)")


def reprieve_args(args: argparse.Namespace) -> list[str]:
    """The ``reprieve`` command line that does what ``kubectl reprieve`` was asked."""
    kubeconfig = cluster.kubeconfig_path(args.kubeconfig)
    live = ["--kubeconfig", kubeconfig] + (["--context", args.context] if args.context else [])
    if args.command == "check-policy":
        return ["check-policy", args.policy, *live]
    argv = ["explain", *live, "--pod", _pod_key(args, kubeconfig), "--output", args.output]
    if args.nodes is not None:
        argv += ["--nodes", args.nodes]
    if args.policy is not None:
        argv += ["--policy", args.policy]
    return argv


def _pod_key(args: argparse.Namespace, kubeconfig: str) -> str:
    namespace, _, name = args.pod.rpartition("/")
    if namespace and args.namespace and namespace != args.namespace:
        raise ReprieveError(f"{args.pod}: namespace {namespace} contradicts --namespace {args.namespace}")
    if not name or "/" in namespace:
        raise ReprieveError(f"{args.pod}: expected POD or NAMESPACE/POD")
    namespace = namespace or args.namespace or cluster.context_of(kubeconfig, args.context)["context"].get("namespace") or "default"
    return f"{namespace}/{name}"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        translated = reprieve_args(args)
    except ReprieveError as exc:
        print(f"kubectl reprieve: {exc}", file=sys.stderr)
        return 2
    return cli.main(translated)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
