"""The Helm chart, through a real helm (built from the Go module proxy with the e2e toolchain):
it lints, every value lands in the flag or configuration field it names, every file a flag or
the scheduler configuration names is mounted from the object that holds it, bad values stop the
render with a message naming them, and manifests/ is exactly its default render.

test_manifests.py dry-runs the renders against the real apiserver.
"""

from __future__ import annotations

import pytest
import yaml

from extender.cli import _parser
from tests.e2e.chart import ALERTS, CHART, MANIFESTS, ROOT, helm, manifests, objects, scheduler_config_text, template
from tests.e2e.controlplane import StartupError

FULL = CHART / "ci" / "full-values.yaml"
CERT_MANAGER = CHART / "ci" / "cert-manager-values.yaml"

# Flags other branches are adding to `reprieve serve` (TLS and the plain listener; Events).
# Once reprieve knows one, the test below fails until it is taken off this list.


def one(objs: list[dict], kind: str, suffix: str = "") -> dict:
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"].endswith(suffix)]
    assert len(found) == 1, f"{kind} *{suffix}: {[o['metadata']['name'] for o in found]}"
    return found[0]


def pod_spec(objs: list[dict]) -> dict:
    return one(objs, "Deployment")["spec"]["template"]["spec"]


def container(objs: list[dict], name: str) -> dict:
    [c] = [c for c in pod_spec(objs)["containers"] if c["name"] == name]
    return c


def flags(objs: list[dict]) -> dict[str, str]:
    args = container(objs, "reprieve")["args"]
    assert args[:2] == ["serve", "--in-cluster"], args
    return dict(a.split("=", 1) for a in args[2:])


def source(objs: list[dict], container_name: str, path: str) -> tuple[str, str, str]:
    """(kind, name, key) of the ConfigMap or Secret a file in a container is mounted from."""
    spec = pod_spec(objs)
    for mount in container(objs, container_name).get("volumeMounts", []):
        prefix = mount["mountPath"].rstrip("/") + "/"
        if path.startswith(prefix):
            [volume] = [v for v in spec["volumes"] if v["name"] == mount["name"]]
            if "configMap" in volume:
                return "ConfigMap", volume["configMap"]["name"], path[len(prefix):]
            if "secret" in volume:
                return "Secret", volume["secret"]["secretName"], path[len(prefix):]
    raise AssertionError(f"{path} is not mounted from a ConfigMap or Secret in container {container_name}")


def scheduler_config(objs: list[dict]) -> dict:
    return yaml.safe_load(scheduler_config_text(objs))


@pytest.fixture(scope="module", autouse=True)
def _helm(toolchain):
    """helm comes with the toolchain (and REPRIEVE_SKIP_E2E=1 opts out of it like the rest)."""


@pytest.fixture(scope="module")
def default() -> list[dict]:
    return objects(template())


@pytest.fixture(scope="module")
def full() -> list[dict]:
    return objects(template(FULL))


@pytest.mark.parametrize("values", [None, FULL, CERT_MANAGER], ids=["default", "full", "cert-manager"])
def test_helm_lint_is_clean(values):
    out = helm("lint", "--strict", str(CHART), *(["--values", str(values)] if values else []))
    assert "0 chart(s) failed" in out, out


def test_manifests_are_the_default_render():
    for name, text in manifests().items():
        assert (MANIFESTS / name).read_text() == text, f"manifests/{name} differs from the chart's render: run `make manifests`"


def test_default_is_two_leader_elected_replicas_with_a_budget_and_loopback_verbs(default):
    deployment = one(default, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    config = scheduler_config(default)
    election = config["leaderElection"]
    assert election["leaderElect"] is True and election["resourceLock"] == "leases"
    assert election["resourceNamespace"] == "reprieve" and election["resourceName"] == "reprieve-scheduler"
    # The Role lets the scheduler take exactly that Lease (system:kube-scheduler only allows "kube-scheduler").
    role = one(default, "Role", "-leader-election")
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["reprieve-scheduler"], "verbs": ["get", "update"]} in role["rules"]
    binding = one(default, "RoleBinding", "-leader-election")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": pod_spec(default)["serviceAccountName"], "namespace": "reprieve"}]

    pdb = one(default, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert deployment["spec"]["template"]["metadata"]["labels"].items() >= pdb["spec"]["selector"]["matchLabels"].items()

    f = flags(default)
    assert f["--bind"] == "127.0.0.1:8888" and f["--plain-bind"] == "0.0.0.0:8080"
    [extender] = config["extenders"]
    assert extender["urlPrefix"] == "http://127.0.0.1:8888" and "tlsConfig" not in extender
    # The cheapest stanza that keeps every promise (README, "What each verb costs").
    assert (extender["filterVerb"], extender["preemptVerb"]) == ("filter", "preempt")
    assert "prioritizeVerb" not in extender and "weight" not in extender
    reprieve = container(default, "reprieve")
    [port] = reprieve["ports"]
    assert port == {"name": "metrics", "containerPort": 8080, "protocol": "TCP"}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert reprieve[probe]["httpGet"]["port"] == "metrics", probe
    assert f["--mode"] == "enforce" and f["--events"] == "true" and "--policy" not in f
    # reprieve knows how long the scheduler waits for it (a later preempt answer is not held).
    assert f["--http-timeout"] == extender["httpTimeout"] == "2s"
    # ... and its own pod, for the Event it records when it starts with preemptions under way.
    assert {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in reprieve["env"]} == {
        "REPRIEVE_POD_NAME": "metadata.name", "REPRIEVE_POD_NAMESPACE": "metadata.namespace", "REPRIEVE_POD_UID": "metadata.uid",
    }
    assert not [o for o in default if o["kind"] == "PrometheusRule"], "off unless asked for (it needs the operator's CRD)"
    assert not [o for o in default if o["kind"] in ("Certificate", "Secret")]


def test_every_full_value_lands_in_its_flag_or_field(full):
    values = yaml.safe_load(FULL.read_text())
    f = flags(full)
    assert f == {
        "--bind": "127.0.0.1:9888",
        "--plain-bind": "0.0.0.0:9080",
        "--mode": "shadow",
        "--events": "shadow",
        "--log-level": "DEBUG",
        "--threads": "8",
        "--staleness-bound": "10",
        "--http-timeout": "1s",
        "--policy": "/etc/reprieve/policy/policy.yaml",
        "--tls-cert-file": "/etc/reprieve/tls/tls.crt",
        "--tls-private-key-file": "/etc/reprieve/tls/tls.key",
        "--client-ca-file": "/etc/reprieve/tls/ca.crt",
    }
    # The policy is examples/policy.yaml as pasted, and --policy reads it from its ConfigMap.
    kind, name, key = source(full, "reprieve", f["--policy"])
    assert kind == "ConfigMap"
    assert one(full, "ConfigMap", "-policy")["metadata"]["name"] == name
    assert one(full, "ConfigMap", "-policy")["data"][key] == (ROOT / "examples" / "policy.yaml").read_text()
    # reprieve's serving certificate and the scheduler's client certificate come from the one Secret.
    assert source(full, "reprieve", f["--tls-cert-file"]) == ("Secret", "reprieve-mtls", "tls.crt")
    assert source(full, "reprieve", f["--tls-private-key-file"]) == ("Secret", "reprieve-mtls", "tls.key")
    assert source(full, "reprieve", f["--client-ca-file"]) == ("Secret", "reprieve-mtls", "ca.crt")

    config = scheduler_config(full)
    [extender] = config["extenders"]
    assert extender["urlPrefix"] == "https://127.0.0.1:9888"
    assert (extender["prioritizeVerb"], extender["weight"], extender["ignorable"], extender["httpTimeout"]) == (
        "prioritize", 5, False, "1s"
    )
    tls = extender["tlsConfig"]
    assert {k: source(full, "kube-scheduler", v) for k, v in tls.items()} == {
        "certFile": ("Secret", "reprieve-mtls", "tls.crt"),
        "keyFile": ("Secret", "reprieve-mtls", "tls.key"),
        "caFile": ("Secret", "reprieve-mtls", "ca.crt"),
    }
    assert config["profiles"] == [{"schedulerName": "tenant-scheduler"}]
    election = values["scheduler"]["leaderElection"]
    assert config["leaderElection"] == {
        "leaderElect": True, "resourceLock": "leases", "resourceName": "tenant-scheduler", "resourceNamespace": "reprieve",
        "leaseDuration": election["leaseDuration"], "renewDeadline": election["renewDeadline"], "retryPeriod": election["retryPeriod"],
    }
    # kube-scheduler reads the configuration it is given, from the ConfigMap rendered above.
    scheduler = container(full, "kube-scheduler")
    [config_flag] = [a for a in scheduler["command"] if a.startswith("--config=")]
    assert source(full, "kube-scheduler", config_flag.split("=", 1)[1])[1:] == (one(full, "ConfigMap", "-scheduler-config")["metadata"]["name"], "scheduler-config.yaml")
    assert "-v=4" in scheduler["command"]
    assert scheduler["image"] == "registry.example.com/mirror/kube-scheduler:v1.37.2" and scheduler["imagePullPolicy"] == "Always"
    assert scheduler["resources"] == values["scheduler"]["resources"]

    reprieve = container(full, "reprieve")
    assert reprieve["image"] == "registry.example.com/platform/reprieve:0.1.0-rc1" and reprieve["imagePullPolicy"] == "Always"
    assert reprieve["resources"] == values["resources"]
    assert reprieve["ports"][0]["containerPort"] == 9080
    deployment = one(full, "Deployment")
    spec = pod_spec(full)
    assert deployment["spec"]["replicas"] == 3
    assert spec["serviceAccountName"] == "tenant-scheduler" == one(full, "ServiceAccount")["metadata"]["name"]
    for key in ("nodeSelector", "tolerations", "affinity", "imagePullSecrets", "priorityClassName"):
        assert spec[key] == values[key], key
    assert deployment["spec"]["template"]["metadata"]["labels"]["example.com/tier"] == "control-plane"
    assert deployment["spec"]["template"]["metadata"]["annotations"]["example.com/team"] == "platform"
    assert one(full, "Role", "-leader-election")["rules"][1]["resourceNames"] == ["tenant-scheduler"]


@pytest.mark.parametrize(
    "events, rbac",
    [("true", True), ("shadow", True), ("false", False)],
)
def test_events_rbac_is_create_and_patch_on_events_only_when_events_are_on(events, rbac):
    objs = objects(template(sets=(f"events={events}",)))
    assert flags(objs)["--events"] == events
    roles = [o for o in objs if o["kind"] == "ClusterRole" and o["metadata"]["name"].endswith("-events")]
    bindings = [o for o in objs if o["kind"] == "ClusterRoleBinding" and o["metadata"]["name"].endswith("-events")]
    if not rbac:
        assert roles == [] and bindings == []
        return
    [role], [binding] = roles, bindings
    assert role["rules"] == [{"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    # No other role of the chart's own mentions events.
    own = [o for o in objs if o["kind"] in ("ClusterRole", "Role") and o is not role]
    assert not [r for o in own for r in o["rules"] if "events" in r["resources"]]


def test_the_prometheus_rule_holds_the_alert_rules_file_with_its_labels():
    objs = objects(template(sets=("prometheusRule.enabled=true", "prometheusRule.labels.release=prometheus")))
    rule = one(objs, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["metadata"]["namespace"] == "reprieve"
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    assert rule["metadata"]["labels"]["app.kubernetes.io/name"] == "reprieve"
    assert rule["spec"] == yaml.safe_load(ALERTS.read_text()), "the rules as the file has them, alert templates unrendered"
    alerts = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert {"ReprieveNominatedTooLong", "ReprieveAnswersDropped", "ReprieveRestartedMidPreemption"} <= alerts
    assert "{{ $labels.reason }}" in str(rule["spec"]), "Prometheus's templates reach it as they are"


def test_cert_manager_variant_renders_a_certificate_for_the_mounted_secret():
    objs = objects(template(CERT_MANAGER))
    cert = one(objs, "Certificate")
    assert cert["apiVersion"] == "cert-manager.io/v1"
    spec = cert["spec"]
    assert spec["secretName"] == "reprieve-tls"
    assert "127.0.0.1" in spec["ipAddresses"], "the scheduler calls https://127.0.0.1"
    assert {"server auth", "client auth"} <= set(spec["usages"])
    assert spec["issuerRef"] == {"name": "reprieve-ca", "kind": "Issuer", "group": "cert-manager.io"}
    f = flags(objs)
    assert source(objs, "reprieve", f["--tls-cert-file"]) == ("Secret", spec["secretName"], "tls.crt")
    assert source(objs, "kube-scheduler", scheduler_config(objs)["extenders"][0]["tlsConfig"]["certFile"]) == ("Secret", spec["secretName"], "tls.crt")


def test_tls_without_client_auth_verifies_reprieve_but_sends_no_certificate():
    objs = objects(template(sets=("tls.enabled=true", "tls.secretName=s", "tls.clientAuth=false")))
    assert "--client-ca-file" not in flags(objs) and "--tls-cert-file" in flags(objs)
    assert scheduler_config(objs)["extenders"][0]["tlsConfig"] == {"caFile": "/etc/reprieve/tls/ca.crt"}


def test_a_policy_mapping_is_written_as_yaml():
    objs = objects(template(sets=("policy.queues[0].name=a", "policy.queues[0].weight=1")))
    assert yaml.safe_load(one(objs, "ConfigMap", "-policy")["data"]["policy.yaml"]) == {"queues": [{"name": "a", "weight": 1}]}


@pytest.mark.parametrize(
    "sets, message",
    [
        pytest.param(("mode=enforcing",), "mode", id="mode"),
        pytest.param(("events=maybe",), "events", id="events"),
        pytest.param(("replicas=2", "scheduler.leaderElection.enabled=false"), "leaderElection.enabled", id="replicas-without-election"),
        pytest.param(("tls.enabled=true",), "tls.secretName", id="tls-without-a-secret"),
        pytest.param(("tls.enabled=true", "tls.certManager.enabled=true"), "issuerRef.name", id="cert-manager-without-issuer"),
        pytest.param(("extender.httpTimeout=2",), "httpTimeout", id="timeout-not-a-duration"),
        pytest.param(("replica=2",), "replica", id="unknown-value"),
    ],
)
def test_bad_values_stop_the_render_naming_the_value(sets, message):
    with pytest.raises(StartupError) as failed:
        template(sets=sets)
    assert message in str(failed.value)


def test_rendered_flags_are_reprieve_serve_flags(default, full):
    serve = _parser()._subparsers._group_actions[0].choices["serve"]
    known = {s for action in serve._actions for s in action.option_strings}
    for objs in (default, full):
        args = container(objs, "reprieve")["args"]
        unknown = {a.split("=", 1)[0] for a in args if a.startswith("--")} - known
        assert not unknown, f"flags reprieve serve does not have: {sorted(unknown)}"
        serve.parse_args(args[1:])
