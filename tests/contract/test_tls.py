"""TLS and mutual TLS on a real `reprieve serve`: who gets in, the plain probes port, and a
certificate rotated on disk reaching new connections without a restart."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import subprocess
import sys
import time

import pytest

from tests.certs import CA
from tests.contract.test_server import metric
from tests.served import EXAMPLE, REQUESTS, call, serve
from tests.ports import free_port


def client_context(ca: CA, client=None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca.path))
    if client is not None:
        context.load_cert_chain(str(client.cert), str(client.key))
    return context


def served_serial(port: int, ca: CA) -> int:
    """The serial number of the certificate a new connection is shown."""
    from cryptography import x509

    with socket.create_connection(("127.0.0.1", port)) as raw:
        with client_context(ca).wrap_socket(raw, server_hostname="localhost") as tls:
            return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number


@pytest.fixture
def pki(tmp_path):
    ca = CA(tmp_path)
    return ca, ca.issue("reprieve", server=True), ca.issue("kube-scheduler", server=False)


def test_mutual_tls_lets_in_only_clients_with_a_certificate_the_ca_signed(tmp_path, pki):
    ca, server, scheduler = pki
    stranger = CA(tmp_path, "another-ca").issue("stranger", server=False)
    args = ("--tls-cert-file", str(server.cert), "--tls-private-key-file", str(server.key), "--client-ca-file", str(ca.path))
    with serve(tmp_path, *args, plain=True) as served:
        https = f"https://127.0.0.1:{served.port}"
        plain = f"http://127.0.0.1:{served.plain_port}"
        body = (REQUESTS / "filter.json").read_bytes()
        status, answer = call(f"{https}/filter", body, context=client_context(ca, scheduler))
        assert status == 200 and json.loads(answer)["NodeNames"] == ["node-a"]

        for who, context in (("no certificate", client_context(ca)), ("another CA's", client_context(ca, stranger))):
            with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
                call(f"{https}/filter", body, context=context)
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError, OSError)):
            call(f"http://127.0.0.1:{served.port}/filter", body)  # plain HTTP on the TLS port
        assert metric(plain, "reprieve_connections_dropped_total", reason="TLS handshake") == 3

        # The plain port: probes and metrics, never the verbs.
        assert call(f"{plain}/readyz")[0] == 200 and call(f"{plain}/healthz")[0] == 200
        assert metric(plain, "reprieve_requests_total", verb="filter", code="200") == 1
        status, answer = call(f"{plain}/filter", body)
        assert status == 404 and json.loads(answer) == {"Error": "404 Not Found: /filter is not served on this port"}
        assert '"msg":"listening on https://127.0.0.1:%d (verbs, probes and metrics, client certificates required)"' % served.port in served.output()


def test_a_rotated_certificate_reaches_new_connections_without_a_restart(tmp_path, pki):
    ca, server, _ = pki
    with serve(tmp_path, "--tls-cert-file", str(server.cert), "--tls-private-key-file", str(server.key), plain=True) as served:
        plain = f"http://127.0.0.1:{served.plain_port}"
        assert served_serial(served.port, ca) == server.serial
        kept = http.client.HTTPSConnection("127.0.0.1", served.port, context=client_context(ca), timeout=5)
        kept.request("GET", "/healthz")
        assert kept.getresponse().read() == b'{"status":"ok"}'

        rotated = ca.issue("reprieve", server=True)  # replaces both files, as cert-manager does
        deadline = time.monotonic() + 10
        while served_serial(served.port, ca) != rotated.serial:
            assert time.monotonic() < deadline, "new connections still see the old certificate after 10 s"
            time.sleep(0.2)
        assert metric(plain, "reprieve_tls_reloads_total", result="ok") == 1
        kept.request("GET", "/healthz")  # a connection from before the rotation carries on
        assert kept.getresponse().read() == b'{"status":"ok"}'
        kept.close()

        # Half a rotation (a key that does not match the certificate) keeps the last good pair.
        server.key.write_bytes(ca.issue("other", server=True).key.read_bytes())
        time.sleep(1.5)
        assert served_serial(served.port, ca) == rotated.serial
        assert metric(plain, "reprieve_tls_reloads_total", result="failed") >= 1
        assert served.proc.poll() is None


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(["--tls-cert-file", "x.crt"], "--tls-cert-file and --tls-private-key-file go together", id="cert-without-key"),
        pytest.param(["--client-ca-file", "ca.crt"], "--client-ca-file needs --tls-cert-file", id="ca-without-tls"),
        pytest.param(["--tls-cert-file", "nope.crt", "--tls-private-key-file", "nope.key"], "TLS: cannot load --tls-cert-file nope.crt", id="missing-files"),
        pytest.param(["--plain-bind", "8080"], "--plain-bind must be HOST:PORT, not '8080'", id="plain-bind-without-host"),
        pytest.param(["--header-timeout", "0"], "--header-timeout must be positive, not 0.0", id="zero-timeout"),
    ],
)
def test_bad_serving_flags_stop_startup_with_what_to_fix(args, message):
    done = subprocess.run(
        [sys.executable, "-m", "extender.cli", "serve", "--snapshot", str(EXAMPLE), "--bind", f"127.0.0.1:{free_port()}", *args],
        capture_output=True, text=True, timeout=30,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


def test_tls_flags_fall_back_to_the_environment(monkeypatch):
    from extender.cli import _parser

    for name, value in (("TLS_CERT_FILE", "/c"), ("TLS_PRIVATE_KEY_FILE", "/k"), ("CLIENT_CA_FILE", "/ca"), ("PLAIN_BIND", "0.0.0.0:8080")):
        monkeypatch.setenv(f"REPRIEVE_{name}", value)
    args = _parser().parse_args(["serve"])
    assert (args.tls_cert_file, args.tls_private_key_file, args.client_ca_file, args.plain_bind) == ("/c", "/k", "/ca", "0.0.0.0:8080")
    assert _parser().parse_args(["serve", "--plain-bind", "127.0.0.1:9"]).plain_bind == "127.0.0.1:9"
