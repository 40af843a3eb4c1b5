"""Initial sync, memory and watch throughput of the live cache (extender.live) at scale.

    python bench/cache.py [--pods 150000] [--nodes 5000] [--pdbs 300] [--events 50000]
                          [--life-pods 4000] [--baseline REV] [--no-tracemalloc] [--profile]

A real API server plus etcd holding 150,000 pods does not fit a 2-core CI machine, so this
replays recorded-shape LIST and WATCH bodies instead: a subprocess generates v1 Pods (~4-5 KB
of JSON each, like ``kubectl get pods -o json`` items: managedFields, ownerReferences, probes,
tolerations, conditions, containerStatuses), v1 Nodes (~10 KB, with images), policy/v1
PodDisruptionBudgets and scheduling.k8s.io/v1 PriorityClasses, and serves them from a small
HTTP/1.1 server on 127.0.0.1 that answers what the reflectors ask: paginated LIST (limit,
continue, metadata.resourceVersion) and WATCH (chunked, one JSON event per line, one chunk
per event, resourceVersion, timeoutSeconds, allowWatchBookmarks).

Each measurement runs in a fresh child process against that server, so the cache's CPU and
memory are its own (the server runs on the other core):

- ready: ``LiveCluster(...).start()`` until ``ready()`` (every kind listed, first view published);
- memory: RSS after sync minus RSS before ``start()`` (gc'd; includes allocator slack), and
  in a second child the tracemalloc'd heap retained by the cache after sync (raw JSON is freed
  page by page, so it is not counted);
- watch: a burst of N pod events (ADDED/MODIFIED/DELETED) through the watch stream, timed
  until the store has applied the last one and until a published view includes it, with the
  child's CPU seconds over the same span;
- scheduled pods: then the lives of ``--life-pods`` new pods, created, bound and deleted (the
  three events a pod makes on bench/e2e.py's hollow nodes), then as many more with a kubelet's
  updates too (started, running, deletion begun, stopped: seven events), each kind timed as the
  burst and given as CPU per pod. Afterwards the published view is checked against a full
  ``ClusterView.build`` of the store's records.

The cache is built as ``reprieve serve`` builds it (extender/cli.py: ``gc.freeze()`` at the
first view).

With ``--baseline REV`` the same children also run against ``git archive REV`` (extracted to
a temporary directory), interleaved with the working tree, and the table shows both and the
ratio. Prints a Markdown table; writes nothing else (the temporary tree is removed).
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, os.environ.get("REPRIEVE_TREE") or str(HERE.parents[1]))

import orjson  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Objects


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _stamp(rng: random.Random) -> str:
    return f"2025-0{rng.randint(1, 9)}-{rng.randint(10, 28)}T{rng.randint(10, 23)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}Z"


PRIORITY_CLASSES = [
    ("system-node-critical", 2000001000, False),
    ("system-cluster-critical", 2000000000, False),
    ("high", 100000, False),
    ("standard", 1000, True),
    ("batch-low", 10, False),
]


def priority_class(name: str, value: int, default: bool) -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {
            "name": name,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
            "resourceVersion": "80",
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "generation": 1,
        },
        "value": value,
        "globalDefault": default,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": f"{name} workloads",
    }


def node(n: int, rng: random.Random) -> dict:
    name = f"worker-{n:05d}"
    zone = f"eu-west-1{'abc'[n % 3]}"
    images = []
    for i in range(rng.randint(25, 40)):
        repo = f"registry.example.com/team-{i % 12}/service-{i}"
        digest = "".join(rng.choice("0123456789abcdef") for _ in range(64))
        images.append({"names": [f"{repo}@sha256:{digest}", f"{repo}:v1.{i}.{rng.randint(0, 30)}"], "sizeBytes": rng.randint(10**7, 10**9)})
    conditions = [
        {"type": t, "status": "False", "reason": f"Kubelethas{t}", "message": f"kubelet has no {t}",
         "lastHeartbeatTime": _stamp(rng), "lastTransitionTime": _stamp(rng)}
        for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
    ] + [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
          "lastHeartbeatTime": _stamp(rng), "lastTransitionTime": _stamp(rng)}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": _uid(rng),
            "resourceVersion": str(rng.randint(10**6, 10**7)),
            "creationTimestamp": _stamp(rng),
            "labels": {
                "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/instance-type": "m6i.8xlarge", "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "m6i.8xlarge", "topology.kubernetes.io/region": "eu-west-1",
                "topology.kubernetes.io/zone": zone, "failure-domain.beta.kubernetes.io/zone": zone,
                "node-pool": f"pool-{n % 7}",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": f"i-{rng.getrandbits(60):015x}"}),
            },
        },
        "spec": {"podCIDR": f"10.{n // 256}.{n % 256}.0/24", "providerID": f"aws:///{zone}/i-{rng.getrandbits(60):015x}"},
        "status": {
            "addresses": [{"type": "InternalIP", "address": f"10.1.{n // 256}.{n % 256}"}, {"type": "Hostname", "address": name}],
            "allocatable": {"cpu": "31850m", "ephemeral-storage": "95491281146", "hugepages-1Gi": "0",
                            "hugepages-2Mi": "0", "memory": "126208848Ki", "pods": "110"},
            "capacity": {"cpu": "32", "ephemeral-storage": "103584600Ki", "hugepages-1Gi": "0",
                         "hugepages-2Mi": "0", "memory": "130490704Ki", "pods": "110"},
            "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": images,
            "nodeInfo": {"architecture": "amd64", "bootID": _uid(rng), "containerRuntimeVersion": "containerd://1.7.22",
                         "kernelVersion": "6.1.109-118.189.amzn2023.x86_64", "kubeProxyVersion": "", "kubeletVersion": "v1.31.2",
                         "machineID": f"{rng.getrandbits(128):032x}", "operatingSystem": "linux",
                         "osImage": "Amazon Linux 2023.6.20241010", "systemUUID": _uid(rng)},
        },
    }


CPU = ["50m", "100m", "250m", "500m", "1", "1500m", "2"]
MEM = ["64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"]


def _container(name: str, image: str, qos: str, rng: random.Random) -> dict:
    cpu, mem = rng.choice(CPU), rng.choice(MEM)
    if qos == "Guaranteed":
        res = {"limits": {"cpu": cpu, "memory": mem}, "requests": {"cpu": cpu, "memory": mem}}
    elif qos == "Burstable":
        res = {"limits": {"memory": mem}, "requests": {"cpu": cpu, "memory": mem}}
    else:
        res = {}
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": ["--config=/etc/app/config.yaml", "--log-level=info", f"--port={8000 + len(name)}"],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "GOMAXPROCS", "value": "2"}],
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "failureThreshold": 3,
                          "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http", "scheme": "HTTP"}, "failureThreshold": 3,
                           "periodSeconds": 5, "successThreshold": 1, "timeoutSeconds": 1},
        "resources": res,
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": [{"mountPath": "/etc/app", "name": "config", "readOnly": True},
                         {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access", "readOnly": True}],
    }


def _managed_fields(containers: list[str], stamp: str) -> list[dict]:
    spec_containers = {
        f'k:{{"name":"{c}"}}': {
            ".": {}, "f:args": {}, "f:env": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:livenessProbe": {}, "f:name": {},
            "f:ports": {".": {}, 'k:{"containerPort":8080,"protocol":"TCP"}': {".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
            "f:resources": {".": {}, "f:limits": {}, "f:requests": {}}, "f:terminationMessagePath": {}, "f:volumeMounts": {},
        }
        for c in containers
    }
    return [
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kube-controller-manager", "operation": "Update", "time": stamp,
         "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}},
                                     "f:ownerReferences": {".": {}, 'k:{"uid":"x"}': {}}},
                      "f:spec": {"f:containers": spec_containers, "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:priorityClassName": {},
                                 "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {},
                                 "f:volumes": {".": {}, 'k:{"name":"config"}': {".": {}, "f:configMap": {}, "f:name": {}}}}}},
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kubelet", "operation": "Update", "subresource": "status", "time": stamp,
         "fieldsV1": {"f:status": {"f:conditions": {'k:{"type":"ContainersReady"}': {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                                                    'k:{"type":"Ready"}': {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
                                   "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {}, "f:startTime": {}}}},
    ]


def _pod_held(containers: list[dict]) -> dict:
    """What a kubelet of 1.36 or later writes in every pod's status: what it allocated and
    actuated for the pod, its containers' requests together."""
    from policy.quantity import to_units

    total: dict[str, int] = {}
    for c in containers:
        for name, q in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] = total.get(name, 0) + to_units(name, q)
    if not total:
        return {}
    held = {name: f"{v}m" if name == "cpu" else str(v) for name, v in total.items()}
    return {"allocatedResources": held, "resources": {"requests": dict(held)}}


def _held(container: dict) -> dict:
    """What a kubelet of 1.35 or later writes in a container's status: what it allocated and
    actuated, the spec's where the pod is not being resized."""
    given = container.get("resources") or {}
    if not given.get("requests"):
        return {}
    return {"allocatedResources": dict(given["requests"]), "resources": copy.deepcopy(given)}


def pod(i: int, rng: random.Random, *, nodes: int, apps: list[tuple[str, str]]) -> dict:
    ns, app = apps[i % len(apps)]
    hash_ = f"{abs(hash(app)) % 16**10:010x}"
    name = f"{app}-{hash_[:10]}-{i:06x}"
    r = rng.random()
    qos = "Guaranteed" if r < 0.35 else "Burstable" if r < 0.9 else "BestEffort"
    names = ["app"] if rng.random() < 0.85 else ["app", "sidecar"]
    image = f"registry.example.com/{ns}/{app}:v1.{i % 40}.0"
    containers = [_container(c, image if c == "app" else "registry.example.com/mesh/proxy:1.22", qos, rng) for c in names]
    cls = rng.choices(PRIORITY_CLASSES, weights=[1, 2, 20, 60, 17])[0]
    stamp = _stamp(rng)
    pending = i % 400 == 7
    node_name = None if pending else f"worker-{rng.randrange(nodes):05d}"
    ip = f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"
    meta = {
        "name": name,
        "generateName": f"{app}-{hash_[:10]}-",
        "namespace": ns,
        "uid": _uid(rng),
        "resourceVersion": str(rng.randint(10**6, 10**7)),
        "creationTimestamp": stamp,
        "labels": {"app": app, "pod-template-hash": hash_[:10], "tier": rng.choice(["web", "api", "worker"]),
                   "app.kubernetes.io/part-of": ns},
        "annotations": {"kubectl.kubernetes.io/restartedAt": stamp, "prometheus.io/scrape": "true"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-{hash_[:10]}",
                             "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, app)), "controller": True, "blockOwnerDeletion": True}],
        "managedFields": _managed_fields(names, stamp),
    }
    if i % 331 == 5:
        meta["deletionTimestamp"] = stamp
        meta["deletionGracePeriodSeconds"] = 30
    spec = {
        "containers": containers,
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": cls[1],
        "priorityClassName": cls[0],
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
        ],
        "volumes": [
            {"name": "config", "configMap": {"defaultMode": 420, "name": f"{app}-config"}},
            {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}]}},
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    if pending:
        status = {"phase": "Pending", "qosClass": qos, "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastProbeTime": None,
             "lastTransitionTime": stamp, "message": "0/5000 nodes are available: 5000 Insufficient cpu."}]}
        if i % 800 == 7:
            status["nominatedNodeName"] = f"worker-{rng.randrange(nodes):05d}"
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
    conditions = [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp}
                  for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")]
    statuses = [
        {"containerID": f"containerd://{rng.getrandbits(256):064x}", "image": c["image"],
         "imageID": f"{c['image'].split(':')[0]}@sha256:{rng.getrandbits(256):064x}", "lastState": {}, "name": c["name"],
         "ready": True, "restartCount": rng.choice([0, 0, 0, 1, 2]), "started": True,
         "state": {"running": {"startedAt": stamp}},
         "volumeMounts": [{"mountPath": "/etc/app", "name": "config"},
                          {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access", "readOnly": True,
                           "recursiveReadOnly": "Disabled"}],
         **_held(c)}
        for c in containers
    ]
    status = {"conditions": conditions, "containerStatuses": statuses, "hostIP": "10.1.0.1", "hostIPs": [{"ip": "10.1.0.1"}],
              "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "qosClass": qos, "startTime": stamp,
              **_pod_held(containers)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def lives(first: int, count: int, rv: int, rng: random.Random, *, nodes: int, apps: list[tuple[str, str]], kubelet: bool) -> list[bytes]:
    """Watch events for ``count`` new pods scheduled and deleted, from resourceVersion ``rv`` on:
    created pending, bound by the scheduler (nodeName, PodScheduled), with a kubelet started
    (startTime, IPs, conditions, containers waiting), running and ready, then its deletion begun
    (deletionTimestamp) and its containers stopped; and deleted. In waves of 50 pods, each step
    for the whole wave before the next, as pods created together go through their lives."""
    steps = ["created", "bound", "started", "running", "deleting", "stopped", "deleted"] if kubelet else ["created", "bound", "deleted"]
    out: list[bytes] = []
    for wave in range(first, first + count, 50):
        states = {}
        for i in range(wave, min(wave + 50, first + count)):
            obj = pod(i, rng, nodes=nodes, apps=apps)
            obj["spec"].pop("nodeName", None)
            for k in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                obj["metadata"].pop(k, None)
            obj["status"] = {"phase": "Pending", "qosClass": obj["status"]["qosClass"]}
            states[i] = obj
        node_of = {i: f"worker-{rng.randrange(nodes):05d}" for i in states}
        for step in steps:
            for i, obj in states.items():
                kind = "MODIFIED"
                st = obj["status"]
                stamp = "2026-11-26T10:00:00Z"
                if step == "created":
                    kind = "ADDED"
                elif step == "bound":
                    obj["spec"]["nodeName"] = node_of[i]
                    st["conditions"] = [{"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp}]
                elif step == "started":
                    ip = f"10.200.{(i >> 8) & 255}.{i & 255}"
                    st.update(startTime=stamp, hostIP="10.1.0.1", hostIPs=[{"ip": "10.1.0.1"}], podIP=ip, podIPs=[{"ip": ip}])
                    st["conditions"] = [{"type": t, "status": v, "lastProbeTime": None, "lastTransitionTime": stamp} for t, v in (
                        ("PodReadyToStartContainers", "True"), ("Initialized", "True"), ("Ready", "False"),
                        ("ContainersReady", "False"), ("PodScheduled", "True"))]
                    st["containerStatuses"] = [{"name": c["name"], "image": c["image"], "imageID": "", "ready": False, "restartCount": 0,
                                                "started": False, "state": {"waiting": {"reason": "ContainerCreating"}}, **_held(c)}
                                               for c in obj["spec"]["containers"]]
                    st.update(_pod_held(obj["spec"]["containers"]))
                elif step == "running":
                    st["phase"] = "Running"
                    for c in st["conditions"]:
                        c["status"] = "True"
                    for cs in st["containerStatuses"]:
                        cs.update(ready=True, started=True, state={"running": {"startedAt": stamp}},
                                  containerID=f"containerd://{rng.getrandbits(256):064x}")
                elif step == "deleting":
                    obj["metadata"].update(deletionTimestamp=stamp, deletionGracePeriodSeconds=30)
                elif step == "stopped":
                    for c in st["conditions"]:
                        if c["type"] in ("Ready", "ContainersReady"):
                            c["status"] = "False"
                    for cs in st["containerStatuses"]:
                        cs.update(ready=False, started=False, state={"terminated": {"exitCode": 0, "reason": "Completed"}})
                else:
                    kind = "DELETED"
                obj["metadata"]["resourceVersion"] = str(rv)
                rv += 1
                out.append(orjson.dumps({"type": kind, "object": obj}) + b"\n")
    return out


def budget(j: int, ns: str, app: str, rng: random.Random) -> dict:
    sel = {"matchLabels": {"app": app}} if j % 5 else {"matchLabels": {"app": app}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["web", "api"]}]}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"{app}-pdb", "namespace": ns, "uid": _uid(rng), "resourceVersion": str(rng.randint(10**6, 10**7)),
                     "creationTimestamp": _stamp(rng), "generation": 1, "labels": {"app": app}},
        "spec": {"maxUnavailable": 1, "selector": sel},
        "status": {"currentHealthy": 30, "desiredHealthy": 29, "disruptionsAllowed": rng.choice([0, 1, 1, 2]), "expectedPods": 30,
                   "observedGeneration": 1, "conditions": [{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
                                                            "message": "", "lastTransitionTime": _stamp(rng), "observedGeneration": 1}]},
    }


# ---------------------------------------------------------------------------------------------
# The fake API server (subprocess)

LIST_KIND = {
    "/api/v1/pods": ("PodList", "v1"),
    "/api/v1/nodes": ("NodeList", "v1"),
    "/apis/policy/v1/poddisruptionbudgets": ("PodDisruptionBudgetList", "policy/v1"),
    "/apis/scheduling.k8s.io/v1/priorityclasses": ("PriorityClassList", "scheduling.k8s.io/v1"),
}
BASE_RV = 50_000_000


class Replay:
    """The recorded objects (serialised once) and the pod event log for the watch."""

    def __init__(self, pods: int, nodes: int, pdbs: int, events: int, life_pods: int, seed: int = 7) -> None:
        rng = random.Random(seed)
        namespaces = [f"team-{k:03d}" for k in range(120)]
        apps = [(namespaces[k % len(namespaces)], f"svc-{k:04d}") for k in range(max(1, pods // 30))]
        self.items: dict[str, list[bytes]] = {path: [] for path in LIST_KIND}
        self.items["/apis/scheduling.k8s.io/v1/priorityclasses"] = [orjson.dumps(priority_class(*pc)) for pc in PRIORITY_CLASSES]
        self.items["/api/v1/nodes"] = [orjson.dumps(node(n, rng)) for n in range(nodes)]
        self.items["/apis/policy/v1/poddisruptionbudgets"] = [
            orjson.dumps(budget(j, *apps[(j * 7) % len(apps)], rng)) for j in range(pdbs)
        ]
        pod_items = self.items["/api/v1/pods"]
        for i in range(pods):
            pod_items.append(orjson.dumps(pod(i, rng, nodes=nodes, apps=apps)))
        # The burst: 60% MODIFIED (status churn), 20% ADDED (new pods), 20% DELETED.
        lines: list[bytes] = []
        victims = rng.sample(range(pods), k=min(pods, events))
        touched = iter(victims)
        new = pods
        for e in range(events):
            rv = str(BASE_RV + 1 + e)
            r = e % 5
            if r == 4:
                obj = pod(new, rng, nodes=nodes, apps=apps)
                new += 1
                kind = "ADDED"
            else:
                obj = orjson.loads(pod_items[next(touched)])
                if r == 3:
                    kind = "DELETED"
                else:
                    kind = "MODIFIED"
                    st = obj["status"]
                    for cs in st.get("containerStatuses", ()):
                        cs["restartCount"] += 1
                    if e % 50 == 0:  # now and then a pod starts terminating
                        obj["metadata"]["deletionTimestamp"] = "2025-10-01T00:00:00Z"
            obj["metadata"]["resourceVersion"] = rv
            lines.append(orjson.dumps({"type": kind, "object": obj}) + b"\n")
        self.burst = lines
        # Then the lives of scheduled pods, each segment released after the one before
        # (/_bench/next), resourceVersions following on: without a kubelet (created, bound,
        # deleted: the hollow nodes of bench/e2e.py), then with one.
        self.segments: list[tuple[str, list[bytes]]] = []
        for name, kubelet in (("bare", False), ("kubelet", True)):
            first = BASE_RV + 1 + len(lines)
            segment = lives(new, life_pods, first, rng, nodes=nodes, apps=apps, kubelet=kubelet)
            new += life_pods
            lines = lines + segment
            self.segments.append((name, segment))
        self.log: list[bytes] = []  # events released to watchers, in resourceVersion order
        self.cond = threading.Condition()
        self.sizes = {path: sum(map(len, items)) for path, items in self.items.items()}

    def reset(self) -> None:
        with self.cond:
            self.log = []
            self.cond.notify_all()

    def release(self) -> None:
        with self.cond:
            self.log = list(self.burst)
            self.cond.notify_all()

    def release_next(self) -> tuple[str, int]:
        """The next segment of lives after the burst: (its name, its last resourceVersion)."""
        with self.cond:
            released = len(self.log) - len(self.burst)
            for name, segment in self.segments:
                if released == 0:
                    self.log.extend(segment)
                    self.cond.notify_all()
                    return name, BASE_RV + len(self.log)
                released -= len(segment)
        raise ValueError("every segment is out already")


def serve(args: argparse.Namespace) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import parse_qs, urlsplit

    started = time.perf_counter()
    replay = Replay(args.pods, args.nodes, args.pdbs, args.events, args.life_pods)
    generated = time.perf_counter() - started

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a) -> None:  # quiet
            pass

        def _send(self, body: bytes, status: int = 200) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/_bench/reset":
                replay.reset()
            elif url.path == "/_bench/burst":
                replay.release()
            elif url.path == "/_bench/next":
                name, last = replay.release_next()
                return self._send(orjson.dumps({"segment": name, "last": str(last)}))
            else:
                return self._send(b'{"message":"not found"}', 404)
            self._send(orjson.dumps({"last": str(BASE_RV + len(replay.burst))}))

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            if url.path not in LIST_KIND:
                return self._send(b'{"kind":"Status","message":"not found","code":404}', 404)
            if query.get("watch") == "true":
                return self._watch(url.path, query)
            items = replay.items[url.path]
            start = int(query.get("continue") or 0)
            limit = int(query.get("limit") or 0) or len(items)
            end = min(len(items), start + limit)
            kind, version = LIST_KIND[url.path]
            meta = {"resourceVersion": str(BASE_RV)}
            if end < len(items):
                meta["continue"] = str(end)
                meta["remainingItemCount"] = len(items) - end
            head = orjson.dumps({"kind": kind, "apiVersion": version, "metadata": meta})[:-1]
            self._send(head + b',"items":[' + b",".join(items[start:end]) + b"]}")

        def _watch(self, path: str, query: dict) -> None:
            since = int(query.get("resourceVersion") or BASE_RV)
            deadline = time.monotonic() + int(query.get("timeoutSeconds") or 1800)
            bookmarks = query.get("allowWatchBookmarks") == "true"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            sent = max(0, since - BASE_RV)  # index of the next event in the log
            last_bookmark = time.monotonic()
            try:
                while True:
                    with replay.cond:
                        pending = replay.log[sent:] if path == "/api/v1/pods" else []
                        if not pending:
                            replay.cond.wait(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
                            pending = replay.log[sent:] if path == "/api/v1/pods" else []
                    for line in pending:  # one chunk per event, written (flushed) as it goes
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    sent += len(pending)
                    now = time.monotonic()
                    if now >= deadline:
                        break
                    if bookmarks and not pending and now - last_bookmark > 5:
                        kind = LIST_KIND[path][0].removesuffix("List")
                        line = orjson.dumps({"type": "BOOKMARK", "object": {"kind": kind, "metadata": {
                            "resourceVersion": str(BASE_RV + sent)}}}) + b"\n"
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                        last_bookmark = now
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    info = {"port": httpd.server_address[1], "generate_seconds": generated,
            "bytes": replay.sizes, "counts": {p: len(v) for p, v in replay.items.items()},
            "burst_bytes": sum(map(len, replay.burst))}
    print(json.dumps(info), flush=True)
    httpd.serve_forever()


# ---------------------------------------------------------------------------------------------
# One measurement (child process)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _post(port: int, path: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST", data=b"")) as r:
        return json.loads(r.read())


def _hist(metrics, name: str) -> tuple[float, float]:
    total = count = 0.0
    for metric in metrics.registry.collect():
        for s in metric.samples:
            if s.name == f"{name}_sum":
                total = s.value
            elif s.name == f"{name}_count":
                count = s.value
    return total, count


def _digest(view) -> dict:
    """What policy reads, reduced to comparable plain values."""
    return {
        "nodes": {name: (info.node, tuple(p.uid for p in info.pods), dict(info.requested),
                         tuple((q, dict(info.requested_at_or_above(q))) for q in sorted({p.priority for p in info.pods} | {-1, 10**10})))
                  for name, info in view.nodes.items()},
        "pods": dict(view.pods),
        "nominated": {k: tuple(sorted(p.uid for p in v)) for k, v in view.nominated.items() if v},
        "budgets": {k: tuple(sorted(b.key for b in v)) for k, v in view.budgets.items() if v},
        "priority_classes": dict(view.priority_classes),
        "pod_budgets": {k: tuple(sorted(b.key for b in v)) for k, v in view.pod_budgets.items() if v},
        "budget_members": {k: tuple(sorted(p.uid for p in v)) for k, v in view.budget_members.items() if v},
    }


class _Profile:
    """--profile: per phase (the initial sync, the burst, the lives), each thread's CPU seconds
    and the collector's seconds per generation; over the burst and the lives, cProfile in the
    pod reflector and the publisher. Printed to stderr."""

    def __init__(self) -> None:
        import cProfile
        import threading

        from extender.live import cache, reflector

        self.current: str | None = "sync"
        self.gc: dict[str, dict[int, float]] = {}
        self.cpu: dict[str, dict[str, float]] = {}
        self.profiles: dict[str, dict[str, cProfile.Profile]] = {}
        self._started: float | None = None
        self._cpu0 = self._threads()
        gc.callbacks.append(self._collected)
        handle, publish, profile = reflector.Reflector._handle, cache.LiveCluster._publish_once, self

        def profiled(thread: str, work, *a):
            phase = profile.current
            if phase in (None, "sync"):
                return work(*a)
            prof = profile.profiles.setdefault(phase, {}).setdefault(thread, cProfile.Profile())
            prof.enable()
            try:
                return work(*a)
            finally:
                prof.disable()

        reflector.Reflector._handle = lambda self, *a: (
            profiled("pod reflector (_handle)", handle, self, *a) if self.kind.name == "pods" else handle(self, *a)
        )
        cache.LiveCluster._publish_once = lambda self: profiled("publisher", publish, self)
        self._lock = threading.Lock()

    def _collected(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started is not None and self.current is not None:
            spent = self.gc.setdefault(self.current, {})
            spent[info["generation"]] = spent.get(info["generation"], 0.0) + time.perf_counter() - self._started

    @staticmethod
    def _threads() -> dict[str, float]:
        import threading

        out = {}
        for thread in threading.enumerate():
            try:
                with open(f"/proc/self/task/{thread.native_id}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[thread.name] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return out

    def phase(self, name: str | None) -> None:
        now = self._threads()
        if self.current is not None:
            self.cpu[self.current] = {k: v - self._cpu0.get(k, 0.0) for k, v in now.items() if v - self._cpu0.get(k, 0.0) >= 0.01}
        self.current, self._cpu0 = name, now

    def report(self, out: dict) -> None:
        import io
        import pstats

        def say(text: str = "") -> None:
            sys.stderr.write(text + "\n")

        for phase in ("sync", "burst", "lives"):
            say(f"== {phase}: CPU seconds per thread {json.dumps({k: round(v, 2) for k, v in self.cpu.get(phase, {}).items()})}; "
                f"collector seconds per generation {json.dumps({g: round(v, 2) for g, v in sorted(self.gc.get(phase, {}).items())})}")
        say(f"== burst: {out['events']} events; lives: {2 * out['life_pods']} pods, {10 * out['life_pods']} events")
        for phase, threads in self.profiles.items():
            for thread, prof in threads.items():
                text = io.StringIO()
                pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(20)
                say(f"== {phase}, {thread}, cProfile by own time")
                say("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:6000])


def measure(args: argparse.Namespace) -> None:
    import logging
    import tracemalloc

    import kubernetes

    from extender.apiserver import ApiServer
    from extender.live.cache import LiveCluster
    from extender.metrics import Metrics
    from policy.view import ClusterView

    logging.basicConfig(level=logging.WARNING)
    profile = _Profile() if args.profile else None
    _post(args.port, "/_bench/reset")
    config = kubernetes.client.Configuration()
    config.host = f"http://127.0.0.1:{args.port}"
    api = ApiServer(config)
    metrics = Metrics()
    gc.collect()
    out: dict = {}
    if args.tracemalloc:
        tracemalloc.start()
    base_rss, base_traced = _rss(), tracemalloc.get_traced_memory()[0] if args.tracemalloc else 0
    cpu0, t0 = time.process_time(), time.perf_counter()
    # As `reprieve serve` builds it (extender/cli.py): the first view's records frozen out of
    # the collector's reach.
    cluster = LiveCluster(api, metrics=metrics, publish_interval=args.publish_interval, watch_seconds=300, on_first_view=gc.freeze)
    cluster.start()
    while not cluster.ready():
        time.sleep(0.005)
    out["ready_s"] = time.perf_counter() - t0
    out["ready_cpu_s"] = time.process_time() - cpu0
    out["pods"] = len(cluster.view().pods)
    time.sleep(0.5)  # let the publisher settle (a second build, if any, finishes)
    gc.collect()
    if args.tracemalloc:
        out["traced_bytes"] = tracemalloc.get_traced_memory()[0] - base_traced
        tracemalloc.stop()
        print(json.dumps(out), flush=True)
        os._exit(0)
    out["rss_bytes"] = _rss() - base_rss
    store = cluster._store
    publish0 = _hist(metrics, "reprieve_cache_publish_seconds")
    if profile:
        profile.phase("burst")
    last = _post(args.port, "/_bench/burst")["last"]
    cpu0, t0 = time.process_time(), time.perf_counter()
    applied = published = None
    while published is None and time.perf_counter() - t0 < 600:
        if applied is None and store._versions.get("pods") == last:
            applied = time.perf_counter() - t0
            out["applied_cpu_s"] = time.process_time() - cpu0
        if applied is not None and cluster.resource_versions().get("pods") == last:
            published = time.perf_counter() - t0
        time.sleep(0.002)
    out["applied_s"], out["published_s"] = applied, published
    out["events"] = args.events
    publish1 = _hist(metrics, "reprieve_cache_publish_seconds")
    out["publishes"] = publish1[1] - publish0[1]
    out["publish_mean_s"] = (publish1[0] - publish0[0]) / max(1.0, out["publishes"])
    # Scheduled pods' lives, one segment after the other: CPU per pod and per event.
    for _ in range(2):
        if profile:
            profile.phase("lives")
        segment = _post(args.port, "/_bench/next")
        cpu0, t0 = time.process_time(), time.perf_counter()
        while store._versions.get("pods") != segment["last"] and time.perf_counter() - t0 < 600:
            time.sleep(0.002)
        out[f"life_{segment['segment']}_cpu_s"] = time.process_time() - cpu0
        out[f"life_{segment['segment']}_s"] = time.perf_counter() - t0
        while cluster.resource_versions().get("pods") != segment["last"] and time.perf_counter() - t0 < 600:
            time.sleep(0.002)
    out["life_pods"] = args.life_pods
    if profile:
        profile.phase(None)
        profile.report(out)
    cluster.stop()
    time.sleep(0.2)
    view = cluster._view
    with store._lock:
        copies = {kind: list(records.values()) for kind, records in store._records.items()}
    full = ClusterView.build(nodes=copies["nodes"], pods=copies["pods"], budgets=copies["poddisruptionbudgets"],
                             priority_classes=copies["priorityclasses"])
    out["view_matches_full_build"] = _digest(view) == _digest(full)
    out["pods_after"] = len(view.pods)
    print(json.dumps(out), flush=True)
    os._exit(0)


# ---------------------------------------------------------------------------------------------
# Driver


def _child(tree: Path, port: int, args: argparse.Namespace, *extra: str, report: bool = False) -> dict:
    env = {**os.environ, "REPRIEVE_TREE": str(tree), "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, str(HERE), "--measure", "--port", str(port), "--events", str(args.events), "--life-pods", str(args.life_pods),
           "--publish-interval", str(args.publish_interval), *extra]
    result = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        raise SystemExit(f"measurement failed in {tree}")
    if result.stderr.strip():
        sys.stderr.write(result.stderr if report else result.stderr[-2000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--pdbs", type=int, default=300)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--life-pods", type=int, default=4_000, help="pods scheduled and deleted, per kind of life")
    parser.add_argument("--publish-interval", type=float, default=0.05, help="LiveCluster's default")
    parser.add_argument("--baseline", help="git revision to compare against (run from its `git archive`)")
    parser.add_argument("--rounds", type=int, default=1, help="measurements per tree (interleaved)")
    parser.add_argument("--no-tracemalloc", dest="tracemalloc_child", action="store_false")
    parser.add_argument("--profile", action="store_true",
                        help="one profiled measurement of the working tree instead of the table (stderr)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tracemalloc", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args)
    if args.measure:
        return measure(args)

    root = HERE.parents[1]
    trees: list[tuple[str, Path]] = []
    tmp = None
    if args.baseline:
        tmp = Path(tempfile.mkdtemp(prefix="reprieve-baseline-"))
        rev = subprocess.run(["git", "rev-parse", "--short", args.baseline], cwd=root, check=True, capture_output=True, text=True).stdout.strip()
        archive = subprocess.run(["git", "archive", args.baseline], cwd=root, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        trees.append((f"before ({rev})", tmp))
    trees.append(("after (working tree)" if args.baseline else "working tree", root))
    server = subprocess.Popen(
        [sys.executable, str(HERE), "--serve", "--pods", str(args.pods), "--nodes", str(args.nodes),
         "--pdbs", str(args.pdbs), "--events", str(args.events), "--life-pods", str(args.life_pods)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    try:
        info = json.loads(server.stdout.readline())
        port = info["port"]
        results: dict[str, list[dict]] = {label: [] for label, _ in trees}
        traced: dict[str, list[dict]] = {label: [] for label, _ in trees}
        if args.profile:
            _child(root, port, args, "--profile", report=True)
            return
        for _ in range(args.rounds):
            for label, tree in trees:
                results[label].append(_child(tree, port, args))
                if args.tracemalloc_child:
                    traced[label].append(_child(tree, port, args, "--tracemalloc"))
    finally:
        server.terminate()
        server.wait()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    report(args, info, trees, results, traced)


def report(args, info, trees, results, traced) -> None:
    pods_bytes = info["bytes"]["/api/v1/pods"]
    nodes_bytes = info["bytes"]["/api/v1/nodes"]
    print(f"Live cache at scale: {args.pods:,} pods, {args.nodes:,} nodes, {args.pdbs} PDBs, {len(PRIORITY_CLASSES)} PriorityClasses, "
          f"replayed from a fake API server (LIST pages of 500, chunked WATCH)  ")
    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, {platform.machine()}; pod JSON {pods_bytes / args.pods / 1024:.1f} KiB "
          f"avg ({pods_bytes / 2**20:.0f} MiB), node JSON {nodes_bytes / args.nodes / 1024:.1f} KiB avg; "
          f"burst of {args.events:,} pod events ({info['burst_bytes'] / 2**20:.0f} MiB); publish_interval {args.publish_interval}s; "
          f"{args.rounds} round(s), median shown\n")

    def med(values):
        values = sorted(v for v in values if v is not None)
        return values[len(values) // 2] if values else None

    def col(label, key, f=lambda r, v: v):
        return med([f(r, r.get(key)) if r.get(key) is not None else None for r in results[label]])

    labels = [label for label, _ in trees]
    per10k = lambda r, v: v / r["pods"] * 10_000 / 2**20
    metrics = [
        ("initial sync: start() to ready()", "< 60 s", lambda l: col(l, "ready_s"), "{:.1f} s", True),
        ("initial sync: CPU seconds of the cache process", "", lambda l: col(l, "ready_cpu_s"), "{:.1f} s", True),
        ("memory: RSS growth per 10,000 pods", "< 20 MB", lambda l: col(l, "rss_bytes", per10k), "{:.1f} MiB", True),
        ("memory: tracemalloc'd heap retained per 10,000 pods", "< 20 MB",
         lambda l: med([per10k(r, r["traced_bytes"]) for r in traced[l]]) if traced[l] else None, "{:.1f} MiB", True),
        ("watch: events applied per second (wall)", ">= 2,000/s/core",
         lambda l: col(l, "applied_s", lambda r, v: r["events"] / v), "{:,.0f}", False),
        ("watch: events applied per CPU-second", ">= 2,000",
         lambda l: col(l, "applied_cpu_s", lambda r, v: r["events"] / v), "{:,.0f}", False),
        ("watch: CPU per event (burst)", "<= 0.15 ms",
         lambda l: col(l, "applied_cpu_s", lambda r, v: v / r["events"] * 1000), "{:.3f} ms", True),
        ("scheduled pod, no kubelet (3 events: created, bound, deleted): CPU per pod", "",
         lambda l: col(l, "life_bare_cpu_s", lambda r, v: v / r["life_pods"] * 1000), "{:.3f} ms", True),
        ("scheduled pod with a kubelet (7 events: + started, running, deletion begun, stopped): CPU per pod", "",
         lambda l: col(l, "life_kubelet_cpu_s", lambda r, v: v / r["life_pods"] * 1000), "{:.3f} ms", True),
        ("scheduled pod with a kubelet: CPU per event", "<= 0.15 ms",
         lambda l: col(l, "life_kubelet_cpu_s", lambda r, v: v / r["life_pods"] / 7 * 1000), "{:.3f} ms", True),
        ("watch: burst until the store applied the last event", "", lambda l: col(l, "applied_s"), "{:.2f} s", True),
        ("watch: burst until a published view has the last event", "", lambda l: col(l, "published_s"), "{:.2f} s", True),
        ("views published during the burst", "", lambda l: col(l, "publishes"), "{:.0f}", None),
        ("mean time to publish a view (burst)", "", lambda l: col(l, "publish_mean_s"), "{:.3f} s", True),
        ("published view == full ClusterView.build", "", lambda l: col(l, "view_matches_full_build"), "{}", None),
    ]
    head = "| metric | target | " + " | ".join(labels) + (" | after/before |" if len(labels) == 2 else " |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, target, get, fmt, lower in metrics:
        values = [get(l) for l in labels]
        cells = [fmt.format(v) if v is not None else "n/a" for v in values]
        ratio = ""
        if len(labels) == 2:
            a, b = values
            ratio = f"{b / a:.2f}×" if isinstance(a, (int, float)) and not isinstance(a, bool) and a and b is not None else ""
        print(f"| {name} | {target} | " + " | ".join(cells) + (f" | {ratio} |" if len(labels) == 2 else " |"))


if __name__ == "__main__":
    main()
