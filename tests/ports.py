"""Loopback ports for servers the tests start, chosen outside the kernel's ephemeral range.

Binding port 0 hands out an *ephemeral* port. Between choosing it and the server binding it, any
outgoing connection on the machine (the apiserver dialling etcd, a client polling /readyz) may be
given that same port as its local end, and the server then fails with "address already in use"
(CI saw kube-controller-manager lose its port this way). Ports below the ephemeral range are never
handed to outgoing connections, so only another listener could take one, and a bind check rules
out those already taken.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000
_given: set[int] = set()


def _range() -> tuple[int, int]:
    """Ports this machine never uses for outgoing connections: below the ephemeral range."""
    try:
        low = int(_EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32_768  # Linux's default
    if low - 1 <= _LOWEST:
        raise RuntimeError(f"the ephemeral port range ({_EPHEMERAL}) starts at {low}: no room below it for test servers")
    return _LOWEST, low - 1


def free_port() -> int:
    """A port nothing listens on, outside the ephemeral range, not given before in this process."""
    low, high = _range()
    chooser = random.Random()  # seeded from the OS: parallel test processes draw differently
    for _ in range(200):
        port = chooser.randint(low, high)
        if port in _given:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _given.add(port)
        return port
    raise RuntimeError(f"no free loopback port found in {low}-{high} after 200 tries")
