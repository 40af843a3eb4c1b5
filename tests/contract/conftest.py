from __future__ import annotations

import pytest

from tests.contract.promql import exposed_metrics


@pytest.fixture(scope="session")
def exposed(example_view) -> dict[str, list[dict[str, str]]]:
    """What a real app's /metrics shows (tests.contract.promql.exposed_metrics)."""
    return exposed_metrics(example_view)
