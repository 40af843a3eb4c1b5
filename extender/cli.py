"""The ``reprieve`` command."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from extender import logs
from extender.config import Settings
from extender.errors import ReprieveError

log = logging.getLogger("reprieve")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reprieve", description="A kinder, smarter kube-scheduler preemption extender.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="answer the scheduler's filter, prioritize and preempt calls")
    serve.add_argument(
        "--snapshot",
        default=os.environ.get("REPRIEVE_SNAPSHOT"),
        help="cluster dump to decide from (kubectl get nodes,pods,pdb,priorityclasses -A -o yaml); env REPRIEVE_SNAPSHOT",
    )
    serve.add_argument(
        "--bind", default=os.environ.get("REPRIEVE_BIND", Settings.bind), help="HOST:PORT to listen on; env REPRIEVE_BIND"
    )
    serve.add_argument("--threads", type=int, default=Settings.threads, help="request threads in the one worker process")
    serve.add_argument("--log-level", default=os.environ.get("REPRIEVE_LOG_LEVEL", Settings.log_level))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logs.configure(args.log_level)
    try:
        return _serve(args)
    except ReprieveError as exc:
        print(f"reprieve: {exc}", file=sys.stderr)
        return 2


def _serve(args: argparse.Namespace) -> int:
    from extender import snapshot
    from extender.app import create_app
    from extender.cluster import StaticCluster
    from extender.errors import ConfigError
    from extender.server import Server

    if not args.snapshot:
        raise ConfigError("serve needs --snapshot PATH (a kubectl dump of nodes, pods, pdb and priorityclasses)")
    if args.threads < 1:
        raise ConfigError(f"--threads must be at least 1, not {args.threads}")
    settings = Settings(bind=args.bind, threads=args.threads, log_level=args.log_level)
    # Load before gunicorn starts so that a bad snapshot stops startup with its message.
    cluster = StaticCluster(snapshot.load(args.snapshot), source=args.snapshot)
    log.info("serving on %s from %s", settings.bind, cluster.describe())
    Server(lambda: create_app(settings, cluster=cluster), bind=settings.bind, threads=settings.threads).run()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
