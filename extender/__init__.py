"""reprieve's HTTP side: wire models, cluster state, the Flask app and the CLI.

Layers import one way: cli -> (server, snapshot, live) -> app -> verbs -> (wire, translate,
cluster) -> policy.
"""
