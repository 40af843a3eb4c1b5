"""The commands: ``reprieve explain`` (explain, explain_report, explain_table), ``check-policy`` and
``reprieve simulate`` (simulate); cluster: what explain and check-policy read, a snapshot or a
live cluster listed once."""

from __future__ import annotations

import sys


def warn(line: str) -> None:
    """A note on stderr, in the shape of reprieve's errors (``reprieve: ...``): what a command
    read but did not use, so that nothing is lost silently."""
    print(f"reprieve: {line}", file=sys.stderr)
