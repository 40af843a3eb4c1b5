"""A real, local Kubernetes control plane for the end-to-end tests and `make cluster`.

etcd, kube-apiserver, kube-controller-manager (replicaset, disruption, job, garbage collector,
namespace controllers only), a fake kubelet for hollow nodes (tests/e2e/kubelet.py), reprieve
watching the apiserver, and two kube-schedulers: ``reprieve-scheduler`` loads
manifests/scheduler-config.yaml (reprieve in the path) and ``default-scheduler`` runs stock,
both with the same API client settings (qps/burst 1000). Everything listens on 127.0.0.1 and
lives under one work directory.

    python -m tests.e2e.controlplane up      # start in the background; .cluster/kubeconfig
    python -m tests.e2e.controlplane down    # stop it
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.e2e.client import Kube, wait_for
from tests.e2e.kubelet import FakeKubelet
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
CRDS = Path(__file__).resolve().parent / "crds"  # installed at start (_crds)
TOOLCHAIN = ROOT / "tests" / "e2e" / "toolchain" / "build.sh"
SCHEDULER_CONFIG = ROOT / "manifests" / "scheduler-config.yaml"


class StartupError(RuntimeError):
    pass


def kube_version() -> str:
    """The Kubernetes release the toolchain builds: $KUBE_VERSION, else its DEFAULT_VERSION."""
    return os.environ.get("KUBE_VERSION") or (TOOLCHAIN.parent / "DEFAULT_VERSION").read_text().strip()


def machine(started: float) -> str:
    """A benchmark's line on where and when it ran, and how long since ``started`` (monotonic)."""
    return (
        f"{platform.node()}: {os.cpu_count()} cores, Python {platform.python_version()}, kube-scheduler {kube_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, {time.monotonic() - started:.0f} s in all"
    )


# The probes and /metrics unauthenticated: the components listen on loopback only, and the
# benchmarks read the schedulers' metrics (bench/e2e.py, bench/burst.py).
OPEN_PATHS = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"


def build_toolchain() -> Path:
    """Build (or reuse) the upstream binaries; fail loudly, never skip."""
    done = subprocess.run(["bash", str(TOOLCHAIN)], capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise StartupError(f"building the end-to-end toolchain failed (tests/e2e/toolchain/build.sh):\n{tail}")
    return Path(done.stdout.strip())


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class ControlPlane:
    def __init__(self, workdir: Path, bin_dir: Path, *, reprieve_port: int = 8888, reprieve_args: tuple[str, ...] = ()) -> None:
        self.work = workdir
        self.bin = bin_dir
        self.reprieve_port = reprieve_port
        self.reprieve_args = reprieve_args
        self.procs: dict[str, subprocess.Popen] = {}
        self.ports = {name: free_port() for name in ("etcd", "etcd-peer", "apiserver", "kcm", "sched-reprieve", "sched-stock")}
        self.kubeconfig = self.work / "kubeconfig"
        self.kubelet: FakeKubelet | None = None
        self.kube: Kube | None = None
        self.timings: dict[str, float] = {}

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> "ControlPlane":
        try:
            self._certificates()
            self._etcd()
            self._apiserver()
            self.kube = Kube.from_kubeconfig(str(self.kubeconfig))
            self._crds()
            self._controller_manager()
            # Its own client: a burst's victims all end at once, each on a timer thread, and
            # the shared client's 8 connections would overflow (urllib3 warns, after the test
            # output has closed).
            self.kubelet = FakeKubelet(Kube.pooled(str(self.kubeconfig), 64))
            self.kubelet.start()
            self.start_reprieve()
            self._schedulers()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.kubelet:
            self.kubelet.stop()
        for name in reversed(list(self.procs)):
            self.stop_process(name)

    def stop_process(self, name: str, *, grace: float = 15) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def kill_process(self, name: str) -> None:
        """SIGKILL a process and everything it started (its session), as a node failure would."""
        proc = self.procs.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)

    def log(self, name: str) -> str:
        path = self.work / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # ----------------------------------------------------------------- pieces

    def _spawn(self, name: str, args: list[str], ready, timeout: float = 60) -> None:
        started = time.monotonic()
        log = open(self.work / f"{name}.log", "ab")
        self.procs[name] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=self.work, start_new_session=True)
        deadline = started + timeout
        while time.monotonic() < deadline:
            if self.procs[name].poll() is not None:
                raise StartupError(f"{name} exited with {self.procs[name].returncode}:\n{self.log(name)[-3000:]}")
            try:
                if ready():
                    self.timings[name] = time.monotonic() - started
                    return
            except Exception:
                pass
            time.sleep(0.1)
        raise StartupError(f"{name} not ready after {timeout}s:\n{self.log(name)[-3000:]}")

    def _openssl(self, *args: str) -> None:
        subprocess.run(["openssl", *args], cwd=self.work, check=True, capture_output=True)

    def _certificates(self) -> None:
        self._openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=reprieve-e2e-ca")
        for name, subject, ext in (
            ("apiserver", "/CN=kube-apiserver", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"),
            ("admin", "/O=system:masters/CN=reprieve-e2e-admin", "extendedKeyUsage=clientAuth\n"),
        ):
            (self.work / f"{name}.ext").write_text(ext + "keyUsage=critical,digitalSignature,keyEncipherment\n")
            self._openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject)
            self._openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.crt")
        self._openssl("genrsa", "-out", "sa.key", "2048")
        self._openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        w = self.work
        self.kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "e2e", "cluster": {"server": f"https://127.0.0.1:{self.ports['apiserver']}", "certificate-authority": str(w / "ca.crt")}}],
                    "users": [{"name": "admin", "user": {"client-certificate": str(w / "admin.crt"), "client-key": str(w / "admin.key")}}],
                    "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
                    "current-context": "e2e",
                }
            )
        )

    def _etcd(self) -> None:
        import urllib.request

        p, peer = self.ports["etcd"], self.ports["etcd-peer"]
        self._spawn(
            "etcd",
            [
                str(self.bin / "etcd"), "--name=e2e", f"--data-dir={self.work / 'etcd-data'}",
                f"--listen-client-urls=http://127.0.0.1:{p}", f"--advertise-client-urls=http://127.0.0.1:{p}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}", f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=e2e=http://127.0.0.1:{peer}", "--unsafe-no-fsync", "--log-level=warn",
            ],
            lambda: b'"health":"true"' in urllib.request.urlopen(f"http://127.0.0.1:{p}/health", timeout=1).read(),
        )

    @property
    def version(self) -> tuple[int, int]:
        """(major, minor) of the Kubernetes release the toolchain built (its cache folder's name)."""
        major, minor = self.bin.parent.name.lstrip("v").split(".")[:2]
        return int(major), int(minor)

    def apiserver_args(self) -> list[str]:
        w = self.work
        # The Workload API (beta in 1.37, off by default) for tests/e2e/test_workload_api.py:
        # it only admits and stores what pods with spec.schedulingGroup need; the schedulers
        # keep their defaults (that module starts its own with the gate on).
        workload = (
            ["--feature-gates=GenericWorkload=true", "--runtime-config=scheduling.k8s.io/v1beta1=true"]
            if self.version >= (1, 37) else []
        )
        return [
            str(self.bin / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={self.ports['apiserver']}",
            f"--tls-cert-file={w / 'apiserver.crt'}", f"--tls-private-key-file={w / 'apiserver.key'}",
            f"--client-ca-file={w / 'ca.crt'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={w / 'sa.pub'}", f"--service-account-signing-key-file={w / 'sa.key'}",
            "--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=RBAC",
            "--endpoint-reconciler-type=none", "--profiling=false",
            # Tests create pods straight away, without waiting for a default ServiceAccount; and
            # hollow nodes have no node lifecycle controller to lift the not-ready taint.
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            *workload,
        ]

    def _apiserver(self) -> None:
        self.start_apiserver()

    def _crds(self) -> None:
        """The CustomResourceDefinitions of tests/e2e/crds/ (coscheduling's PodGroup), established
        before reprieve starts, so that it watches them from its first list."""
        names = []
        for path in sorted(CRDS.glob("*.yaml")):
            crd = yaml.safe_load(path.read_text())
            self.kube.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
            names.append(crd["metadata"]["name"])

        def established(name: str) -> bool:
            crd = self.kube.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            return any(c["type"] == "Established" and c["status"] == "True" for c in (crd.get("status") or {}).get("conditions") or ())

        for name in names:
            wait_for(f"CRD {name} established", lambda n=name: established(n), 30)

    def _readyz(self) -> bool:
        import ssl
        import urllib.request

        ctx = ssl.create_default_context(cafile=str(self.work / "ca.crt"))
        ctx.load_cert_chain(str(self.work / "admin.crt"), str(self.work / "admin.key"))
        with urllib.request.urlopen(f"https://127.0.0.1:{self.ports['apiserver']}/readyz", context=ctx, timeout=2) as r:
            return r.read().strip() == b"ok"

    def start_apiserver(self) -> None:
        self._spawn("kube-apiserver", self.apiserver_args(), self._readyz, timeout=90)

    def kill_apiserver(self) -> None:
        """Stop the apiserver abruptly (it would otherwise hold watches open while it drains)."""
        self.stop_process("kube-apiserver", grace=0.5)

    def compact_etcd(self, *, bump: bool = False) -> int:
        """Compact etcd at its current revision (through its JSON gateway); returns the revision.
        ``bump``: first write a key of etcd's own (outside the API's /registry), so that the
        revision moves past every resourceVersion a client has seen even with the apiserver
        down: each watch resumed from one of them must fail (410 Gone) and relist."""
        import base64
        import json
        import time as clock
        import urllib.request

        base = f"http://127.0.0.1:{self.ports['etcd']}/v3/kv"

        def post(path: str, body: dict) -> dict:
            request = urllib.request.Request(f"{base}/{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as r:
                return json.loads(r.read())

        if bump:
            key, value = (base64.b64encode(t.encode()).decode() for t in ("/reprieve-e2e/compaction", str(clock.time())))
            post("put", {"key": key, "value": value})
        revision = int(post("range", {"key": "Lw=="})["header"]["revision"])  # key "/"
        post("compaction", {"revision": revision, "physical": True})
        return revision

    def _secure_healthz(self, port: int) -> bool:
        import ssl
        import urllib.request

        ctx = ssl._create_unverified_context()  # self-signed serving certs of the components
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=ctx, timeout=2) as r:
            return r.read().strip() == b"ok"

    def _component(self, binary: str, port: int) -> list[str]:
        k = str(self.kubeconfig)
        return [
            str(self.bin / binary), f"--authentication-kubeconfig={k}", f"--authorization-kubeconfig={k}",
            "--bind-address=127.0.0.1", f"--secure-port={port}", f"--cert-dir={self.work / binary}",
        ]

    def _controller_manager(self) -> None:
        port = self.ports["kcm"]
        self._spawn(
            "kube-controller-manager",
            [
                *self._component("kube-controller-manager", port), f"--kubeconfig={self.kubeconfig}", "--leader-elect=false",
                "--controllers=namespace,replicaset,disruption,job,garbagecollector", "--use-service-account-credentials=false",
            ],
            lambda: self._secure_healthz(port),
        )

    def start_reprieve(
        self, name: str = "reprieve", port: int | None = None, args: tuple[str, ...] = (), *, ready_port: int | None = None
    ) -> None:
        """The reprieve the shipped scheduler configuration points at, or (``port``) another one.
        ``ready_port``: where its /readyz is plain HTTP (its --plain-bind), when ``port`` is TLS."""
        import urllib.request

        port = port or self.reprieve_port
        if port_in_use(port):
            raise StartupError(f"127.0.0.1:{port} is taken (is `make run` still running?); reprieve needs it")
        self._spawn(
            name,
            [sys.executable, "-m", "extender.cli", "serve", "--kubeconfig", str(self.kubeconfig), "--bind", f"127.0.0.1:{port}", *(args or self.reprieve_args)],
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{ready_port or port}/readyz", timeout=1).status == 200,
        )

    def start_extender(self, name: str, command: list[str], port: int) -> None:
        """Another extender (bench/noop_extender.py, its Go twin) serving on 127.0.0.1:``port``,
        ready once its /healthz answers."""
        import urllib.request

        self._spawn(
            name,
            [*command, "--bind", f"127.0.0.1:{port}"],
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).status == 200,
        )

    def client_connection(self) -> dict:
        """Every kube-scheduler's API client: this cluster's kubeconfig, and qps/burst 1000 for
        all of them alike, so that a burst of preemptions (tests/e2e/burst.py) measures the
        schedulers and reprieve, not client-side throttling (the default is qps 50, burst 100),
        and the stock and reprieve schedulers are compared on equal terms."""
        return {"kubeconfig": str(self.kubeconfig), "qps": 1000, "burst": 1000}

    def scheduler_config(
        self, scheduler_name: str | None = None, reprieve_port: int | None = None, *, leader_election: dict | None = None
    ) -> Path:
        """manifests/scheduler-config.yaml with this cluster's client connection (kubeconfig, qps,
        burst): kube-scheduler ignores --kubeconfig when --config is given, and the manifest
        cannot know the path. The extender stanza the scheduler loads is the shipped one. Leader
        election is off (the shipped one takes a Lease in the chart's namespace, and each scheduler
        here runs alone under its name) unless ``leader_election`` gives the stanza. Another
        ``scheduler_name`` and ``reprieve_port`` make a copy for a second reprieve (extenders
        are per scheduler process, not per profile)."""
        config = yaml.safe_load(SCHEDULER_CONFIG.read_text())
        config["clientConnection"] = self.client_connection()
        config["leaderElection"] = leader_election or {"leaderElect": False}
        name = "scheduler-config.yaml"
        if scheduler_name:
            config["profiles"] = [{"schedulerName": scheduler_name}]
            config["extenders"][0]["urlPrefix"] = f"http://127.0.0.1:{reprieve_port}"
            name = f"{scheduler_name}-{reprieve_port}-config.yaml"
        path = self.work / name
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def stock_scheduler_config(self) -> Path:
        config = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": self.client_connection(),
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": "default-scheduler"}],
        }
        path = self.work / "stock-scheduler-config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def _schedulers(self) -> None:
        self.start_scheduler("reprieve-scheduler", self.scheduler_config(), self.ports["sched-reprieve"])
        self.start_scheduler("stock-scheduler", self.stock_scheduler_config(), self.ports["sched-stock"])

    def start_scheduler(self, name: str, config: Path, port: int, *, feature_gates: str = "") -> None:
        gates = [f"--feature-gates={feature_gates}"] if feature_gates else []
        self._spawn(
            name,
            [*self._component("kube-scheduler", port), f"--config={config}", "-v=4", *gates, OPEN_PATHS],
            lambda: self._secure_healthz(port),
        )

    def metrics(self, port: int) -> str:
        """The /metrics text of the component serving on ``port`` (OPEN_PATHS; its serving
        certificate is self-signed)."""
        import ssl
        import urllib.request

        with urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=ssl._create_unverified_context(), timeout=5) as r:
            return r.read().decode()


def _run(workdir: Path) -> int:
    """Start everything, mark the cluster up, and keep it up until SIGTERM or SIGINT."""
    stop = False

    def on_signal(*_):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        plane = ControlPlane(workdir, build_toolchain()).start()
    except StartupError as exc:
        (workdir / "failed").write_text(str(exc))
        return 1
    (workdir / "up").write_text(f"reprieve http://127.0.0.1:{plane.reprieve_port}\n")
    while not stop:
        time.sleep(0.5)
    plane.stop()
    return 0


def _up(workdir: Path) -> int:
    if (workdir / "controlplane.pid").exists():
        print(f"reprieve cluster: already running (see {workdir}); `make cluster-down` first", file=sys.stderr)
        return 1
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    log = open(workdir / "controlplane.log", "wb")
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.controlplane", "run", "--dir", str(workdir)],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    (workdir / "controlplane.pid").write_text(str(child.pid))
    while not (workdir / "up").exists():
        if child.poll() is not None:
            reason = (workdir / "failed").read_text() if (workdir / "failed").exists() else (workdir / "controlplane.log").read_text()[-3000:]
            (workdir / "controlplane.pid").unlink()
            print(f"reprieve cluster: failed to start:\n{reason}", file=sys.stderr)
            return 1
        time.sleep(0.2)
    print(
        f"""A local control plane is running (logs in {workdir.relative_to(ROOT)}/):
  export KUBECONFIG=$PWD/{(workdir / 'kubeconfig').relative_to(ROOT)}
  reprieve:    http://127.0.0.1:8888 (readyz, metrics), watching the apiserver
  schedulers:  reprieve-scheduler (reprieve in its path), default-scheduler (stock)

Create hollow nodes (a fake kubelet runs their pods) and pods that opt in to reprieve:
  kubectl apply -f examples/hollow-nodes.yaml
  kubectl apply -f examples/hollow-pods.yaml     # wait until both run, then:
  kubectl apply -f examples/hollow-urgent.yaml
  kubectl get pods -o wide; tail -f {(workdir / 'reprieve.log').relative_to(ROOT)}

Stop it with `make cluster-down`."""
    )
    return 0


def _down(workdir: Path) -> int:
    pid_file = workdir / "controlplane.pid"
    if not pid_file.exists():
        print("reprieve cluster: not running")
        return 0
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.2)
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    pid_file.unlink()
    print("reprieve cluster: stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.controlplane")
    parser.add_argument("command", choices=["up", "run", "down"])
    parser.add_argument("--dir", default=str(ROOT / ".cluster"))
    args = parser.parse_args(argv)
    workdir = Path(args.dir).resolve()
    return {"up": _up, "run": _run, "down": _down}[args.command](workdir)


if __name__ == "__main__":
    sys.exit(main())
