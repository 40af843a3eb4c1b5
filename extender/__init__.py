"""reprieve's side that meets the world: reading clusters, serving the verbs, the commands.

    cli.py, config.py, policy_file.py, errors.py   startup: flags, settings, the --policy file
    kubectl.py  the kubectl-reprieve plugin: a front on cli's explain and check-policy
    state/      cluster views: snapshots, Kubernetes projections, translation, the answer ledger
    live/       the live view: list+watch against the apiserver
    serving/    the HTTP app, its server, wire types, one module per verb, metrics and logs
    commands/   explain, check-policy (on a snapshot or a live cluster read once), simulate

Layers import one way: cli -> (serving.server, state.snapshot, live) -> serving.app ->
serving.verbs -> (serving.wire, state) -> policy.
"""
