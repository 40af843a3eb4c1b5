"""Slow clients: connections that never finish a request, held open from a background thread.

Half send their request head one byte a second (slowloris); half send a whole head announcing
a 100 kB body, a few bytes of it, and stall. With ``reconnect``, a connection the server closes
is opened again at once, as an attacker's loop would (the benchmark holds 50 for its whole run).
"""

from __future__ import annotations

import select
import socket
import threading
import time

HEAD = b"POST /filter HTTP/1.1\r\nHost: reprieve\r\nContent-Type: application/json\r\n"
TRICKLE = HEAD + b"X-Slow: " + b"x" * 4000 + b"\r\n\r\n"  # more than an hour at a byte a second
STALL = HEAD + b"Content-Length: 100000\r\n\r\n" + b'{"Pod": {"metadata": '


class SlowClients:
    def __init__(self, port: int, count: int = 50, *, reconnect: bool = False, source: str = "127.0.0.1") -> None:
        self.port, self.count, self.reconnect, self.source = port, count, reconnect, source
        self._socks: dict[socket.socket, int] = {}  # socket -> bytes of TRICKLE sent (-1: a stalled body)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.closed_by_server = 0
        self._missing: list[bool] = []  # connections to open again (trickle or not)
        self._thread = threading.Thread(target=self._run, name="slow-clients", daemon=True)

    @property
    def open(self) -> int:
        with self._lock:
            return len(self._socks)

    def __enter__(self) -> "SlowClients":
        for i in range(self.count):
            self._connect(trickle=i % 2 == 0)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with self._lock:
            for s in self._socks:
                s.close()
            self._socks.clear()

    def _connect(self, *, trickle: bool) -> None:
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5, source_address=(self.source, 0))
        s.sendall(TRICKLE[:1] if trickle else STALL)
        s.setblocking(False)
        with self._lock:
            self._socks[s] = 1 if trickle else -1

    def _run(self) -> None:
        next_byte = time.monotonic() + 1
        while not self._stop.is_set():
            with self._lock:
                socks = list(self._socks)
            if not socks:
                self._stop.wait(0.1)
            readable = select.select(socks, [], [], 0.1)[0] if socks else []
            for s in readable:  # the server answered (408) or closed: either way, it let go
                with self._lock:
                    trickle = self._socks.pop(s) >= 0
                s.close()
                self.closed_by_server += 1
                if self.reconnect:
                    self._missing.append(trickle)
            for trickle in list(self._missing):
                try:
                    self._connect(trickle=trickle)
                    self._missing.remove(trickle)
                except OSError:
                    break  # refused (a limit): again on the next round
            if time.monotonic() >= next_byte:
                next_byte += 1
                with self._lock:
                    for s, sent in list(self._socks.items()):
                        if sent >= 0:
                            try:
                                s.send(TRICKLE[sent : sent + 1])
                                self._socks[s] = sent + 1
                            except OSError:
                                pass
