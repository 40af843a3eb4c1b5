"""`reprieve serve` for real on loopback, started and stopped by the test."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import EXAMPLE, ROOT
from tests.ports import free_port

REQUESTS = ROOT / "examples" / "requests"


def call(url: str, data: bytes | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.fixture(scope="module")
def server():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "extender.cli", "serve", "--snapshot", str(EXAMPLE), "--bind", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if call(base + "/readyz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("reprieve serve did not become ready in 20s")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_serves_each_verb(server):
    for verb in ("filter", "prioritize", "preempt"):
        status, _ = call(f"{server}/{verb}", (REQUESTS / f"{verb}.json").read_bytes())
        assert status == 200, verb


def test_garbage_never_kills_the_worker(server):
    good = (REQUESTS / "preempt.json").read_bytes()
    call(f"{server}/preempt", good)  # asked again, as answers_again in test_server.py
    expected = call(f"{server}/preempt", good)
    for junk in (b"", b"\xff\xfe", b"{", b"[]", b'{"Pod": 5}', b"null", b'{"Pod":{},"NodeNameToMetaVictims":[]}') * 5:
        status, answer = call(f"{server}/preempt", junk)
        assert status == 400, (junk, answer)
    assert call(f"{server}/preempt", good) == expected


def test_bad_snapshot_stops_startup_naming_object_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n1}\n"
        "  status: {allocatable: {cpu: four}}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "extender.cli", "serve", "--snapshot", str(bad), "--bind", f"127.0.0.1:{free_port()}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "item 0 (Node n1): status.allocatable.cpu: 'four' is not a quantity" in done.stderr


def test_mode_comes_from_the_flag_or_the_environment(monkeypatch):
    from extender.cli import _parser

    assert _parser().parse_args(["serve"]).mode == "enforce"
    monkeypatch.setenv("REPRIEVE_MODE", "shadow")
    assert _parser().parse_args(["serve"]).mode == "shadow"
    assert _parser().parse_args(["serve", "--mode", "enforce"]).mode == "enforce"


def test_unknown_mode_stops_startup():
    done = subprocess.run(
        [sys.executable, "-m", "extender.cli", "serve", "--snapshot", str(EXAMPLE), "--mode", "dry-run", "--bind", f"127.0.0.1:{free_port()}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "--mode must be enforce or shadow, not 'dry-run'" in done.stderr
