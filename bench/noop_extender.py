"""A do-nothing extender on reprieve's own web stack: the floor any Python extender pays.

    python bench/noop_extender.py --bind 127.0.0.1:PORT [--threads N]

The same server as ``reprieve serve`` (extender/serving/server.py: one process, an asyncio
loop reading whole requests and answering the verbs' small ones itself, a few threads for the
rest, orjson), with no cluster view and no decision: filter parses the body and
passes every node it was sent, prioritize answers ``[]`` (no scores), preempt parses the body
and answers the scheduler's own proposal. Used by bench/e2e.py as the "do-nothing extender",
and by bench/burst.py --noop.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

import orjson
from flask import Flask, Response, request

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender.config import Settings  # noqa: E402
from extender.metrics import Metrics  # noqa: E402
from extender.serving.server import Server  # noqa: E402

JSON = "application/json"


def filter_answer(body: bytes) -> bytes:
    args = orjson.loads(body)
    return orjson.dumps(
        {"Nodes": args.get("Nodes"), "NodeNames": args.get("NodeNames"), "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": ""}
    )


def preempt_answer(body: bytes) -> bytes:
    args = orjson.loads(body)
    proposal = args.get("NodeNameToMetaVictims")
    if proposal is None:  # nodeCacheCapable: false sends whole pods; answer their UIDs
        proposal = {
            node: {"Pods": [{"UID": p["metadata"]["uid"]} for p in v.get("Pods") or ()], "NumPDBViolations": v.get("NumPDBViolations", 0)}
            for node, v in (args.get("NodeNameToVictims") or {}).items()
        }
    return orjson.dumps({"NodeNameToMetaVictims": proposal})


ANSWERS = {
    "/filter": lambda body, **_: (200, filter_answer(body)),
    "/prioritize": lambda body, **_: (200, b"[]"),
    "/preempt": lambda body, **_: (200, preempt_answer(body)),
}


def create_app() -> Flask:
    app = Flask("noop-extender")
    # The server counts connections and requests in reprieve's registry, and answers the verbs
    # through the same path as reprieve's (no WSGI): give it both.
    app.extensions["reprieve"] = {"metrics": Metrics(), "answers": ANSWERS}

    for path, answer in ANSWERS.items():  # the same answers through Flask, for other servers
        app.add_url_rule(
            path, path.strip("/"), lambda answer=answer: Response(answer(request.get_data(cache=False))[1], mimetype=JSON), methods=["POST"]
        )

    @app.get("/healthz")
    @app.get("/readyz")
    def healthz() -> Response:
        return Response(b'{"status":"ok"}', mimetype=JSON)

    return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bind", required=True, help="HOST:PORT")
    parser.add_argument("--threads", type=int, default=Settings.threads)
    args = parser.parse_args(argv)
    settings = Settings(bind=args.bind, threads=args.threads)
    Server(create_app, settings, stopping=threading.Event()).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
