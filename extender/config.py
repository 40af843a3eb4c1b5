"""Settings: one frozen object, read once from the command line (environment as fallback)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from extender import limits


class Mode(str, Enum):
    """Whether reprieve's decisions reach the scheduler."""

    ENFORCE = "enforce"  # answer with reprieve's decisions
    SHADOW = "shadow"  # answer as if reprieve were not there; log and count what it would have done


class Events(str, Enum):
    """Which Kubernetes Events reprieve records about the preemptions it sees carried out."""

    ON = "true"  # on the preemptor and each victim of a preemption reprieve answered (enforce mode)
    OFF = "false"  # none
    SHADOW = "shadow"  # as ON, and in shadow mode a "would have" Event on each preemptor


@dataclass(frozen=True)
class Settings:
    bind: str = "127.0.0.1:8888"
    threads: int = 4
    max_body_bytes: int = limits.MAX_BODY_BYTES
    log_level: str = "INFO"
    # Seconds a live view may lag behind the API server (a broken watch, a relist) before
    # /readyz fails and the verbs give their safe answers.
    staleness_bound: float = 5.0
    # Testing only: apply each watch event this long after it arrives (extender.live.lag.delayed).
    fault_watch_delay: float = 0.0
    mode: Mode = Mode.ENFORCE
    events: Events = Events.ON
    # The extender stanza's httpTimeout in the scheduler's configuration (2 s in
    # manifests/scheduler-config.yaml; kube-scheduler's own default is 5 s): the scheduler gives
    # up on a call after it, so a preempt answer given later than that after the request began
    # has no caller and is not recorded in flight (extender.serving.verbs.preempt).
    http_timeout: float = 2.0
    # Serving (extender.serving.server, docs/serving.md). The scheduler gives up on a call after
    # its httpTimeout (above): a request slower than that helps nobody.
    header_timeout: float = 5.0  # from a request's first byte to the end of its head (and the TLS handshake)
    body_timeout: float = 10.0  # from the end of the head to the end of the body; also to send the answer
    idle_timeout: float = 75.0  # a kept-alive connection with no request; the scheduler reuses connections
    max_connections: int = 1024  # open at once, all clients together
    max_connections_per_client: int = 64  # open at once from one IP address
    # Request bodies being received, over all connections: 1024 connections times a 64 MiB body
    # would be 64 GiB. Past it a body is refused with 503 (the scheduler's own fit in easily).
    max_buffered_bytes: int = 256 * 2**20
    shutdown_delay: float = 2.0  # after SIGTERM: /readyz fails, requests are still answered
    graceful_timeout: float = 10.0  # then: requests in flight may finish for this long
    plain_bind: str | None = None  # HOST:PORT for /healthz, /readyz and /metrics only, plain HTTP
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    client_ca_file: str | None = None  # clients must present a certificate this CA signed
