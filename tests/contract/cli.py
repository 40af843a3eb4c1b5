"""Running a reprieve command in process, for the tests of the commands that print reports
(explain, simulate)."""

from __future__ import annotations

import json

from extender.cli import main


def run(capsys, command: str, *args: str) -> tuple[int, str, str]:
    """``reprieve COMMAND ARGS...``: exit code, stdout, stderr."""
    code = main([command, *args])
    out, err = capsys.readouterr()
    return code, out, err


def report(capsys, command: str, *args: str) -> dict:
    """The command's ``--output json`` report; it must exit 0."""
    code, out, err = run(capsys, command, *args, "--output", "json")
    assert code == 0, err
    return json.loads(out)


def json_keys(value) -> set[str]:
    """Every key of every object in a JSON document (to check each is documented)."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.update(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found
