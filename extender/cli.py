"""The ``reprieve`` command."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
import threading

from extender.serving import logs
from extender.stall import Stall
from extender.config import Events, Mode, Settings
from extender.errors import ConfigError, ReprieveError

log = logging.getLogger("reprieve")


# serve's environment fallbacks: flag destination -> variable. Only serve reads them (a
# container's settings); the offline commands take their inputs from their flags alone, so a
# run is what its command line says (docs/running.md).
SERVE_ENV = {
    "snapshot": "REPRIEVE_SNAPSHOT",
    "bind": "REPRIEVE_BIND",
    "tls_cert_file": "REPRIEVE_TLS_CERT_FILE",
    "tls_private_key_file": "REPRIEVE_TLS_PRIVATE_KEY_FILE",
    "client_ca_file": "REPRIEVE_CLIENT_CA_FILE",
    "plain_bind": "REPRIEVE_PLAIN_BIND",
    "mode": "REPRIEVE_MODE",
    "policy": "REPRIEVE_POLICY",
    "events": "REPRIEVE_EVENTS",
    "log_level": "REPRIEVE_LOG_LEVEL",
}
OUTPUTS = ("table", "json")


def version() -> str:
    from importlib import metadata

    try:
        return metadata.version("reprieve")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reprieve", description="A kinder, smarter kube-scheduler preemption extender.")
    parser.add_argument("--version", action="version", version=f"reprieve {version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="answer the scheduler's filter, prioritize and preempt calls")
    env = os.environ.get
    source = serve.add_mutually_exclusive_group()
    source.add_argument(
        "--snapshot",
        metavar="PATH",
        default=env("REPRIEVE_SNAPSHOT"),
        help="cluster dump to decide from (kubectl get nodes,pods,pdb,priorityclasses,jobs -A -o yaml); env REPRIEVE_SNAPSHOT",
    )
    source.add_argument("--kubeconfig", metavar="PATH", help="watch the cluster this kubeconfig points at")
    source.add_argument("--in-cluster", action="store_true", help="watch the cluster reprieve runs in (service account)")
    _strict_flag(serve)
    serve.add_argument(
        "--staleness-bound",
        type=float,
        metavar="SECONDS",
        default=Settings.staleness_bound,
        help="seconds a live view may lag (a broken watch) before /readyz fails and the verbs give safe answers "
        f"(default {Settings.staleness_bound:g})",
    )
    # Testing only (docs/upstream-semantics.md): apply each watch event this many seconds after
    # it arrives, so that the scheduler's view runs ahead of reprieve's. Works, but not in --help.
    serve.add_argument("--fault-watch-delay", type=float, default=Settings.fault_watch_delay, help=argparse.SUPPRESS)
    serve.add_argument(
        "--bind",
        metavar="HOST:PORT",
        default=env("REPRIEVE_BIND", Settings.bind),
        help=f"address of the verbs, /healthz, /readyz and /metrics (default {Settings.bind}; env REPRIEVE_BIND)",
    )
    serve.add_argument(
        "--threads",
        type=int,
        metavar="N",
        default=Settings.threads,
        help=f"threads that answer requests (each arrives whole first) (default {Settings.threads})",
    )
    serve.add_argument(
        "--http-timeout",
        type=_timeout,
        metavar="DURATION",
        default=Settings.http_timeout,
        help="the httpTimeout of reprieve's stanza in the scheduler's configuration (2s, 500ms; or seconds): "
        "a preempt answer given later than that after its request began has no caller and is not held "
        f"in flight (default {Settings.http_timeout:g}s, the shipped configuration's)",
    )
    _serving_flags(serve)
    _policy_flag(serve, env="REPRIEVE_POLICY")
    serve.add_argument(
        "--mode",
        metavar="{" + ",".join(m.value for m in Mode) + "}",
        default=env("REPRIEVE_MODE", Settings.mode.value),
        help="enforce: answer with reprieve's decisions; shadow: answer as if reprieve were not there, "
        f"logging and counting what it would have decided (default {Settings.mode.value}; env REPRIEVE_MODE)",
    )
    serve.add_argument(
        "--events",
        metavar="{" + ",".join(e.value for e in Events) + "}",
        default=env("REPRIEVE_EVENTS", Settings.events.value),
        help="true: record Kubernetes Events on the preemptor and the victims of each preemption reprieve "
        "answered (live mode); false: none; shadow: also, in shadow mode, a 'would have' Event on each "
        f"preemptor (default {Settings.events.value}; env REPRIEVE_EVENTS)",
    )
    serve.add_argument(
        "--log-level",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        default=env("REPRIEVE_LOG_LEVEL", Settings.log_level).upper(),
        help=f"DEBUG, INFO, WARNING or ERROR (default {Settings.log_level}; env REPRIEVE_LOG_LEVEL)",
    )
    check = commands.add_parser(
        "check-policy", help="validate a policy file and show each queue's usage, shares and who may preempt"
    )
    check.add_argument("policy", metavar="PATH", help="the policy file (see docs/policy.md)")
    _cluster_flags(check, required=False, what="judge the queues against")
    explain = commands.add_parser(
        "explain", help="show, offline, what reprieve and stock preemption decide for a pod (docs/explain.md)"
    )
    _cluster_flags(explain, required=True, what="decide from")
    what = explain.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--pod", metavar="FILE|NAMESPACE/NAME", help="the pending pod: a Pod file (YAML or JSON) or NAMESPACE/NAME in the snapshot"
    )
    what.add_argument("--request", metavar="FILE", help="a captured extender request body (filter, prioritize or preempt)")
    explain.add_argument("--nodes", metavar="A,B", help="with --pod: only these nodes, comma-separated (default: every node)")
    _output_flag(explain)
    _policy_flag(explain)
    explain.set_defaults(log_level="WARNING")
    simulate = commands.add_parser(
        "simulate",
        help="replay pending pods through stock preemption and through reprieve, totals side by side (docs/simulate.md)",
    )
    simulate.add_argument(
        "--snapshot", metavar="PATH", help="cluster dump to start from; alone, its own pending pods are replayed in queue order"
    )
    simulate.add_argument(
        "--pods",
        metavar="PATH",
        help="the pending pods, in order: a YAML or JSON file (a full dump too: only its pending Pods are kept)",
    )
    simulate.add_argument("--generate", type=int, metavar="N", help="instead: a synthetic cluster and N pending preemptors")
    simulate.add_argument("--seed", type=int, metavar="S", default=0, help="with --generate: the random seed (default 0)")
    simulate.add_argument(
        "--shape", default="cpu", choices=("cpu", "gpu"),
        help="with --generate: cpu (mixed low-priority pods; the default cpu) or gpu (a production GPU cluster's tiers and fractional GPUs)",
    )
    simulate.add_argument(
        "--pressure", type=float, default=1.0, metavar="P",
        help="with --generate: the load against the cluster's size (default 1: as generated; 1.5: two thirds of the nodes)",
    )
    simulate.add_argument(
        "--placement", default="first", choices=("least-allocated", "most-allocated", "first"),
        help="where a pod that fits without preemption goes, on both sides (default first; least-allocated is the scheduler's default scoring)",
    )
    simulate.add_argument(
        "--replace", action="store_true", help="a controller-owned victim comes back as a pending replacement"
    )
    _strict_flag(simulate)
    _output_flag(simulate)
    _policy_flag(simulate)
    simulate.set_defaults(log_level="WARNING")
    return parser


def _timeout(text: str) -> float:
    """--http-timeout: a duration as the scheduler's configuration writes it (``2s``), or seconds."""
    from extender.policy_file import parse_duration

    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parse_duration(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text!r}")
    return seconds


def _output_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "-o", "--output", choices=OUTPUTS, default=OUTPUTS[0], help="table (80 columns) or json (default table)"
    )


def _strict_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--strict",
        action="store_true",
        help="stop on any item of the snapshot left out (no kind, a kind reprieve does not read, a copy, "
        "a pod bound to a node the dump lacks) instead of naming it on stderr",
    )


def _serving_flags(serve: argparse.ArgumentParser) -> None:
    """TLS, the plain probes port, and the limits that keep slow clients from starving the verbs."""
    env = os.environ.get
    serve.add_argument(
        "--tls-cert-file",
        metavar="PATH",
        default=env("REPRIEVE_TLS_CERT_FILE"),
        help="serve the verbs over TLS with this certificate (PEM, chain after it); reloaded when the file changes; "
        "env REPRIEVE_TLS_CERT_FILE",
    )
    serve.add_argument(
        "--tls-private-key-file",
        metavar="PATH",
        default=env("REPRIEVE_TLS_PRIVATE_KEY_FILE"),
        help="the certificate's private key (PEM); env REPRIEVE_TLS_PRIVATE_KEY_FILE",
    )
    serve.add_argument(
        "--client-ca-file",
        metavar="PATH",
        default=env("REPRIEVE_CLIENT_CA_FILE"),
        help="require client certificates signed by these CAs (PEM bundle; mutual TLS); env REPRIEVE_CLIENT_CA_FILE",
    )
    serve.add_argument(
        "--plain-bind",
        metavar="HOST:PORT",
        default=env("REPRIEVE_PLAIN_BIND"),
        help="HOST:PORT of a plain-HTTP listener serving only /healthz, /readyz and /metrics; env REPRIEVE_PLAIN_BIND",
    )
    for flag, field, metavar, unit in (
        ("--header-timeout", "header_timeout", "SECONDS", "seconds from a request's first byte to the end of its headers (and for the TLS handshake)"),
        ("--body-timeout", "body_timeout", "SECONDS", "seconds from the end of a request's headers to the end of its body, and to send the answer"),
        ("--max-connections", "max_connections", "N", "connections open at once, all clients together"),
        ("--max-connections-per-client", "max_connections_per_client", "N", "connections open at once from one IP address"),
        ("--max-buffered-bytes", "max_buffered_bytes", "BYTES", "bytes of request bodies being received at once, all connections together"),
        ("--shutdown-delay", "shutdown_delay", "SECONDS", "seconds after SIGTERM during which /readyz fails but requests are still answered"),
    ):
        default = getattr(Settings, field)
        shown = f"{default:g}" if isinstance(default, float) else default
        serve.add_argument(flag, type=type(default), metavar=metavar, default=default, help=f"{unit} (default {shown})")


def _cluster_flags(command: argparse.ArgumentParser, *, required: bool, what: str) -> None:
    """--snapshot FILE, or a live cluster read once: --kubeconfig PATH and/or --context NAME
    (either alone finds the other as kubectl does; extender.commands.cluster)."""
    source = command.add_mutually_exclusive_group()
    source.add_argument("--snapshot", metavar="PATH", help=f"{what} this cluster dump")
    source.add_argument("--kubeconfig", metavar="PATH", help=f"{what} the cluster this kubeconfig points at (listed once)")
    command.add_argument(
        "--context", metavar="NAME", help="with --kubeconfig (or $KUBECONFIG): this context, not the current one"
    )
    _strict_flag(command)
    command.set_defaults(cluster_required=required)


def _cluster(args: argparse.Namespace):
    """The cluster a command reads (None: check-policy without one)."""
    from extender.commands import cluster

    if args.snapshot:
        if args.context:
            raise ConfigError("--context goes with --kubeconfig, not --snapshot")
        return cluster.snapshot(args.snapshot, strict=args.strict)
    if args.kubeconfig or args.context:
        return cluster.live(args.kubeconfig, args.context)
    if args.cluster_required:
        raise ConfigError(f"{args.command} needs --snapshot PATH, or --kubeconfig PATH and/or --context NAME")
    return None


def _policy_flag(command: argparse.ArgumentParser, *, env: str | None = None) -> None:
    """--policy; ``env`` its environment fallback (serve only)."""
    command.add_argument(
        "--policy",
        metavar="PATH",
        default=os.environ.get(env) if env else None,
        help="multi-tenant preemption rules and the ranking's order (docs/policy.md)" + (f"; env {env}" if env else ""),
    )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logs.configure(getattr(args, "log_level", "WARNING"))
    commands = {"serve": _serve, "check-policy": _check_policy, "explain": _explain, "simulate": _simulate}
    if args.command != "serve":
        _unused_environment(args)
    try:
        return commands[args.command](args)
    except ReprieveError as exc:
        print(f"reprieve: {exc}", file=sys.stderr)
        return 2


def _unused_environment(args: argparse.Namespace) -> None:
    """Say so when serve's environment is set where an offline command ignores it: an exported
    REPRIEVE_POLICY must not look as if it decided explain's answer, nor REPRIEVE_SNAPSHOT its
    cluster."""
    from extender.commands import warn

    for dest in ("snapshot", "policy"):
        var = SERVE_ENV[dest]
        if os.environ.get(var) and getattr(args, dest, None) is None:
            use = f"; give --{dest} to use it" if dest in vars(args) else ""
            warn(f"note: {var} is set but not used: only serve reads the environment{use}")


def _environment(args: argparse.Namespace) -> list[str]:
    """serve's settings that came from the environment (SERVE_ENV), as VAR=value, and those a
    flag overrode. A snapshot from the environment does not count against --kubeconfig or
    --in-cluster: the flag wins."""
    found = []
    if (args.kubeconfig or args.in_cluster) and args.snapshot == os.environ.get("REPRIEVE_SNAPSHOT"):
        args.snapshot = None
    for dest, var in SERVE_ENV.items():
        value = os.environ.get(var)
        if value is None:
            continue
        used = getattr(args, dest) == (value.upper() if dest == "log_level" else value)
        found.append(f"{var}={value}" + ("" if used else " (overridden by its flag)"))
    return found


def _check_policy(args: argparse.Namespace) -> int:
    from extender import policy_file
    from extender.commands import check_policy

    import time

    policy = policy_file.load(args.policy)
    cluster = _cluster(args)
    sys.stdout.write(check_policy.report(policy, cluster.view if cluster else None, now=time.time()))
    return 0


def _serve(args: argparse.Namespace) -> int:
    from extender import policy_file
    from extender.state import snapshot
    from extender.serving.app import create_app
    from extender.state.source import StaticCluster
    from extender.apiserver import ApiServer
    from extender.live.cache import LiveCluster
    from extender.metrics import Metrics
    from extender.serving.server import Server
    from policy import ranking

    for flag in ("threads", "header_timeout", "body_timeout", "max_connections", "max_connections_per_client", "max_buffered_bytes"):
        if getattr(args, flag) <= 0:
            raise ConfigError(f"--{flag.replace('_', '-')} must be positive, not {getattr(args, flag)}")
    if args.shutdown_delay < 0:
        raise ConfigError(f"--shutdown-delay must not be negative, not {args.shutdown_delay}")
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        raise ConfigError("--tls-cert-file and --tls-private-key-file go together: give both or neither")
    if args.client_ca_file and not args.tls_cert_file:
        raise ConfigError("--client-ca-file needs --tls-cert-file and --tls-private-key-file: client certificates need TLS")
    if args.staleness_bound <= 0:
        raise ConfigError(f"--staleness-bound must be positive, not {args.staleness_bound}")
    if not 0 <= args.fault_watch_delay <= 60:
        raise ConfigError(f"--fault-watch-delay must be between 0 and 60 seconds, not {args.fault_watch_delay}")
    if args.mode not in {m.value for m in Mode}:
        raise ConfigError(f"--mode must be enforce or shadow, not {args.mode!r}")
    if args.events not in {e.value for e in Events}:
        raise ConfigError(f"--events must be true, false or shadow, not {args.events!r}")
    settings = Settings(
        bind=args.bind,
        threads=args.threads,
        log_level=args.log_level,
        staleness_bound=args.staleness_bound,
        http_timeout=args.http_timeout,
        fault_watch_delay=args.fault_watch_delay,
        mode=Mode(args.mode),
        events=Events(args.events),
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        max_connections=args.max_connections,
        max_connections_per_client=args.max_connections_per_client,
        max_buffered_bytes=args.max_buffered_bytes,
        shutdown_delay=args.shutdown_delay,
        plain_bind=args.plain_bind,
        tls_cert_file=args.tls_cert_file,
        tls_private_key_file=args.tls_private_key_file,
        client_ca_file=args.client_ca_file,
    )
    stopping = threading.Event()
    environment = _environment(args)
    if environment:
        log.info("from the environment: %s", ", ".join(environment))
    log.info("mode: %s", settings.mode.value)
    policy = policy_file.load(args.policy) if args.policy else policy_file.Policy(None)
    rules, order = policy.rules, policy.order
    if rules is not None:
        log.info("multi-tenant rules from %s: %d queue(s)", args.policy, len(rules.queue_names()))
    if order != ranking.DEFAULT:
        log.info("ranking from %s: %s", args.policy, ", ".join(order.names))
    guards = policy.guards
    if guards is not None:
        log.info(
            "guards from %s: %s", args.policy,
            "; ".join([*([f"strict budgets: {guards.strict.describe()}"] if guards.strict else []),
                       *(r.describe() for r in guards.runtime)]),
        )
    # Read the snapshot or kubeconfig, the TLS files and the addresses first, so that a bad one
    # stops startup with its message; start watching (build) only then.
    if args.kubeconfig or args.in_cluster:
        api = ApiServer.from_kubeconfig(args.kubeconfig) if args.kubeconfig else ApiServer.in_cluster()
        log.info("serving on %s, watching %s", settings.bind, api.describe())

        def build():
            metrics = Metrics()
            events = None

            def first_view() -> None:
                # The initial list makes most of the long-lived records: move them out of the
                # collector's reach as Server.run does for a snapshot (see extender.serving.server).
                gc.freeze()
                if events is not None and cluster.under_way_at_start:
                    events.started(cluster.under_way_at_start, _own_pod())

            cluster = LiveCluster(
                api,
                metrics=metrics,
                staleness_bound=settings.staleness_bound,
                watch_delay=settings.fault_watch_delay,
                on_first_view=first_view,
            )
            events = _events(settings, api, cluster, metrics)
            cluster.start()
            if settings.fault_watch_delay:
                log.warning("fault injected: every watch event is applied %.1fs after it arrives", settings.fault_watch_delay)
            return create_app(
                settings, cluster=cluster, metrics=metrics, rules=rules, stopping=stopping, order=order,
                events=events, stall=Stall().start(), guards=guards,
            )

    elif args.snapshot:
        # Each item left out is a warning line (with --strict, the error); no nodes, an error.
        loaded = snapshot.read(args.snapshot, strict=args.strict, warn=log.warning, need_nodes=True)
        cluster = StaticCluster(loaded.view, source=args.snapshot)
        left = f"; {len(loaded.left_out)} item(s) left out, each named above" if loaded.left_out else ""
        log.info("serving on %s from %s%s", settings.bind, cluster.describe(), left)
        if settings.events is not Events.OFF:
            log.info("events: none in snapshot mode (no API server to write them to)")

        def build():
            return create_app(settings, cluster=cluster, rules=rules, stopping=stopping, order=order, guards=guards)

    else:
        raise ConfigError("serve needs one of --snapshot PATH, --kubeconfig PATH or --in-cluster")
    server = Server(build, settings, stopping=stopping)
    server.run()
    return 0


def _own_pod():
    """reprieve's own Pod, from the downward API's environment the chart sets (REPRIEVE_POD_NAME,
    REPRIEVE_POD_NAMESPACE, REPRIEVE_POD_UID); None outside a pod, or without them."""
    from extender.events.recorder import Ref

    name, namespace = os.environ.get("REPRIEVE_POD_NAME"), os.environ.get("REPRIEVE_POD_NAMESPACE")
    if not name or not namespace:
        return None
    return Ref("Pod", name, namespace, os.environ.get("REPRIEVE_POD_UID", ""))


def _events(settings: Settings, api, cluster, metrics):
    """The Event recorder and the witness that feeds it, started with the app; None when off."""
    from extender.events.recorder import ApiSink, Recorder
    from extender.events.witness import Witness
    from extender.state.ledger import Ledger

    witness = Witness(Recorder(ApiSink(api), metrics=metrics), cluster, Ledger(), mode=settings.mode, events=settings.events)
    if not witness.enabled:
        log.info("events: off (--events %s, --mode %s)", settings.events.value, settings.mode.value)
        return None
    log.info("events: on (--events %s, --mode %s)", settings.events.value, settings.mode.value)
    witness.recorder.start()
    return witness.start()


def _explain(args: argparse.Namespace) -> int:
    import time

    from extender import policy_file

    from extender.commands import explain

    from policy import replay

    policy = policy_file.load(args.policy) if args.policy else policy_file.Policy(None)
    cluster = _cluster(args)
    # A snapshot is judged at the latest time it shows, as simulate replays it (reproducible);
    # a live cluster at the wall clock.
    shown = replay.dump_time(cluster.view) if cluster.snapshot else None
    report = explain.run(
        cluster=cluster,
        pod=args.pod,
        request=args.request,
        nodes=args.nodes,
        output=args.output,
        rules=policy.rules,
        order=policy.order,
        guards=policy.guards,
        policy=args.policy,
        now=time.time() if shown is None else shown,
    )
    sys.stdout.write(report)
    return 0


def _simulate(args: argparse.Namespace) -> int:
    import time

    from extender import policy_file
    from extender.commands import simulate, warn

    sys.stdout.write(
        simulate.run(
            policy=policy_file.load(args.policy) if args.policy else None,
            policy_path=args.policy,
            now=time.time(),
            snapshot_path=args.snapshot,
            pods_path=args.pods,
            generate=args.generate,
            seed=args.seed,
            replace=args.replace,
            output=args.output,
            warn=warn,
            strict=args.strict,
            shape=args.shape,
            pressure=args.pressure,
            placement=args.placement,
        )
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
