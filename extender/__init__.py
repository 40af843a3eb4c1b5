"""reprieve's HTTP side: wire models, cluster state, the Flask app and the CLI.

Layers import one way: cli -> server -> app -> verbs -> (wire, translate, cluster) -> policy.
"""
