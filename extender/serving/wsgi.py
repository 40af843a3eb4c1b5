"""Calling the WSGI app (PEP 3333) with a request that has arrived whole."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from urllib.parse import unquote_to_bytes

import h11

WSGIApp = Callable[..., object]


def environ(request: h11.Request, body: bytes, *, scheme: str, server: tuple, client: tuple) -> dict:
    target = request.target
    path, _, query = target.partition(b"?")
    env = {
        "REQUEST_METHOD": request.method.decode("ascii"),
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
        "QUERY_STRING": query.decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": "HTTP/" + request.http_version.decode("ascii"),
        "REMOTE_ADDR": str(client[0]),
        "REMOTE_PORT": str(client[1]),
        "CONTENT_LENGTH": str(len(body)),  # the body is whole and de-chunked
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scheme,
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for name, value in request.headers:  # h11 lower-cases names
        if b"_" in name:
            continue  # X_Foo would pose as X-Foo in the environ
        key = name.decode("latin-1").upper().replace("-", "_")
        if key in ("CONTENT_LENGTH", "TRANSFER_ENCODING"):
            continue
        key = key if key == "CONTENT_TYPE" else "HTTP_" + key
        value = value.decode("latin-1")
        env[key] = f"{env[key]},{value}" if key in env else value
    return env


def call(app: WSGIApp, env: dict) -> tuple[int, list[tuple[str, str]], bytes]:
    """Run the app to completion: status code, headers and the whole body."""
    started: list = []
    chunks: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info=None):
        started[:] = [int(status.split(" ", 1)[0]), headers]
        return chunks.append

    result = app(env, start_response)
    try:
        chunks.extend(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    status, headers = started
    return status, headers, b"".join(chunks)
