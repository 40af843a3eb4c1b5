"""The end-to-end session: one real control plane (tests/e2e/controlplane.py) for all scenarios.

The toolchain is built from the Go module proxy on first use. If it cannot be built the run
fails with the reason; it is never skipped in CI. A developer may opt out locally with
REPRIEVE_SKIP_E2E=1 (refused when CI is set).
"""

from __future__ import annotations

import os
import uuid

import pytest

from tests.e2e.controlplane import ControlPlane, StartupError, build_toolchain
from tests.e2e.faulted import reprieve_names
from tests.e2e.lagged import DELAYS, LaggedPairs, scheduler_name
from tests.e2e.scenario import Scenario


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def toolchain():
    """The upstream binaries and helm (tests/e2e/toolchain/build.sh), built once."""
    if os.environ.get("REPRIEVE_SKIP_E2E") == "1":
        if os.environ.get("CI"):
            pytest.fail("REPRIEVE_SKIP_E2E=1 is a local opt-out; CI always runs the end-to-end tests")
        pytest.skip("REPRIEVE_SKIP_E2E=1: end-to-end tests opted out locally")
    try:
        return build_toolchain()
    except StartupError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def plane(toolchain, tmp_path_factory):
    try:
        control = ControlPlane(tmp_path_factory.mktemp("cluster"), toolchain).start()
    except StartupError as exc:
        pytest.fail(f"end-to-end control plane could not start: {exc}", pytrace=False)
    yield control
    control.stop()


@pytest.fixture(scope="session")
def lagged(plane):
    """kube-scheduler + reprieve pairs whose reprieve applies watch events late (tests/e2e/lagged.py)."""
    pairs = LaggedPairs(plane)
    yield pairs
    pairs.stop()


@pytest.fixture
def scenario(plane):
    s = Scenario(plane, f"e2e-{uuid.uuid4().hex[:8]}")
    try:
        yield s
    finally:
        s.cleanup()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On failure, attach what reprieve decided (its decision log lines) to the report.
    Measurements (a burst's, tests/e2e/burst.py, recorded as the ``burst`` property; a failover's,
    test_ha.py, as ``takeover``) and the Events a test read (``describe``, tests/e2e/test_events.py)
    are attached always: `pytest -rA` shows them for passing tests too."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        for name, value in item.user_properties:
            if name in ("burst", "describe", "takeover", "races"):
                report.sections.append((name, value))
    plane = item.funcargs.get("plane") or getattr(item.funcargs.get("scenario"), "plane", None)
    if report.failed and plane is not None:
        # The others: test_shadow.py's, the lagged pairs' (tests/e2e/lagged.py) and the fault
        # tests' rigs (tests/e2e/faulted.py).
        for name in ("reprieve", "reprieve-shadow", *(f"reprieve-{scheduler_name(d)}" for d in DELAYS), *reprieve_names()):
            decisions = [l for l in plane.log(name).splitlines() if '"logger":"reprieve.decisions"' in l]
            if decisions:
                report.sections.append((f"{name} decisions (last 10)", "\n".join(decisions[-10:])))
