"""extender.times: what people read instead of seconds since the epoch."""

from __future__ import annotations

import pytest

from extender import times


@pytest.mark.parametrize(
    "text, shown",
    [
        pytest.param("started 1795168860s since the epoch", "started 2026-11-20T10:01:00Z", id="one"),
        pytest.param("1795168800s since the epoch here vs 1795251600s since the epoch", "2026-11-20T10:00:00Z here vs 2026-11-21T09:00:00Z", id="two"),
        pytest.param("no later than -60s since the epoch", "no later than 1969-12-31T23:59:00Z", id="before-1970"),
        pytest.param("99999999999999999s since the epoch", "99999999999999999s since the epoch", id="no-calendar-date-kept-as-is"),
        pytest.param("nothing to rewrite", "nothing to rewrite", id="none"),
    ],
)
def test_readable(text, shown):
    assert times.readable(text) == shown


def test_iso():
    assert times.iso(0) == "1970-01-01T00:00:00Z"
    assert times.iso(None) is None and times.iso(float("inf")) is None and times.iso(-float("inf")) is None
