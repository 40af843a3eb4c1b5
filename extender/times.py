"""Times as people read them: ISO 8601 in UTC (``2026-11-21T09:00:00Z``).

Policy reads no clock or calendar, so its reasons give times as ``1795168860s since the
epoch``; everything reprieve shows a person (explain, Events, the decision log) rewrites them
here, the one place that does.
"""

from __future__ import annotations

import datetime
import functools
import math
import re

_EPOCH = re.compile(r"(-?\d+)s since the epoch")


def iso(seconds: float | None) -> str | None:
    """``seconds`` since the epoch as ``YYYY-MM-DDTHH:MM:SSZ``; None for None, infinity or a
    time no calendar date holds."""
    if seconds is None or math.isinf(seconds):
        return None
    try:
        return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, ValueError, OSError):  # beyond year 9999: no calendar date to give
        return None


@functools.lru_cache(maxsize=4096)
def readable(text: str) -> str:
    """``text`` with every ``Ns since the epoch`` written as ISO 8601. Cached: a preempt log
    line repeats one reason for hundreds of nodes left unsolved (policy.preempt writes it once)."""
    if "since the epoch" not in text:  # nearly every reason; a preempt log line has thousands
        return text
    return _EPOCH.sub(lambda m: iso(float(m.group(1))) or m.group(0), text)
