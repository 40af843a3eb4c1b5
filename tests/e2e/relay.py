"""A loopback TCP relay the tests can cut or silence, to fault the connection reprieve watches over."""

from __future__ import annotations

import socket
import threading

from tests.ports import free_port


class Relay:
    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.port = free_port()
        self.accepting = True  # False: refuse new connections (as if the apiserver were down)
        self.silent = False  # True: keep connections open but forward nothing
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if not self.accepting:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                if not self.silent:
                    sink.sendall(data)
        except OSError:
            pass
        finally:
            # shutdown() before close(): the other direction's thread is blocked in recv() on
            # these sockets, and only shutdown() sends the FIN and wakes it.
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def cut(self) -> int:
        """Close every relayed connection now; returns how many were open."""
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
        return len(conns) // 2

    def close(self) -> None:
        self._server.close()
        self.cut()
