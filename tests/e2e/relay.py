"""A loopback TCP relay the tests can cut, silence or shut, to fault the connection reprieve
watches over, or the one the scheduler calls reprieve over (tests/e2e/faulted.py)."""

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
        threading.Thread(target=self._accept, args=(self._server,), daemon=True).start()

    def refuse(self) -> int:
        """Stop listening (a connection is refused: ECONNREFUSED, as if nothing ran there) and
        close the relayed connections; returns how many were open. ``listen`` undoes it."""
        # shutdown() first: close() alone leaves the socket listening while the accept thread
        # is blocked in accept() on it (Linux), and connections go on being accepted.
        try:
            self._server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._server.close()
        return self.cut()

    def listen(self) -> None:
        """Listen again on the same port, after ``refuse``."""
        self._server = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, args=(self._server,), daemon=True).start()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
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
