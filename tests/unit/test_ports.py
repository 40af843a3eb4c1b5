from pathlib import Path

from tests import ports


def test_ports_are_never_ephemeral_and_never_given_twice():
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    given = [ports.free_port() for _ in range(50)]
    assert all(ports._LOWEST <= port < low for port in given)
    assert len(set(given)) == len(given)
