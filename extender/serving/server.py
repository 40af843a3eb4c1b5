"""Serving the app: one process (it owns the cluster state), an asyncio loop that reads every
request whole, and a few threads that answer complete requests (docs/serving.md says why).

Listeners: the verbs (and the probes) on ``bind``, over TLS when a certificate is given; with
``plain_bind``, a second, plain-HTTP listener that serves /healthz, /readyz and /metrics only.
SIGTERM or SIGINT: /readyz fails at once, requests are still answered for ``shutdown_delay``
(a second signal cuts it short), then the listeners close, idle connections close, and requests
in flight get ``graceful_timeout`` to finish.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from flask import Flask

from extender.config import Settings
from extender.errors import ConfigError
from extender.serving.connection import Connections, Listener
from extender.serving.tls import ServingCertificate

log = logging.getLogger("reprieve")

PROBES = frozenset({"/healthz", "/readyz", "/metrics"})


def split_address(flag: str, address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{flag} must be HOST:PORT, not {address!r}")
    return host.strip("[]"), int(port)


class Server:
    """``build_app`` runs in ``run``; TLS files and addresses are checked here, before it."""

    def __init__(self, build_app: Callable[[], Flask], settings: Settings, *, stopping: threading.Event) -> None:
        self._build_app, self._settings, self._stopping = build_app, settings, stopping
        self._verbs = split_address("--bind", settings.bind)
        self._plain = split_address("--plain-bind", settings.plain_bind) if settings.plain_bind else None
        self._tls = None
        if settings.tls_cert_file:
            self._tls = ServingCertificate(settings.tls_cert_file, settings.tls_private_key_file, settings.client_ca_file)

    def run(self) -> None:
        app = self._build_app()
        # The cluster view is long-lived and large; move it out of the collector's reach so
        # that full collections do not stall requests (they cost tens of ms at 10k pods).
        gc.freeze()
        asyncio.run(self._serve(app))

    async def _serve(self, app: Flask) -> None:
        s = self._settings
        metrics = app.extensions["reprieve"]["metrics"]
        if self._tls is not None:
            self._tls.on_reload = lambda ok: metrics.tls_reloads.labels("ok" if ok else "failed").inc()
        pool = ThreadPoolExecutor(s.threads, thread_name_prefix="reprieve-request")
        connections = Connections(app.wsgi_app, s, pool, metrics, app.extensions["reprieve"].get("answers"))
        listeners = [(Listener("verbs", self._tls), self._verbs)]
        if self._plain:
            listeners.append((Listener("probes", None, PROBES), self._plain))
        servers = []
        for listener, (host, port) in listeners:
            try:
                servers.append(await asyncio.start_server(partial(connections.serve, listener), host, port, backlog=1024))
            except OSError as exc:
                raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
            scheme = "https" if listener.tls else "http"
            what = "probes and metrics only" if listener.paths else "verbs, probes and metrics"
            tls = ", client certificates required" if listener.tls and listener.tls.mutual else ""
            log.info("listening on %s://%s:%d (%s%s)", scheme, host, port, what, tls)

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        stop.clear()
        self._stopping.set()
        log.info("shutting down: /readyz fails; answering for %.1fs more", s.shutdown_delay)
        try:
            await asyncio.wait_for(stop.wait(), s.shutdown_delay)  # a second signal: no more waiting
        except TimeoutError:
            pass
        for server in servers:
            server.close()
        connections.close_idle()
        try:
            await asyncio.wait_for(connections.all_closed.wait(), s.graceful_timeout)
        except TimeoutError:
            log.warning("shutting down: %d connection(s) still busy after %.1fs", len(connections.open), s.graceful_timeout)
        pool.shutdown(wait=False, cancel_futures=True)
        log.info("stopped")
