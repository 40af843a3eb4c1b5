"""Serving the app under gunicorn: one process (it owns the cluster state), gthread workers."""

from __future__ import annotations

import gc
from collections.abc import Callable

from flask import Flask
from gunicorn.app.base import BaseApplication


class Server(BaseApplication):
    """gunicorn with one worker process; ``build_app`` runs in that process, after the fork."""

    def __init__(self, build_app: Callable[[], Flask], *, bind: str, threads: int) -> None:
        self._build_app = build_app
        self._options = {
            "bind": bind,
            "workers": 1,
            "worker_class": "gthread",
            "threads": threads,
            # The scheduler's httpTimeout defaults to 5s; a worker stuck far longer is dead.
            "timeout": 30,
            "graceful_timeout": 10,
            "keepalive": 75,  # the scheduler reuses connections
            "accesslog": None,
            # Newer gunicorn opens a control socket in $HOME; reprieve needs none, and two
            # instances on one machine (or a read-only root filesystem) must not trip over it.
            "control_socket_disable": True,
            "errorlog": "-",
        }
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            if key in self.cfg.settings:  # control_socket_disable exists only in newer gunicorn
                self.cfg.set(key, value)

    def load(self) -> Flask:
        app = self._build_app()
        # The cluster view is long-lived and large; move it out of the collector's reach so
        # that full collections do not stall requests (they cost tens of ms at 10k pods).
        gc.freeze()
        return app
