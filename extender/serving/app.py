"""The Flask application factory."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from extender import wire
from extender.stall import Stall
from extender.state.source import ClusterSource
from extender.config import Settings
from extender.errors import BadRequest, Unanswerable
from extender.events.witness import Witness
from extender.state.ledger import Ledger
from extender.state.preemptions import Nominations
from extender.metrics import CLOSED, PAST_TIMEOUT, Metrics
from extender.state.standings import Standings
from extender.serving.verbs import Context
from extender.serving.verbs import filter as filter_verb
from extender.serving.verbs import preempt as preempt_verb
from extender.serving.verbs import prioritize as prioritize_verb
from policy import ranking
from policy.guards import Guards
from policy.tenancy import Rules

JSON = "application/json"

# verb -> handler; the route is /<verb>, so urlPrefix in the scheduler config is the server root.
VERBS: dict[str, Callable[[bytes, Context], bytes]] = {
    "filter": filter_verb.handle,
    "prioritize": prioritize_verb.handle,
    "preempt": preempt_verb.handle,
}


def create_app(
    settings: Settings,
    *,
    cluster: ClusterSource,
    metrics: Metrics | None = None,
    rules: Rules | None = None,
    events: Witness | None = None,
    stopping: threading.Event | None = None,
    order: ranking.Order = ranking.DEFAULT,
    stall: Stall | None = None,
    guards: Guards | None = None,
    ledger: Ledger | None = None,
) -> Flask:
    """``rules``, ``order`` and ``guards``: the --policy file's (extender.policy_file). ``events`` (extender.events) records Kubernetes Events about its preemptions,
    reading the answers from its ledger, which the verbs record in; ``stopping`` is set when the
    server begins to shut down: from then on /readyz fails. ``stall`` (extender.stall): while it
    says the process was just stopped or starved, the verbs answer as while the view is not
    ready (the scheduler's own answer). ``ledger``: the record of answers in flight, if not the
    Events witness's or a new one (bench/verbs.py's records nothing)."""
    app = Flask("reprieve")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    metrics = metrics or Metrics()
    log = logging.getLogger("reprieve.decisions")
    standings = Standings(rules) if rules is not None else None
    if ledger is None:
        ledger = events.ledger if events is not None else Ledger()  # one record of answers in flight for both
    elif events is not None and events.ledger is not ledger:
        raise ValueError("create_app: the verbs and the Events witness must share one ledger")
    stopping = stopping or threading.Event()
    app.extensions["reprieve"] = {"cluster": cluster, "metrics": metrics, "settings": settings, "ledger": ledger}
    metrics.serving(mode=settings.mode.value, ready=lambda: cluster.view() is not None and not stopping.is_set())
    nominations = Nominations()
    metrics.nominated_oldest.set_function(lambda: nominations.oldest(cluster.view()))

    def answering(verb: str, handler: Callable[[bytes, Context], bytes]) -> Callable[[bytes], tuple[int, bytes]]:
        """body -> (status, JSON body): one verb request, counted and timed. The server calls it
        directly (extender.serving.connection: no WSGI, no Flask on the hot path); the Flask
        route below wraps it for everything else (tests, other servers)."""
        unhandled = logging.getLogger("reprieve")

        def answer(body: bytes, *, arrived: float | None = None, closed: Callable[[], bool] | None = None) -> tuple[int, bytes]:
            """``arrived``: time.monotonic() when the request's first byte was read; ``closed``:
            whether the client has closed its connection (extender.serving.connection)."""
            started = time.perf_counter()
            code = 200
            try:
                view = None if stall is not None and stall.recent() else cluster.view()
                gone = caller(settings.http_timeout, arrived, closed) if arrived is not None or closed is not None else None
                context = Context(view, metrics, log, standings, ledger, settings.mode, started, events, order, stall, guards, gone)
                return code, handler(body, context)
            except (BadRequest, Unanswerable) as exc:
                code = exc.status
                return code, wire.error_body(f"{verb}: {exc}")
            except Exception as exc:  # a bug, not bad input: log it whole, answer 500, keep serving
                code = 500
                unhandled.exception("unhandled error on /%s", verb)
                return code, wire.error_body(f"internal error: {type(exc).__name__}")
            finally:
                metrics.requests.labels(verb, str(code)).inc()
                metrics.latency.labels(verb).observe(time.perf_counter() - started)

        return answer

    answers = {f"/{verb}": answering(verb, handler) for verb, handler in VERBS.items()}
    app.extensions["reprieve"]["answers"] = answers

    def serve_verb(verb: str) -> Callable[[], Response]:
        answer = answers[f"/{verb}"]

        def view() -> Response:
            try:
                body = _read_body()
            except HTTPException as exc:  # e.g. 413 for a body over max_body_bytes
                metrics.requests.labels(verb, str(exc.code)).inc()
                raise
            except BadRequest as exc:
                metrics.requests.labels(verb, str(exc.status)).inc()
                return Response(wire.error_body(f"{verb}: {exc}"), status=exc.status, mimetype=JSON)
            code, payload = answer(body)
            return Response(payload, status=code, mimetype=JSON)

        view.__name__ = f"verb_{verb}"
        return view

    for verb in VERBS:
        app.add_url_rule(f"/{verb}", view_func=serve_verb(verb), methods=["POST"])

    @app.get("/healthz")
    def healthz() -> Response:
        return Response(b'{"status":"ok"}', mimetype=JSON)

    @app.get("/readyz")
    def readyz() -> tuple[dict, int]:
        ready = cluster.view() is not None and not stopping.is_set()
        body = {"ready": ready, "cluster": cluster.describe(), "resourceVersions": cluster.resource_versions()}
        if stopping.is_set():
            body["stopping"] = True
        return body, 200 if ready else 503

    @app.get("/metrics")
    def metrics_endpoint() -> Response:
        return Response(metrics.exposition(), mimetype="text/plain; version=0.0.4; charset=utf-8")

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        return Response(wire.error_body(f"{exc.code} {exc.name}: {exc.description}"), status=exc.code, mimetype=JSON)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        # A bug, not bad input: log it whole, answer 500 and keep the worker alive.
        logging.getLogger("reprieve").exception("unhandled error on %s", request.path)
        return Response(wire.error_body(f"internal error: {type(exc).__name__}"), status=500, mimetype=JSON)

    return app


def caller(timeout: float, arrived: float | None, closed: Callable[[], bool] | None) -> Callable[[], str | None]:
    """Why the scheduler no longer waits for an answer: its connection is closed (it gave up
    and hung up), or the request began more than its ``httpTimeout`` ago (it gave up, or will
    have by the time the answer reaches it: its clock started before ours). None: it may wait."""

    def gone() -> str | None:
        if arrived is not None and time.monotonic() - arrived > timeout:
            return PAST_TIMEOUT
        if closed is not None and closed():
            return CLOSED
        return None

    return gone


def _read_body() -> bytes:
    """The request body; a body the server cannot read (a malformed chunk, a client gone
    mid-body) is the client's error, not reprieve's."""
    try:
        return request.get_data(cache=False)
    except HTTPException:  # werkzeug's own: 413 over MAX_CONTENT_LENGTH, 400 on a short body
        raise
    except Exception as exc:  # the WSGI input stream: the server reads bodies whole, so only a bug gets here
        raise BadRequest(f"cannot read the request body: {type(exc).__name__}: {exc}") from None
