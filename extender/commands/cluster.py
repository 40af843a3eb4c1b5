"""The cluster a command reads: a snapshot file, or a live cluster listed once through a kubeconfig.

The kubeconfig is found as kubectl finds it: ``--kubeconfig``, else ``$KUBECONFIG`` (a
``:``-separated list, merged), else ``~/.kube/config``; its current context unless
``--context`` names another.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import kubernetes

from extender.errors import ConfigError
from policy.view import ClusterView


@dataclass(frozen=True)
class Cluster:
    view: ClusterView
    snapshot: str | None  # the snapshot's path, or None for a live cluster
    live: str | None  # "context NAME (SERVER)" for a live cluster, or None
    left_out: int = 0  # items of the snapshot left out (each named on stderr as it was read)

    def noun(self) -> str:
        """How messages name where the objects came from."""
        return "the snapshot" if self.snapshot is not None else "the cluster"

    def loaded(self) -> dict[str, int]:
        """What the view holds, as explain's header and JSON ``input.loaded`` give it."""
        view = self.view
        return {
            "nodes": len(view.nodes),
            "pods": len(view.pods),
            "pending": sum(1 for p in view.pods.values() if p.node_name is None),
            "budgets": sum(len(b) for b in view.budgets.values()),
            "left_out": self.left_out,
        }


def kubeconfig_path(explicit: str | None = None) -> str:
    """The kubeconfig kubectl would read: the flag, else $KUBECONFIG, else ~/.kube/config."""
    return explicit or os.environ.get("KUBECONFIG") or os.path.join(os.path.expanduser("~"), ".kube", "config")


def context_of(kubeconfig: str, context: str | None) -> dict:
    """The kubeconfig's context (the current one unless named): ``{"name": ..., "context": {...}}``."""
    try:
        contexts, current = kubernetes.config.list_kube_config_contexts(config_file=kubeconfig)
    except (OSError, kubernetes.config.ConfigException) as exc:
        # Without a usable current-context the client says "Expected object with name  in ...".
        hint = " (is current-context set? --context names one)" if context is None and os.path.exists(kubeconfig.split(":")[0]) else ""
        raise ConfigError(f"kubeconfig {kubeconfig}: {exc}{hint}") from None
    if context is None:
        return current
    for c in contexts:
        if c["name"] == context:
            return c
    names = ", ".join(sorted(c["name"] for c in contexts)) or "none"
    raise ConfigError(f"kubeconfig {kubeconfig}: no context {context!r} (it has {names})")


def snapshot(path: str, *, strict: bool = False) -> Cluster:
    """The snapshot at ``path``: each item left out named on stderr (with ``strict``, an
    error); one without nodes is an error."""
    from extender.commands import warn
    from extender.state import snapshot as snapshots

    loaded = snapshots.read(path, strict=strict, warn=warn, need_nodes=True)
    return Cluster(loaded.view, snapshot=path, live=None, left_out=len(loaded.left_out))


def live(kubeconfig: str | None, context: str | None = None, *, timeout: float = 120.0) -> Cluster:
    """One consistent view of a live cluster: the list+watch cache `reprieve serve --kubeconfig`
    runs, stopped as soon as Nodes, Pods, PodDisruptionBudgets and PriorityClasses have listed
    (and the gang PodGroup kinds the cluster serves, docs/running.md "Gangs")."""
    from extender.apiserver import ApiServer
    from extender.live.cache import LiveCluster
    from extender.metrics import Metrics

    path = kubeconfig_path(kubeconfig)
    name = context_of(path, context)["name"]
    api = ApiServer.from_kubeconfig(path, context=name)
    _probe(api, name)
    cluster = LiveCluster(api, metrics=Metrics()).start()
    try:
        deadline = time.monotonic() + timeout
        while (view := cluster.view()) is None:
            if time.monotonic() > deadline:
                raise ConfigError(f"could not list the cluster of context {name} ({api.describe()}) within {timeout:.0f}s")
            time.sleep(0.05)
    finally:
        cluster.stop()
    return Cluster(view, snapshot=None, live=f"context {name} ({api.describe()})")


def _probe(api, context: str) -> None:
    """One small list of each required kind first, so that an unreachable server or a missing
    permission is one line now, not a cache retrying with backoff until the timeout. The
    optional kinds (PodGroups) are not probed: a cluster without them, or a kubeconfig that may
    not read them, gets a view without their minimums."""
    import urllib3

    from extender.apiserver import ApiError
    from extender.live.changes import KINDS

    for kind in KINDS.values():
        if kind.optional:
            continue
        try:
            api.get(kind.path, {"limit": 1}, timeout=15)
        except ApiError as exc:
            raise ConfigError(f"context {context} ({api.describe()}): listing {kind.name}: {exc}") from None
        except urllib3.exceptions.HTTPError as exc:
            raise ConfigError(f"context {context} ({api.describe()}): cannot reach the API server: {exc}") from None
