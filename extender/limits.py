"""How much one request may ask of reprieve, and how much of it comes back in errors and logs.

Generous for the largest clusters Kubernetes supports, small enough that no request can
hold a worker or memory for long. docs/input-limits.md gives the reasons for each number.
"""

from __future__ import annotations

# Bytes in a request body (HTTP 413 beyond). Node-cache requests are small (20,000 names are
# under 1 MiB); whole Node objects (nodeCacheCapable: false) are 5-15 KiB each.
MAX_BODY_BYTES = 64 * 2**20

# Nodes in one request: NodeNames, Nodes.items, or the keys of NodeNameTo(Meta)Victims
# (HTTP 413 beyond). kube-scheduler sends every node that passed its filters (all of them at
# percentageOfNodesToScore: 100), and upstream clusters are tested up to 5,000 nodes; some
# providers run 15,000.
MAX_NODES = 20_000

# Victims proposed on one node, full Pods or UIDs (HTTP 413 beyond). A node runs at most
# kubelet's maxPods (110 by default, a few hundred on the largest managed nodes).
MAX_VICTIMS_PER_NODE = 1_000

# Characters of an error message in an answer; the rest is cut and counted.
MAX_ERROR_CHARS = 1_024
