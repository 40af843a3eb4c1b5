"""policy/ imports only the standard library and itself, and reads no clock or randomness."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

POLICY = Path(__file__).resolve().parents[2] / "policy"
FORBIDDEN = {"random", "time", "datetime", "secrets", "uuid"}


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_policy_imports_only_stdlib_and_itself():
    files = sorted(POLICY.rglob("*.py"))
    assert len(files) > 5
    for path in files:
        for module in imports(path):
            assert module == "policy" or module in sys.stdlib_module_names, f"{path.name} imports {module}"
            assert module not in FORBIDDEN, f"{path.name} imports {module}: pass clocks and randomness in"
