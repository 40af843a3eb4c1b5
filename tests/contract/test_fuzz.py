"""Thousands of malformed and mutated bodies at each verb of a real `reprieve serve`, and raw
HTTP a server must survive: never a 5xx, always a JSON error of bounded size, and the server
still answers a good request the same way afterwards.

FUZZ_EXAMPLES (bodies per verb, default 1,500) and FUZZ_SEED (default 12) make longer or
other runs: `make fuzz` sends 100,000 per verb from a new seed.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from extender.limits import MAX_ERROR_CHARS
from extender.serving.logs import LOG_TRACEBACK_CHARS
from tests import fuzzing
from tests.conftest import EXAMPLE, ROOT
from tests.ports import free_port

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "1500"))
SEED = int(os.environ.get("FUZZ_SEED", "12"))
GOOD = {verb: (ROOT / "examples" / "requests" / f"{verb}.json").read_bytes() for verb in fuzzing.VERBS}
# An error body is {"Error": "<verb>: <message>"}, the message cut to MAX_ERROR_CHARS characters
# of at most 4 UTF-8 bytes each, then "... (N more characters)".
MAX_ERROR_BODY = 4 * MAX_ERROR_CHARS + 100
# What one log line may reach: 1,000 entries of bounded fields (extender.serving.logs).
MAX_LOG_LINE = 2 * 2**20


class Served:
    """`reprieve serve --snapshot examples/cluster.yaml` on a loopback port, its log in a file."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.log = log
        self._out = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "extender.cli", "serve", "--snapshot", str(EXAMPLE), "--bind", f"127.0.0.1:{self.port}"],
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )
        self._conn: http.client.HTTPConnection | None = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if self.post("/readyz", None)[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        pytest.fail(f"reprieve serve did not become ready in 20s:\n{log.read_text()[-2000:]}")

    def post(self, path: str, body: bytes | None, content_type: str = "application/json") -> tuple[int, str, bytes]:
        """One request on a kept-alive connection (a new one if the server closed it)."""
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                if body is None:
                    self._conn.request("GET", path)
                else:
                    self._conn.request("POST", path, body=body, headers={"Content-Type": content_type})
                response = self._conn.getresponse()
                data = response.read()
                if response.will_close:
                    self._conn.close()
                    self._conn = None
                return response.status, response.getheader("Content-Type", ""), data
            except (http.client.HTTPException, ConnectionError):
                self._conn.close()
                self._conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def raw(self, data: bytes, *, close_write: bool = True) -> bytes:
        """Bytes sent on a fresh socket, and whatever comes back until the server closes or waits."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.sendall(data)
            if close_write:
                sock.shutdown(socket.SHUT_WR)
            answer = b""
            try:
                while chunk := sock.recv(65536):
                    answer += chunk
                    if _complete(answer):
                        break
            except (TimeoutError, ConnectionResetError):
                pass
        return answer

    def stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()


def _complete(answer: bytes) -> bool:
    head, sep, rest = answer.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(rest) >= int(value)
    return False


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(tmp_path_factory.mktemp("fuzz") / "reprieve.log")
    try:
        yield server
    finally:
        server.stop()


def _check(verb: str, how: str, body: bytes, status: int, content_type: str, data: bytes) -> str | None:
    """What is wrong with this answer, or None."""
    if status >= 500:
        return f"HTTP {status}"
    if content_type != "application/json":
        return f"HTTP {status} with Content-Type {content_type!r}"
    try:
        answer = orjson.loads(data)
    except orjson.JSONDecodeError:
        return f"HTTP {status} with a body that is not JSON: {data[:200]!r}"
    if status == 200:
        expected = list if verb == "prioritize" else dict
        return None if isinstance(answer, expected) else f"HTTP 200 with a {type(answer).__name__}"
    if status not in (400, 413):
        return f"HTTP {status}"
    if not isinstance(answer, dict) or not isinstance(answer.get("Error"), str):
        return f"HTTP {status} without an Error message: {data[:200]!r}"
    if len(data) > MAX_ERROR_BODY:
        return f"HTTP {status} with a {len(data)}-byte error body"
    return None


def test_mutated_bodies_never_get_a_5xx_and_errors_are_small_json(served):
    before = {verb: served.post(f"/{verb}", body) for verb, body in GOOD.items()}
    assert all(status == 200 for status, _, _ in before.values()), before
    problems, statuses = [], {}
    for verb in fuzzing.VERBS:
        for how, body in fuzzing.bodies(verb, EXAMPLES, SEED):
            status, content_type, data = served.post(f"/{verb}", body)
            statuses[status] = statuses.get(status, 0) + 1
            if (problem := _check(verb, how, body, status, content_type, data)) is not None:
                problems.append(f"{verb}: {how}: {problem}\n    body: {body[:300]!r}")
    assert not problems, f"{len(problems)} bad answers, the first:\n" + "\n".join(problems[:5])
    # Both kinds of answer were exercised: the mutations are neither all harmless nor all fatal.
    assert statuses.get(200, 0) > EXAMPLES * 0.1 and statuses.get(400, 0) > EXAMPLES * 0.5, statuses
    # The server is whole: the same good requests get the same answers. (preempt's may differ
    # for a while: reprieve remembers its answers to mutated preempts for the same victims.)
    after = {verb: served.post(f"/{verb}", body) for verb, body in GOOD.items()}
    assert after["filter"] == before["filter"] and after["prioritize"] == before["prioritize"]
    assert after["preempt"][0] == 200 and "NodeNameToMetaVictims" in orjson.loads(after["preempt"][2])
    log = served.log.read_bytes()
    assert b'"level":"error"' not in log, log[log.find(b'"level":"error"') - 200 :][:3000]
    assert b"Traceback" not in log
    assert max(len(line) for line in log.splitlines()) < MAX_LOG_LINE + LOG_TRACEBACK_CHARS


def _chunked(body: bytes) -> bytes:
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


def _request(headers: str, body: bytes = b"", path: str = "/filter") -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: reprieve\r\n{headers}\r\n".encode() + body


# Status None: any 4xx; 0: any 4xx, or the connection closed unanswered (no request line). Errors in the request line or headers are the HTTP server's to answer
# (extender/serving/connection.py: 400, 413 or 431); errors in the body reach the app, which says 400 in JSON.
RAW = [
    pytest.param(_request("Transfer-Encoding: chunked\r\n", b"zz\r\n{}\r\n0\r\n\r\n"), 400, id="chunk-size-not-hex"),
    pytest.param(_request("Transfer-Encoding: chunked\r\n", b"5\r\n{}\r\n0\r\n\r\n"), 400, id="chunk-shorter-than-its-size"),
    pytest.param(_request("Transfer-Encoding: chunked\r\n", b"ffffffffffffffffffff\r\n{}\r\n"), 400, id="chunk-size-beyond-int64"),
    pytest.param(_request("Transfer-Encoding: chunked\r\n", b"-1\r\n{}\r\n0\r\n\r\n"), 400, id="negative-chunk-size"),
    pytest.param(_request("Transfer-Encoding: chunked\r\n", b"2;\x00=\r\n{}\r\n0\r\n\r\n"), 400, id="bad-chunk-extension"),
    pytest.param(_request("Transfer-Encoding: chunked\r\n", _chunked(GOOD["filter"])[:-7]), 400, id="chunked-body-cut-short"),
    pytest.param(_request("Transfer-Encoding: chunked\r\n", _chunked(b'{"Pod":')), 400, id="chunked-json-cut-short"),
    pytest.param(_request(f"Content-Length: {len(GOOD['filter'])}\r\n", GOOD["filter"][:100]), 400, id="body-shorter-than-content-length"),
    pytest.param(_request("Content-Length: abc\r\n"), None, id="content-length-not-a-number"),
    pytest.param(_request("Content-Length: 1\r\nContent-Length: 2\r\n", b"{}"), None, id="two-content-lengths"),
    pytest.param(_request(f"Content-Length: {100 * 2**20}\r\n", b"{}"), 413, id="content-length-over-the-limit"),
    pytest.param(_request("Transfer-Encoding: chunked\r\n", b"4000000\r\n" + b" " * 1000), 400, id="chunk-over-the-limit-cut-short"),
    pytest.param(_request("Transfer-Encoding: gzip\r\n", b"{}"), None, id="unknown-transfer-coding"),
    pytest.param(b"POST /filter HTTP/1.1\r\nHost: reprieve\r\n" + b"X-Long: " + b"a" * 20_000 + b"\r\n\r\n", None, id="header-too-long"),
    pytest.param(b"POST /" + b"f" * 10_000 + b" HTTP/1.1\r\n\r\n", None, id="request-line-too-long"),
    pytest.param(b"NOT HTTP AT ALL\r\n\r\n", None, id="not-http"),
    pytest.param(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64, 0, id="tls-hello-on-plain-http"),
]


@pytest.mark.parametrize("data, status", RAW)
def test_raw_http_errors_are_4xx_and_the_server_carries_on(served, data, status):
    answer = served.raw(data)
    code = int(answer.split(b" ", 2)[1]) if answer.startswith((b"HTTP/1.1 ", b"HTTP/1.0 ")) else None
    if status == 0 and not answer:
        pass
    elif status:
        assert code == status, answer[:300]
    else:
        assert code is not None and 400 <= code < 500, answer[:300]
    head, _, body = answer.partition(b"\r\n\r\n")
    if b"application/json" in head:  # the app's own answer (the server may answer a broken request line itself)
        assert isinstance(orjson.loads(body)["Error"], str)
    assert served.post("/filter", GOOD["filter"])[0] == 200


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin-1", ""],
)
def test_content_type_is_not_what_decides(served, content_type):
    # kube-scheduler always sends application/json; curl -d sends a form type. The body decides.
    assert served.post("/filter", GOOD["filter"], content_type)[:2] == (200, "application/json")
    status, kind, data = served.post("/filter", b"a=1&b=2", content_type)
    assert (status, kind) == (400, "application/json") and "Invalid JSON" in orjson.loads(data)["Error"]


def test_a_client_gone_mid_body_leaves_the_server_answering(served):
    for _ in range(5):
        with socket.create_connection(("127.0.0.1", served.port), timeout=5) as sock:
            sock.sendall(_request(f"Content-Length: {len(GOOD['preempt'])}\r\n", GOOD["preempt"][:50], "/preempt"))
    assert served.post("/preempt", GOOD["preempt"])[0] == 200
