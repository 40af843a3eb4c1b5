"""The real kube-scheduler talks to reprieve over mutual TLS: its extender ``tlsConfig``
(certFile, keyFile, caFile) against reprieve's --tls-cert-file, --tls-private-key-file and
--client-ca-file; and whoever has no certificate the CA signed is refused.

Extenders are configured per scheduler process, so this module runs one more kube-scheduler
(``tls-scheduler``) and a reprieve serving its verbs over mutual TLS only, with probes and
metrics on a plain port (--plain-bind). Both start for this module only and stop when it ends.
"""

from __future__ import annotations

import json
import ssl

import pytest
import yaml

from tests.certs import CA
from tests.contract.test_server import metric
from tests.e2e.scenario import Scenario
from tests.ports import free_port
from tests.served import REQUESTS, call

TLS_SCHEDULER = "tls-scheduler"


class TLSReprieve:
    def __init__(self, plane, port: int, plain_port: int, ca: CA) -> None:
        self.plane, self.port, self.plain_port, self.ca = plane, port, plain_port, ca
        self.plain = f"http://127.0.0.1:{plain_port}"

    def decisions(self, verb: str, pod: str) -> list[dict]:
        lines = [json.loads(l) for l in self.plane.log("reprieve-tls").splitlines() if l.startswith("{")]
        return [l for l in lines if l.get("logger") == "reprieve.decisions" and l["msg"] == verb and l["pod"] == pod]


@pytest.fixture(scope="module")
def tls(plane, tmp_path_factory):
    ca = CA(tmp_path_factory.mktemp("tls"))
    server = ca.issue("reprieve", server=True)
    client = ca.issue("kube-scheduler", server=False)
    port, plain_port = free_port(), free_port()
    config = plane.scheduler_config(TLS_SCHEDULER, port)
    settings = yaml.safe_load(config.read_text())
    [extender] = settings["extenders"]
    extender["urlPrefix"] = f"https://127.0.0.1:{port}"
    extender["tlsConfig"] = {"certFile": str(client.cert), "keyFile": str(client.key), "caFile": str(ca.path)}
    extender["ignorable"] = False  # a refused handshake must fail scheduling, not fall back to stock unseen
    config.write_text(yaml.safe_dump(settings, sort_keys=False))
    args = (
        "--tls-cert-file", str(server.cert), "--tls-private-key-file", str(server.key), "--client-ca-file", str(ca.path),
        "--plain-bind", f"127.0.0.1:{plain_port}",
    )
    try:
        plane.start_reprieve("reprieve-tls", port, args, ready_port=plain_port)
        plane.start_scheduler(TLS_SCHEDULER, config, free_port())
        yield TLSReprieve(plane, port, plain_port, ca)
    finally:
        plane.stop_process(TLS_SCHEDULER)
        plane.stop_process("reprieve-tls")


def test_the_scheduler_gets_reprieves_preemption_over_mutual_tls(scenario: Scenario, tls: TLSReprieve):
    # test_preemption's QoS tie-break: two equal-priority 2-cpu pods fill a 4-cpu node, the
    # Guaranteed one younger. Stock would evict the Guaranteed pod; reprieve evicts the Burstable
    # one, so the outcome shows that the scheduler used reprieve's answer, which only TLS carried.
    n1 = scenario.node("n1", cpu="4")
    scenario.qos_tie(n1)
    scenario.synced(port=tls.plain_port)

    scenario.pod("preemptor", cpu="2", priority=10, scheduler=TLS_SCHEDULER)
    assert scenario.running("preemptor") == n1
    assert scenario.get("burstable") is None, "reprieve evicts the Burstable pod"
    assert scenario.get("guaranteed") is not None and not scenario.terminating("guaranteed")
    [line, *_] = tls.decisions("preempt", f"{scenario.ns}/preemptor")
    assert line["mode"] == "enforce" and line["nodes"][n1]["victims"] == [f"{scenario.ns}/burstable"]
    for verb in ("filter", "preempt"):
        assert metric(tls.plain, "reprieve_requests_total", verb=verb, code="200") >= 1
    assert metric(tls.plain, "reprieve_connections_dropped_total", reason="TLS handshake") == 0, "the scheduler's handshakes all succeeded"
    log = tls.plane.log(TLS_SCHEDULER)
    assert "Skipping extender" not in log and "Skipped extender" not in log


def test_a_client_without_the_cas_certificate_is_refused(tls: TLSReprieve):
    body = (REQUESTS / "filter.json").read_bytes()
    before = metric(tls.plain, "reprieve_connections_dropped_total", reason="TLS handshake")
    url = f"https://127.0.0.1:{tls.port}/filter"
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        call(url, body, context=ssl.create_default_context(cafile=str(tls.ca.path)))  # trusts reprieve, shows nothing
    with pytest.raises((ConnectionError, OSError)):
        call(f"http://127.0.0.1:{tls.port}/filter", body)  # plain HTTP on the TLS port
    assert metric(tls.plain, "reprieve_connections_dropped_total", reason="TLS handshake") == before + 2
    status, _ = call(f"{tls.plain}/filter", body)
    assert status == 404, "the plain port serves probes and metrics only"
