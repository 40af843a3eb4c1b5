"""One client connection: admitted, TLS, then HTTP/1.1 requests read whole in the event loop
and answered by the app on a worker thread.

A request reaches a thread only once its head and body have arrived, so a client that sends
slowly (or not at all) holds a few kilobytes and a coroutine, never a thread. Deadlines:
the TLS handshake and the head within ``header_timeout`` of the first byte, the body within
``body_timeout`` of the head, the answer taken by the client within ``body_timeout``; a kept
connection with no request is closed after ``idle_timeout``. h11 does the HTTP/1.1 parsing and
framing (Content-Length, chunked, keep-alive, pipelining).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
from concurrent.futures import Executor
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from http import HTTPStatus

import h11

from extender.config import Settings
from extender import wire
from extender.serving import wsgi
from extender.serving.admission import Admission
from extender.serving.collector import Collector
from extender.metrics import VERBS, Metrics
from extender.serving.tls import ServingCertificate

log = logging.getLogger("reprieve")

# A verb's request body -> (status, JSON body); keywords ``arrived`` (time.monotonic() of the
# request's first byte) and ``closed`` (has the client hung up?): extender.serving.app.
Answer = Callable[..., tuple[int, bytes]]

MAX_HEAD = 64 * 1024  # request line and headers; the scheduler sends a few hundred bytes
READ_SIZE = 64 * 1024
JSON = ("Content-Type", "application/json")
# A verb request up to this size is answered on the event loop's own thread: the scheduler's
# requests in nodeCacheCapable mode (a pod and up to a few hundred node names or candidates)
# take a millisecond or two, less than handing them to a worker and back costs. Larger ones
# (whole Node objects, thousands of names) go to the worker threads, so that the loop keeps
# reading other connections meanwhile.
INLINE_BYTES = 32 * 1024


@dataclass(frozen=True)
class Listener:
    name: str  # "verbs" or "probes": the metrics' listener label
    tls: ServingCertificate | None = None
    paths: frozenset[str] | None = None  # None: every route of the app


class Closed(Exception):
    """The connection is over: the client left, or the server dropped it for ``reason``."""

    def __init__(self, reason: str = "") -> None:
        self.reason = reason


class Connections:
    """Every connection the server has open, over all its listeners."""

    def __init__(
        self, app: wsgi.WSGIApp, settings: Settings, pool: Executor, metrics: Metrics, answers: Mapping[str, Answer] | None = None
    ) -> None:
        """``answers``: path -> the verb's answer (extender.serving.app), called without WSGI."""
        self.app, self.settings, self.pool, self.metrics = app, settings, pool, metrics
        self.answers = answers or {}
        self.collector = Collector()  # off while a request is answered, run once it is sent
        self.admission = Admission(total=settings.max_connections, per_client=settings.max_connections_per_client)
        self.open: set[Connection] = set()
        self.closing = False  # shutting down: answer what is in flight, then close
        self.buffered = 0  # bytes of request bodies held, over all connections
        self.all_closed = asyncio.Event()
        self.all_closed.set()

    async def serve(self, listener: Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        if not peer:  # gone before we looked
            writer.transport.abort()
            return
        client = peer[0]
        refused = "shutting down" if self.closing else self.admission.admit(client)
        if refused:
            self.metrics.dropped.labels(refused).inc()
            writer.transport.abort()
            return
        connection = Connection(self, listener, reader, writer)
        self.open.add(connection)
        self.all_closed.clear()
        gauge = self.metrics.connections.labels(listener.name)
        gauge.inc()
        graceful = False
        try:
            await connection.run()
        except Closed as closed:
            graceful = closed.reason not in ("TLS handshake", "response timeout")  # else nothing to deliver
            if closed.reason:
                self.metrics.dropped.labels(closed.reason).inc()
        except (ConnectionError, OSError, ssl.SSLError):
            pass  # the client went away mid-write
        except Exception:  # a bug: drop this connection, keep serving the others
            log.exception("connection from %s failed", client)
        finally:
            connection.release()
            await _close(writer, graceful=graceful, timeout=self.settings.body_timeout)
            gauge.dec()
            self.admission.release(client)
            self.open.discard(connection)
            if not self.open:
                self.all_closed.set()

    def close_idle(self) -> None:
        """Shutting down: close every connection waiting for a request; the others finish theirs."""
        self.closing = True
        for connection in list(self.open):
            if connection.idle:
                connection.writer.transport.abort()

    def count(self, path: str, code: int) -> None:
        """A verb request the server answered itself (the app counts its own answers)."""
        verb = path.strip("/")
        if verb in VERBS:
            self.metrics.requests.labels(verb, str(code)).inc()


async def _close(writer: asyncio.StreamWriter, *, graceful: bool, timeout: float) -> None:
    """Flush what is written (an answer may still be in the buffer), or drop it all."""
    if graceful:
        writer.close()
        try:
            await asyncio.wait_for(writer.wait_closed(), timeout)
            return
        except (TimeoutError, ConnectionError, OSError, ssl.SSLError):
            pass
    writer.transport.abort()


class Connection:
    def __init__(self, server: Connections, listener: Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server, self.listener, self.reader, self.writer = server, listener, reader, writer
        self.settings = server.settings
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self.idle = True  # no request begun: shutdown may close it
        self.path = ""  # of the request being read or answered
        self.held = 0  # bytes of its body counted in server.buffered
        self.loop = asyncio.get_running_loop()
        self.arrived = 0.0  # the loop's time (time.monotonic) of the first byte of the request being read
        self.holding = False  # the garbage collector held off for the request being answered

    async def run(self) -> None:
        if self.listener.tls is not None:
            try:
                await self.writer.start_tls(self.listener.tls.context(), ssl_handshake_timeout=self.settings.header_timeout)
            except (TimeoutError, ssl.SSLError, OSError) as exc:
                log.debug("TLS handshake with %s failed: %r", self.writer.get_extra_info("peername"), exc)
                raise Closed("TLS handshake") from None
        while True:
            try:
                request = await self._head()
                body = await self._body(request)
            except h11.RemoteProtocolError as exc:
                # h11 hints 501 for a transfer coding it does not know; that is the client's
                # error too, and reprieve answers every client error with a 4xx (no 5xx ever).
                status = exc.error_status_hint if exc.error_status_hint < 500 else 400
                await self._refuse(status, f"malformed HTTP: {str(exc)[:200]}", "malformed HTTP")
            path = self.path
            if self.listener.paths is not None and path not in self.listener.paths:
                self.server.count(path, 404)
                await self._send(404, [JSON], wire.error_body(f"404 Not Found: {path} is not served on this port"))
            else:
                self.server.collector.take()
                self.holding = True
                try:
                    await self._answer(request, body)
                finally:
                    self._written()
            if self.h11.our_state is h11.MUST_CLOSE or self.server.closing:
                raise Closed()
            self.release()
            self.h11.start_next_cycle()
            self.idle, self.path = True, ""

    def release(self) -> None:
        self.server.buffered -= self.held
        self.held = 0

    async def _head(self) -> h11.Request:
        deadline = None
        if self.h11.trailing_data[0]:  # a pipelined request has begun already
            deadline = self._begin()
        while (event := self.h11.next_event()) is h11.NEED_DATA:
            if deadline is None:
                data = await self._read(self.settings.idle_timeout, reason="")
                if data:
                    deadline = self._begin()
            else:
                data = await self._read(deadline - self.loop.time(), reason="header timeout", answer=True)
            self.h11.receive_data(data)
        if isinstance(event, h11.ConnectionClosed):
            raise Closed()
        self.path = event.target.partition(b"?")[0].decode("latin-1")
        return event

    def _begin(self) -> float:
        self.idle = False
        self.arrived = self.loop.time()
        return self.arrived + self.settings.header_timeout

    def closed(self) -> bool:
        """Whether the client has hung up, as far as can be told without reading its next
        request: the loop has seen the end of its stream, or (plain TCP) the socket holds nothing
        but it. The scheduler closes the connection of a call it stops waiting for (Go's
        http.Client on its Timeout); reprieve answers inline, so the loop has not looked yet. Over
        TLS the socket holds records (close_notify first), and only the loop can tell."""
        if self.reader.at_eof() or self.writer.transport.is_closing():
            return True
        if self.listener.tls is not None:
            return False
        sock = self.writer.get_extra_info("socket")
        if sock is None:
            return False
        try:
            with socket.socket(fileno=os.dup(sock.fileno())) as peek:
                return peek.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except (BlockingIOError, InterruptedError):
            return False  # nothing to read: the client is still there
        except OSError:
            return True  # reset, or the socket is gone

    async def _body(self, request: h11.Request) -> bytes:
        limit = self.settings.max_body_bytes
        headers = dict(request.headers)
        if b"transfer-encoding" in headers and b"content-length" in headers:  # RFC 9112 6.1: smuggling
            await self._refuse(400, "malformed HTTP: both Transfer-Encoding and Content-Length", "malformed HTTP")
        declared = headers.get(b"content-length")
        if declared is not None and int(declared) > limit:  # h11 has checked it is a number
            await self._refuse(413, f"413 Request Entity Too Large: the body is {int(declared)} bytes, more than {limit}", "body too large")
        if self.h11.they_are_waiting_for_100_continue:
            self.writer.write(self.h11.send(h11.InformationalResponse(status_code=100, headers=[], reason="Continue")))
        deadline = self.loop.time() + self.settings.body_timeout
        chunks, size = [], 0
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                self.h11.receive_data(await self._read(deadline - self.loop.time(), reason="body timeout", answer=True))
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > limit:
                    await self._refuse(413, f"413 Request Entity Too Large: the body is more than {limit} bytes", "body too large")
                if self.server.buffered + len(event.data) > self.settings.max_buffered_bytes:
                    message = f"503 Service Unavailable: request bodies being received exceed {self.settings.max_buffered_bytes} bytes"
                    await self._refuse(503, message, "buffer limit")
                self.server.buffered += len(event.data)
                self.held += len(event.data)
                chunks.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return b"".join(chunks)
            else:  # ConnectionClosed mid-body
                raise Closed()

    async def _read(self, timeout: float, *, reason: str, answer: bool = False) -> bytes:
        # asyncio.timeout, not wait_for: no task of its own per read (a third of the server's
        # own cost per request was such bookkeeping).
        try:
            async with asyncio.timeout(max(timeout, 0)):
                return await self.reader.read(READ_SIZE)
        except TimeoutError:
            if answer:
                await self._refuse(408, f"408 Request Timeout: {reason}", reason)
            raise Closed(reason) from None

    async def _answer(self, request: h11.Request, body: bytes) -> None:
        answer = self.server.answers.get(self.path) if request.method == b"POST" else None
        if answer is not None:
            call = partial(answer, body, arrived=self.arrived, closed=self.closed)
            if len(body) <= INLINE_BYTES:
                status, payload = call()
            else:
                status, payload = await self.loop.run_in_executor(self.server.pool, call)
            await self._send(status, [JSON], payload)
            return
        env = wsgi.environ(
            request,
            body,
            scheme="https" if self.listener.tls else "http",
            server=self.writer.get_extra_info("sockname"),
            client=self.writer.get_extra_info("peername"),
        )
        status, headers, payload = await self.loop.run_in_executor(self.server.pool, wsgi.call, self.server.app, env)
        await self._send(status, headers, payload, head=request.method == b"HEAD")

    def _written(self) -> None:
        """The answer is with the transport (or the request failed): the collection held off
        while it was answered may run, before a slow reader is waited for."""
        if self.holding:
            self.holding = False
            self.server.collector.done()

    async def _refuse(self, status: int, message: str, reason: str) -> None:
        """Answer a request the server cannot take, then close: raises Closed."""
        if self.h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            self.server.count(self.path, status)
            try:
                await self._send(status, [JSON], wire.error_body(message), close=True)
            except (Closed, ConnectionError, OSError, h11.LocalProtocolError):
                pass
        raise Closed(reason)

    async def _send(self, status: int, headers: list, payload: bytes, *, close: bool = False, head: bool = False) -> None:
        framing = {"content-length", "transfer-encoding", "connection"}
        headers = [(k, v) for k, v in headers if k.lower() not in framing]
        headers.append(("Content-Length", str(len(payload))))  # for HEAD, what GET would send
        payload = b"" if head else payload
        if close or self.server.closing:
            headers.append(("Connection", "close"))
        reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
        data = self.h11.send(h11.Response(status_code=status, headers=headers, reason=reason))
        data += self.h11.send(h11.Data(data=payload)) if payload else b""
        data += self.h11.send(h11.EndOfMessage())
        self.writer.write(data)
        self._written()
        if not self.writer.transport.get_write_buffer_size():
            return  # all in the socket already (the usual answer): nothing to wait for
        try:
            async with asyncio.timeout(self.settings.body_timeout):
                await self.writer.drain()
        except TimeoutError:
            raise Closed("response timeout") from None

