"""The Helm chart (charts/reprieve) rendered by a real helm, built from the Go module proxy with
the rest of the toolchain, and the raw manifests made from it (and the alert rules copied from it).

    python -m tests.e2e.chart manifests   # rewrite manifests/ from the chart (`make manifests`)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

import yaml

from tests.e2e.controlplane import ROOT, StartupError, build_toolchain

CHART = ROOT / "charts" / "reprieve"
MANIFESTS = ROOT / "manifests"
ALERTS = CHART / "files" / "alerts.yaml"
RELEASE = NAMESPACE = "reprieve"

HEADER = """\
# Generated from charts/reprieve by `make manifests` (helm template reprieve charts/reprieve
# --namespace reprieve, default values): change the chart, then regenerate; a test fails when
# the two differ. With Helm, install the chart instead (README, "Put it in front of a scheduler").
#
# Without Helm:
#   kubectl create namespace reprieve
#   kubectl label namespace reprieve pod-security.kubernetes.io/enforce=restricted
#   kubectl apply -f manifests/reprieve.yaml
#
# Replace the two images with your registry's build of this repository's Dockerfile and the
# kube-scheduler of your cluster's version.
"""
SCHEDULER_HEADER = """\
# Generated from charts/reprieve by `make manifests`: the scheduler configuration in
# manifests/reprieve.yaml (ConfigMap reprieve-scheduler-config), as a file of its own.
"""


@cache
def helm_binary() -> Path:
    return build_toolchain() / "helm"


def helm(*args: str) -> str:
    """Run helm with a throwaway home (no repositories, plugins or caches of the user's)."""
    with tempfile.TemporaryDirectory(prefix="reprieve-helm-") as home:
        env = {**os.environ, **{f"HELM_{d}_HOME": f"{home}/{d.lower()}" for d in ("CACHE", "CONFIG", "DATA")}}
        done = subprocess.run([str(helm_binary()), *args], capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise StartupError(f"helm {' '.join(args)} failed ({done.returncode}):\n{done.stderr}{done.stdout}")
    return done.stdout


def template(*values: Path | str, sets: tuple[str, ...] = ()) -> str:
    """`helm template` of the chart as release ``reprieve`` in namespace ``reprieve``."""
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    for v in values:
        args += ["--values", str(v)]
    for s in sets:
        args += ["--set", s]
    return helm(*args)


def objects(text: str) -> list[dict]:
    return [o for o in yaml.safe_load_all(text) if o]


def scheduler_config_text(objs: list[dict]) -> str:
    [config] = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-scheduler-config")]
    return config["data"]["scheduler-config.yaml"]


def manifests() -> dict[str, str]:
    """What manifests/ must hold: the default render, and its scheduler configuration."""
    rendered = template()
    return {
        "reprieve.yaml": HEADER + rendered,
        "scheduler-config.yaml": SCHEDULER_HEADER + scheduler_config_text(objects(rendered)),
        "alerts.yaml": ALERTS.read_text(),  # the chart's PrometheusRule holds the same rules
    }


def main(argv: list[str]) -> int:
    if argv != ["manifests"]:
        print("usage: python -m tests.e2e.chart manifests", file=sys.stderr)
        return 2
    for name, text in manifests().items():
        (MANIFESTS / name).write_text(text)
        print(f"wrote manifests/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
