"""extender/ imports one way: each part only from the layers below its own (docs/layout.md, "Layers").

A part is a subpackage (anything goes inside it) or a top-level module. Parts of one layer are
siblings and import nothing of each other. Imports inside functions and under TYPE_CHECKING count.
"""

from __future__ import annotations

import ast
from pathlib import Path

EXTENDER = Path(__file__).resolve().parents[2] / "extender"

# Bottom first: the order docs/layout.md writes down.
LAYERS = (
    ("errors", "limits", "times", "stall"),
    ("config", "metrics", "apiserver"),
    ("state",),
    ("wire", "policy_file", "live", "events"),
    ("serving", "commands"),
    ("cli",),
    ("kubectl",),
)
LAYER = {part: level for level, parts in enumerate(LAYERS) for part in parts}


def part_of(path: Path) -> str | None:
    """The part a file belongs to; None for extender/__init__.py."""
    first = path.relative_to(EXTENDER).parts[0]
    return None if first == "__init__.py" else first.removesuffix(".py")


def imported_parts(tree: ast.AST, package: list[str]) -> list[tuple[ast.stmt, str]]:
    """(statement, part) for every part of extender imported in ``tree``; ``package`` is the
    importing file's package (``["extender", "serving"]``), for relative imports."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name.split(".") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = [*base, *(node.module.split(".") if node.module else [])]
            # from extender import cli: the names imported are the parts
            modules = [[*module, alias.name] for alias in node.names] if module == ["extender"] else [module]
        else:
            continue
        found += [(node, dotted[1]) for dotted in modules if dotted[0] == "extender" and len(dotted) > 1]
    return sorted(found, key=lambda f: f[0].lineno)


def breaks(part: str, tree: ast.AST, package: list[str]) -> list[str]:
    """What ``part`` imports against the layers, in words."""
    found = []
    for node, other in imported_parts(tree, package):
        said = f"line {node.lineno}: {ast.unparse(node)}"
        if other == part:
            continue
        if other not in LAYER:
            found.append(f"{said}: extender.{other} has no layer in LAYERS")
        elif LAYER[other] >= LAYER[part]:
            where = "beside" if LAYER[other] == LAYER[part] else "above"
            found.append(f"{said}: {other} (layer {LAYER[other]}) is {where} {part} (layer {LAYER[part]})")
    return found


def test_every_part_of_extender_has_a_layer():
    parts = {part_of(p) for p in EXTENDER.rglob("*.py")} - {None}
    assert parts == set(LAYER), f"give these a layer: {sorted(parts - set(LAYER))}; gone: {sorted(set(LAYER) - parts)}"


def test_extender_imports_only_from_the_layers_below():
    files = sorted(EXTENDER.rglob("*.py"))
    assert len(files) > 30
    found = []
    for path in files:
        part = part_of(path)
        if part is None:
            assert not imported_parts(ast.parse(path.read_text()), ["extender"]), "extender/__init__.py imports nothing"
            continue
        package = ["extender", *path.relative_to(EXTENDER).parent.parts]
        found += [f"{path.relative_to(EXTENDER.parent)} {why}" for why in breaks(part, ast.parse(path.read_text()), package)]
    assert not found, "\n".join(found)


def test_the_rule_catches_upward_sideways_and_relative_imports():
    code = "from extender.serving import app\ndef f():\n    from extender.events.witness import Witness\nfrom ..events import notes\n"
    assert [why.split(":")[0] for why in breaks("live", ast.parse(code), ["extender", "live"])] == ["line 1", "line 3", "line 4"]
    assert breaks("serving", ast.parse(code), ["extender", "serving"]) == []
    assert breaks("kubectl", ast.parse("from extender import cli, nowhere"), ["extender"]) == [
        "line 1: from extender import cli, nowhere: extender.nowhere has no layer in LAYERS"
    ]
