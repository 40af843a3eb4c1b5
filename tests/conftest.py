from __future__ import annotations

from pathlib import Path

import pytest

from extender.state import snapshot
from extender.serving.app import create_app
from extender.state.source import StaticCluster
from extender.config import Settings

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster.yaml"


@pytest.fixture(scope="session")
def example_view():
    return snapshot.load(EXAMPLE)


@pytest.fixture
def client(example_view):
    return create_app(Settings(), cluster=StaticCluster(example_view)).test_client()
