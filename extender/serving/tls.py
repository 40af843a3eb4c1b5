"""The serving certificate: a server-side TLS context, rebuilt when its files change.

cert-manager (or a kubelet-projected Secret) rotates the certificate by replacing the files in
place. Each new connection asks for ``context()``; at most once a second that stats the files
and, if any changed, builds a new context from them. Connections already open keep the
context they were accepted with. A rotation caught half-way (a new certificate beside the old
key) fails to load: the last good context is kept and the next check tries again.
"""

from __future__ import annotations

import logging
import os
import ssl
import time
from collections.abc import Callable

from extender.errors import ConfigError

log = logging.getLogger("reprieve")

CHECK_EVERY = 1.0  # seconds between looks at the files


class ServingCertificate:
    def __init__(
        self,
        cert_file: str,
        key_file: str,
        client_ca_file: str | None = None,
        *,
        on_reload: Callable[[bool], None] = lambda ok: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cert, self._key, self._ca = cert_file, key_file, client_ca_file
        self.on_reload, self._clock = on_reload, clock
        try:
            self._stamp = self._stat()
            self._context = self._build()
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"TLS: cannot load {self._describe()}: {exc}") from exc
        self._checked = clock()

    @property
    def mutual(self) -> bool:
        return self._ca is not None

    def context(self) -> ssl.SSLContext:
        """The context for a new connection: the files' current contents, or the last good ones."""
        now = self._clock()
        if now - self._checked >= CHECK_EVERY:
            self._checked = now
            self._reload_if_changed()
        return self._context

    def _reload_if_changed(self) -> None:
        try:
            stamp = self._stat()
            if stamp == self._stamp:
                return
            context = self._build()
        except (OSError, ssl.SSLError) as exc:
            log.warning("TLS: keeping the current certificate, cannot load %s: %s", self._describe(), exc)
            self.on_reload(False)
            return
        self._context, self._stamp = context, stamp
        log.info("TLS: reloaded %s", self._describe())
        self.on_reload(True)

    def _files(self) -> tuple[str, ...]:
        return (self._cert, self._key) + ((self._ca,) if self._ca else ())

    def _stat(self) -> tuple[tuple[int, int, int], ...]:
        # os.stat follows symlinks: a Secret volume swaps its ..data link, which changes the inode.
        return tuple((s.st_ino, s.st_mtime_ns, s.st_size) for s in map(os.stat, self._files()))

    def _build(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self._cert, self._key)
        context.set_alpn_protocols(["http/1.1"])  # Go's client offers h2 too; reprieve speaks HTTP/1.1
        if self._ca:
            context.load_verify_locations(cafile=self._ca)
            context.verify_mode = ssl.CERT_REQUIRED
        return context

    def _describe(self) -> str:
        files = f"--tls-cert-file {self._cert}, --tls-private-key-file {self._key}"
        return files + (f", --client-ca-file {self._ca}" if self._ca else "")
