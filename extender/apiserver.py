"""Raw JSON access to the Kubernetes API: list pages and watch streams, read with orjson; and the
few writes reprieve makes (its Events, extender.events)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import kubernetes
import orjson
import urllib3

from extender.errors import ConfigError


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class Gone(ApiError):
    """The resourceVersion is too old (HTTP 410 or a watch ERROR event with code 410): relist."""


class ApiServer:
    def __init__(self, config: kubernetes.client.Configuration) -> None:
        self._config = config
        self._host = config.host.rstrip("/")
        tls = {}
        if self._host.startswith("https"):
            tls = {
                "cert_reqs": "CERT_REQUIRED" if config.verify_ssl else "CERT_NONE",
                "ca_certs": config.ssl_ca_cert,
                "cert_file": config.cert_file,
                "key_file": config.key_file,
            }
        self._pool = urllib3.PoolManager(num_pools=2, maxsize=8, retries=False, **tls)
        self._watches: set[urllib3.BaseHTTPResponse] = set()  # open watch streams, for close()
        self._closed = False

    def close(self) -> None:
        """End every open watch now (a blocked read returns) and refuse new ones."""
        self._closed = True
        for response in list(self._watches):
            try:
                response.shutdown()
            except (RuntimeError, ValueError, OSError):
                pass  # the stream ended meanwhile and gave its connection back: nothing to end
        self._pool.clear()

    @classmethod
    def from_kubeconfig(cls, path: str, context: str | None = None) -> "ApiServer":
        config = kubernetes.client.Configuration()
        try:
            kubernetes.config.load_kube_config(config_file=path, context=context, client_configuration=config)
        except (OSError, kubernetes.config.ConfigException) as exc:
            raise ConfigError(f"kubeconfig {path}: {exc}") from exc
        return cls(config)

    @classmethod
    def in_cluster(cls) -> "ApiServer":
        config = kubernetes.client.Configuration()
        try:
            kubernetes.config.load_incluster_config(client_configuration=config)
        except kubernetes.config.ConfigException as exc:
            raise ConfigError(f"--in-cluster: {exc}") from exc
        return cls(config)

    def describe(self) -> str:
        return self._host

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "reprieve"}
        # auth_settings() runs the token refresh hook (rotated service-account tokens, exec plugins).
        bearer = self._config.auth_settings().get("BearerToken", {}).get("value")
        if bearer:
            headers["Authorization"] = bearer
        return headers

    def get(self, path: str, params: dict[str, Any], *, timeout: float) -> dict:
        response = self._pool.request(
            "GET",
            f"{self._host}{path}?{urlencode(params)}",
            headers=self._headers(),
            timeout=urllib3.Timeout(connect=5, read=timeout),
        )
        body = response.data
        if response.status != 200:
            raise _error(response.status, body)
        return orjson.loads(body)

    def write(self, method: str, path: str, body: dict, *, content_type: str = "application/json", timeout: float) -> dict:
        """One POST or PATCH with a JSON body; the answer, or ApiError. A server slower than
        ``timeout`` raises urllib3's TimeoutError, one that cannot be reached its HTTPError."""
        response = self._pool.request(
            method,
            f"{self._host}{path}",
            body=orjson.dumps(body),
            headers={**self._headers(), "Content-Type": content_type},
            timeout=urllib3.Timeout(connect=timeout, read=timeout),
        )
        if not 200 <= response.status < 300:
            raise _error(response.status, response.data)
        return orjson.loads(response.data) if response.data else {}

    def watch(
        self, path: str, params: dict[str, Any], *, read_timeout: float, on_connect: Callable[[], None] = lambda: None
    ) -> Iterator[dict]:
        """Events of a watch stream until the server ends it; a silent stream times out.

        ``on_connect`` runs once the server has accepted the watch (HTTP 200).
        """
        if self._closed:
            return
        response = self._pool.request(
            "GET",
            f"{self._host}{path}?{urlencode({**params, 'watch': 'true'})}",
            headers=self._headers(),
            timeout=urllib3.Timeout(connect=5, read=read_timeout),
            preload_content=False,
        )
        self._watches.add(response)
        try:
            if response.status != 200:
                raise _error(response.status, response.read())
            on_connect()
            yield from _lines(response)
        finally:
            self._watches.discard(response)
            response.release_conn()


def _lines(response: urllib3.BaseHTTPResponse) -> Iterator[dict]:
    """One JSON object per line, each as soon as its bytes arrive.

    Iterating an urllib3 response reads 64 KiB blocks, which holds a quiet watch's events
    back until enough of them pile up. The API server flushes every event as its own HTTP
    chunk, so read chunk by chunk (or whatever bytes are available, without chunking).
    """
    chunks = response.read_chunked(decode_content=True) if response.chunked else iter(lambda: response.read1(65536), b"")
    pending = b""
    for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield orjson.loads(line)
    if pending.strip():
        yield orjson.loads(pending)


def _error(status: int, body: bytes) -> ApiError:
    try:
        message = orjson.loads(body).get("message", "")
    except (orjson.JSONDecodeError, AttributeError):
        message = body[:200].decode(errors="replace")
    return (Gone if status == 410 else ApiError)(status, message)
