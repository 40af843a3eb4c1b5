"""The live cluster view: list+watch of Pods, Nodes, PodDisruptionBudgets and PriorityClasses.

    changes     pure: a watch event or listed object -> the record change it means
    store       the records per kind, and the immutable ClusterView published from them
    reflector   one thread per kind: list, remember resourceVersion, watch, relist on 410
    cache       LiveCluster: the ClusterSource the verbs read, with readiness and staleness
    lag         how far the view trails the API server

It reads through extender.apiserver: paginated lists and watch streams (no client model classes).
"""
