"""Cluster views for the verbs: where they come from, and what reprieve remembers beside them.

    source      the ClusterSource protocol and the static one (a snapshot)
    snapshot    reading a cluster dump
    kube        lean pydantic projections of the Kubernetes objects reprieve reads
    translate   the one place Kubernetes objects become policy records
    ledger      reprieve's own preempt answers until the view shows them, and the Events awaited for them
    standings   queue assessment, once per view, updated from the last one
"""
