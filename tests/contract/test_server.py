"""The server against slow and greedy clients, and its shutdown: a real `reprieve serve` on loopback."""

from __future__ import annotations

import json
import signal
import socket
import time

import pytest

from tests.served import REQUESTS, call, serve
from tests.slow import STALL, TRICKLE, SlowClients

VERBS = ("filter", "prioritize", "preempt")


def metric(base: str, name: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    text = call(f"{base}/metrics")[1].decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    raise AssertionError(f"{name}{labels} not in /metrics")


def answers(base: str) -> dict[str, tuple[int, bytes]]:
    return {verb: call(f"{base}/{verb}", (REQUESTS / f"{verb}.json").read_bytes()) for verb in VERBS}


def answers_again(base: str) -> dict[str, tuple[int, bytes]]:
    """The example answers as every later call within 30 s gets them: the first preempt answer
    stays in flight, and a preemptor asking again gets none of its earlier victims the scheduler
    does not propose (it may have deleted them): the example's then names the scheduler's own."""
    answers(base)
    return answers(base)


def read_all(sock: socket.socket, timeout: float) -> bytes:
    """What the server sends until it closes the connection (or ``timeout`` passes)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        pass
    except ConnectionResetError:
        pass
    return data


def test_fifty_slow_connections_do_not_starve_the_verbs(tmp_path):
    # 4 threads answer requests (the default); with gunicorn's threads, 4 such connections
    # took all of them. Here 25 connections trickle their head a byte a second and 25 stall
    # mid-body, and every verb is still answered, the same as without them, while they hang.
    with serve(tmp_path) as served:
        expected = answers_again(served.base)
        assert all(status == 200 for status, _ in expected.values()), expected
        with SlowClients(served.port, 50) as slow:
            time.sleep(1.5)  # every slow connection has sent something; trickles are a byte further
            assert slow.open == 50
            for _ in range(3):
                assert answers(served.base) == expected  # each call gives up after 5 s
            assert slow.open == 50 and slow.closed_by_server == 0, "the slow connections still hang"
            assert metric(served.base, "reprieve_connections", listener="verbs") >= 50


def test_a_head_or_body_that_does_not_arrive_in_time_is_answered_408_and_closed(tmp_path):
    with serve(tmp_path, "--header-timeout", "1", "--body-timeout", "1") as served:
        trickle = socket.create_connection(("127.0.0.1", served.port))
        trickle.sendall(TRICKLE[:10])
        stall = socket.create_connection(("127.0.0.1", served.port))
        stall.sendall(STALL)
        idle = socket.create_connection(("127.0.0.1", served.port))  # no byte yet: kept (idle timeout 75 s)
        for sock, reason in ((trickle, "header timeout"), (stall, "body timeout")):
            answer = read_all(sock, timeout=10)
            assert answer.startswith(b"HTTP/1.1 408 "), answer
            assert json.loads(answer.split(b"\r\n\r\n", 1)[1]) == {"Error": f"408 Request Timeout: {reason}"}
            assert metric(served.base, "reprieve_connections_dropped_total", reason=reason) == 1
        idle.settimeout(0.5)
        with pytest.raises(TimeoutError):
            idle.recv(1)  # still open: an idle keep-alive connection is not a slow request
        idle.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_all(idle, timeout=1).startswith(b"HTTP/1.1 200 OK")
        for s in (trickle, stall, idle):
            s.close()


def test_one_client_may_hold_only_so_many_connections(tmp_path):
    # Other loopback addresses stand for other clients (Linux routes all of 127/8 to lo).
    with serve(tmp_path, "--max-connections-per-client", "3") as served:
        greedy = [socket.create_connection(("127.0.0.1", served.port), source_address=("127.0.0.2", 0)) for _ in range(3)]
        time.sleep(0.3)
        assert metric(served.base, "reprieve_connections_dropped_total", reason="per-client limit") == 0
        fourth = socket.create_connection(("127.0.0.1", served.port), source_address=("127.0.0.2", 0))
        fourth.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_all(fourth, timeout=5) == b"", "refused: closed without an answer"
        assert metric(served.base, "reprieve_connections_dropped_total", reason="per-client limit") == 1
        assert answers(served.base)["filter"][0] == 200  # from 127.0.0.1: another client
        greedy[0].close()
        time.sleep(0.3)
        again = socket.create_connection(("127.0.0.1", served.port), source_address=("127.0.0.2", 0))
        again.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_all(again, timeout=1).startswith(b"HTTP/1.1 200 OK"), "one closed, one may open"
        for s in (*greedy, fourth, again):
            s.close()


def test_bad_framing_and_oversized_bodies_are_answered_before_the_app(tmp_path):
    with serve(tmp_path) as served:
        cases = {
            b"POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n": 400,
            b"POST /preempt HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999\r\n\r\n": 413,
            b"NOT HTTP\r\n\r\n": 400,
            b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n": 400,
        }
        for request, status in cases.items():
            with socket.create_connection(("127.0.0.1", served.port)) as sock:
                sock.sendall(request)
                answer = read_all(sock, timeout=5)
            assert answer.startswith(f"HTTP/1.1 {status} ".encode()), (request, answer)
            assert "Error" in json.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert metric(served.base, "reprieve_requests_total", verb="preempt", code="413") == 1
        assert answers(served.base)["preempt"][0] == 200


def test_requests_in_flight_at_sigterm_finish_and_readyz_fails_at_once(tmp_path):
    body = (REQUESTS / "preempt.json").read_bytes()
    # The request spans the 2 s delay: --http-timeout past it, or its answer would be dropped
    # as one its caller had stopped waiting for (test_callers_gone.py).
    with serve(tmp_path, "--shutdown-delay", "2", "--http-timeout", "10s") as served:
        expected = answers_again(served.base)["preempt"]
        in_flight = socket.create_connection(("127.0.0.1", served.port))
        in_flight.sendall(b"POST /preempt HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:100])
        idle = socket.create_connection(("127.0.0.1", served.port))
        time.sleep(0.3)
        served.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        status, ready = call(f"{served.base}/readyz")
        assert status == 503 and json.loads(ready)["stopping"] is True
        assert call(f"{served.base}/healthz")[0] == 200  # alive, and still answering
        time.sleep(2.5)  # past the delay: the listener is closed, the idle connection too
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", served.port), timeout=2)
        assert read_all(idle, timeout=2) == b""
        in_flight.sendall(body[100:])
        answer = read_all(in_flight, timeout=5)
        head, _, payload = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK") and b"Connection: close" in head
        assert (200, payload) == expected
        assert served.proc.wait(timeout=10) == 0
        assert '"msg":"stopped"' in served.output()


def test_bodies_being_received_share_one_memory_budget(tmp_path):
    # Each body is far below the size limit, but two at once exceed --max-buffered-bytes: the
    # one that crosses it is refused with 503; the other is received and answered.
    with serve(tmp_path, "--max-buffered-bytes", "100000") as served:
        head = b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 80000\r\n\r\n"
        first = socket.create_connection(("127.0.0.1", served.port))
        first.sendall(head + b" " * 60000)
        time.sleep(0.5)
        second = socket.create_connection(("127.0.0.1", served.port))
        second.sendall(head + b" " * 60000)
        answer = read_all(second, timeout=5)
        assert answer.startswith(b"HTTP/1.1 503 "), answer
        first.sendall(b" " * 20000)
        first.settimeout(5)
        assert first.recv(100).startswith(b"HTTP/1.1 400 "), "received whole: the app found no Pod in it"
        assert metric(served.base, "reprieve_connections_dropped_total", reason="buffer limit") == 1
        for s in (first, second):
            s.close()
