"""reprieve's side that meets the world: reading clusters, serving the verbs, the commands.

    cli.py, config.py, policy_file.py, errors.py   startup: flags, settings, the --policy file
    limits.py   how much one request may ask, and how much of it comes back
    metrics.py  Prometheus metrics, one registry per app
    apiserver.py  raw JSON over HTTP to the API server (the live view's reads, the Events' writes)
    wire.py     the kube-scheduler extender v1 wire types (served, and read by explain --request)
    kubectl.py  the kubectl-reprieve plugin: a front on cli's explain and check-policy
    state/      cluster views: snapshots, Kubernetes projections, translation, the answer ledger
    live/       the live view: list+watch against the apiserver
    events/     Kubernetes Events about the preemptions reprieve answered
    serving/    the HTTP app, its server, one module per verb, logs
    commands/   explain, check-policy (on a snapshot or a live cluster read once), simulate

Layers import one way, each only from those below it; parts on one line import nothing of
each other (docs/layout.md; tests/unit/test_layers.py holds it):

    kubectl
    cli
    serving, commands
    wire, policy_file, live, events
    state
    config, metrics, apiserver
    errors, limits

Any of them may import policy; policy imports none of them.
"""
