"""What the image contains, without a container engine: the Dockerfile's wheel, installed alone
into a clean environment, serves as the Dockerfile's non-root user with only /tmp writable.

The steps are read from the Dockerfile itself: the build stage's COPY lines (the source the
wheel is built from), its `pip wheel`, the runtime stage's `pip install` of those wheels, its
USER and ENV. What this does not prove: the base image (the host's Python runs here, not
python:3.11-slim's) and the container runtime's own sandboxing. `make image` builds the real
image where docker or podman can run.

The sandbox: a private mount namespace in which every mount but /tmp (and the kernel's
pseudo-filesystems) is read-only, HOME and the working directory unwritable, the process
running as the USER uid:gid. As root: unshare --mount, then setpriv to that uid. As a non-root
user (who cannot become another uid): a user namespace mapping it to root sets up the mounts,
then a nested one maps it back to itself, so the server runs as that non-root uid.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, ROOT
from tests.ports import free_port

DOCKERFILE = ROOT / "Dockerfile"
GOLDEN = ROOT / "tests" / "golden" / "filter-nocache"
PSEUDO = {"proc", "sysfs", "cgroup", "cgroup2", "devtmpfs", "devpts", "mqueue", "securityfs", "debugfs", "tracefs", "bpf", "pstore", "fusectl", "configfs", "binfmt_misc", "hugetlbfs", "autofs"}


def stages(dockerfile: Path) -> list[list[tuple[str, str]]]:
    """(INSTRUCTION, arguments) per stage, continuation lines joined, comments dropped."""
    text = dockerfile.read_text().replace("\\\n", " ")
    result: list[list[tuple[str, str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word.upper() == "FROM":
            result.append([])
        if result:  # (an ARG before the first FROM belongs to no stage)
            result[-1].append((word.upper(), rest.strip()))
    return result


def recipe() -> dict:
    found = stages(DOCKERFILE)
    build, runtime = found[0], found[-1]
    copies = [shlex.split(args) for word, args in build if word == "COPY"]
    assert copies and not any(c[0].startswith("--") for c in copies), f"unexpected COPY in the build stage: {copies}"
    runs = [args for word, args in build if word == "RUN"]
    assert any(r.startswith("pip wheel") and r.endswith(" .") for r in runs), f"the build stage no longer runs `pip wheel ... .`: {runs}"
    installs = [args for word, args in runtime if word == "RUN" and "pip install" in args]
    assert installs and "/wheels/*.whl" in installs[0], f"the runtime stage no longer installs /wheels/*.whl: {installs}"
    user = [args for word, args in runtime if word == "USER"]
    assert user, "the runtime stage sets no USER"
    uid, _, gid = user[-1].partition(":")
    env = {}
    for word, args in runtime:
        if word == "ENV":
            env.update(pair.split("=", 1) for pair in shlex.split(args))
    uid, gid = run_as(int(uid), int(gid or uid))
    return {"copies": copies, "uid": uid, "gid": gid, "env": env}


def copy_build_context(copies: list[list[str]], src: Path) -> None:
    """The build stage's COPY lines, from the repository into ``src`` (its WORKDIR)."""
    for *sources, dest in copies:
        for source in sources:
            origin = ROOT / source
            target = src / dest / origin.name if dest.endswith("/") or len(sources) > 1 else src / dest
            if origin.is_dir():
                shutil.copytree(origin, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, target)


def run_as(uid: int, gid: int) -> tuple[int, int]:
    """Who the sandboxed process is: the Dockerfile's USER if the test can become it (root), else itself."""
    return (uid, gid) if os.geteuid() == 0 else (os.getuid(), os.getgid())


def sandboxed(argv: list[str], *, uid: int, gid: int, cwd: str) -> list[str]:
    """``argv`` in a mount namespace where only /tmp (and pseudo-filesystems) is writable, as
    ``run_as(uid, gid)``."""
    mounts = subprocess.run(["findmnt", "-rn", "-o", "TARGET,FSTYPE"], capture_output=True, text=True, check=True).stdout
    # findmnt -r writes a space in a path as \x20.
    targets = [t.replace("\\x20", " ") for t, fs in (line.split()[:2] for line in mounts.splitlines()) if fs not in PSEUDO]
    # /tmp first becomes a mount of its own (a bind onto itself), so that / going read-only leaves it writable.
    steps = ["mount --bind /tmp /tmp"]
    for target in dict.fromkeys(targets):
        if target != "/tmp" and not target.startswith("/tmp/"):
            steps.append(f"mount -o remount,bind,ro {shlex.quote(target)}")
    steps.append(f"cd {shlex.quote(cwd)}")
    if os.geteuid() == 0:
        become = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]
        namespace = ["unshare", "--mount", "--propagation", "private"]
    else:
        namespace = ["unshare", "--map-root-user", "--mount", "--propagation", "private"]
        become = ["unshare", "--user", f"--map-user={os.getuid()}", f"--map-group={os.getgid()}"]
    script = " && ".join(steps) + " && exec " + shlex.join(become + argv)
    return [*namespace, "sh", "-c", script]


@pytest.fixture(scope="module")
def installed():
    """The Dockerfile's wheels, installed alone into a clean venv, in a tree other users can read."""
    r = recipe()
    root = Path(tempfile.mkdtemp(prefix="reprieve-image-", dir="/tmp"))
    try:
        root.chmod(0o755)
        src, wheels, venv = root / "src", root / "wheels", root / "venv"
        src.mkdir()
        copy_build_context(r["copies"], src)
        # As the Dockerfile's `pip wheel`, with pip's own cache (~/.cache/pip) instead of --no-cache-dir.
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(wheels), "."], cwd=src, check=True, timeout=300)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
        # As the Dockerfile's `pip install /wheels/*.whl`; --no-index: the wheels must be all it
        # needs. --no-compile: no .pyc (compiling the kubernetes client's took 40 s on the busy
        # 2-core machine); Python runs without them, and could not write any on the read-only root.
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-compile", "--no-index", *map(str, sorted(wheels.glob("*.whl")))],
            check=True,
            timeout=300,
            env={k: v for k, v in os.environ.items() if k not in ("PIP_FIND_LINKS", "PYTHONPATH")},  # only the wheels
        )
        shutil.copy2(EXAMPLE, root / "cluster.yaml")  # as a mounted ConfigMap would be
        unwritable = root / "home"  # HOME and working directory: root-owned, read-only to the user
        unwritable.mkdir(mode=0o555)
        yield {**r, "root": root, "venv": venv, "home": unwritable}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_sandboxed(installed, argv: list[str], **popen) -> subprocess.Popen:
    env = {"PATH": f"{installed['venv'] / 'bin'}:/usr/bin:/bin", "HOME": str(installed["home"]), **installed["env"]}
    command = sandboxed(argv, uid=installed["uid"], gid=installed["gid"], cwd=str(installed["home"]))
    return subprocess.Popen(command, env=env, start_new_session=True, **popen)


PROBE = """
import json, os, sys, tempfile
def writable(d):
    try:
        with tempfile.TemporaryFile(dir=d):
            return True
    except OSError:
        return False
import flask, h11, kubernetes, extender, policy
try:
    import pytest
    test_deps = True
except ImportError:
    test_deps = False
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "test_deps": test_deps, "extender": extender.__file__,
                  "writable": {d: writable(d) for d in sys.argv[1:]}}))
"""


def test_the_environment_is_the_images(installed):
    """Only the wheels are installed (no test dependencies, not the working tree), the user is the
    Dockerfile's, and only /tmp is writable."""
    venv = installed["venv"]
    paths = ["/tmp", str(installed["home"]), str(venv), str(venv / "lib"), "/", "/etc", "/var/tmp", str(ROOT)]
    probe = run_sandboxed(installed, [str(venv / "bin" / "python"), "-c", PROBE, *paths], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = probe.communicate(timeout=60)
    assert probe.returncode == 0, f"the sandbox could not run (needs unshare and mount; as root, setpriv): {err}"
    seen = json.loads(out)
    assert (seen["uid"], seen["gid"]) == (installed["uid"], installed["gid"])
    assert seen["test_deps"] is False
    assert seen["extender"].startswith(str(venv)), seen["extender"]
    assert seen["writable"] == {p: p == "/tmp" for p in paths}


def call(url: str, data: bytes | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read()
    except (urllib.error.HTTPError) as error:
        return error.code, error.read()


def test_reprieve_serve_starts_from_the_wheel_as_the_images_user(installed):
    port = free_port()
    argv = [str(installed["venv"] / "bin" / "reprieve"), "serve", "--snapshot", str(installed["root"] / "cluster.yaml"), "--bind", f"127.0.0.1:{port}"]
    server = run_sandboxed(installed, argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert server.poll() is None, f"reprieve serve exited {server.returncode}: {server.stdout.read().decode()}"
            try:
                if call(f"{base}/readyz")[0] == 200:
                    break
            except (urllib.error.URLError, ConnectionError):
                pass
            assert time.monotonic() < deadline, "reprieve serve did not become ready within 30 s"
            time.sleep(0.2)
        uids = {Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0] for pid in _tree(server.pid)}
        assert uids == {str(installed["uid"])}, f"processes run as uids {uids}"
        status, body = call(f"{base}/filter", (GOLDEN / "request.json").read_bytes())
        assert status == 200, body
        assert json.loads(body) == json.loads((GOLDEN / "response.json").read_bytes())
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (reprieve serves from one process; a child would show here)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [pid, *(p for c in children for p in _tree(int(c)))]
