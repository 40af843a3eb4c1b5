"""Malformed and mutated extender request bodies from a seeded generator.

Every body starts from a real request (tests/golden/ in both nodeCacheCapable modes, and
examples/requests/) and is mutated at the JSON level (values Kubernetes rejects, deleted keys,
renamed keys, deep nesting, repeated items) and sometimes at the byte level (truncated,
flipped, spliced). The same seed gives the same bodies, so a failure names the seed and the
index that reproduce it.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
VERBS = ("filter", "prioritize", "preempt")
# Larger bodies are cut here (and are then invalid JSON): size limits have their own tests,
# and a few huge bodies would take most of the run.
MAX_BYTES = 2 * 2**20

# Values the API server would never send: beyond int32/int64/uint64, negative, non-finite,
# non-ASCII digits, too long, wrong types.
INTERESTING = [
    None, True, False, 0, -1, 1, 7.5, -0.0, 1e308,
    2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30, 10**4000,
    float("nan"), float("inf"), float("-inf"),
    "", "0", "-1", "-500m", "-1Gi", "1e999999", "1e40", "99999999999999999999Ei", "0.0000000001m",
    "1" * 70, "\u0661\u0662", "\uff15", "\u00a01", " 1 ", "1.2.3", "Gi", "5X", "+-1", ".", "1.",
    "\x00", "\ud7ff", "\U0001f600", "x" * 300, "node-" + "a" * 250,
    [], {}, [[]], {"": None}, [None], {"metadata": None},
]
# Keys whose values reprieve parses closely: mutated more often than the rest.
HOT = {
    "cpu", "memory", "pods", "ephemeral-storage", "example.com/gpu", "priority", "name", "namespace",
    "uid", "UID", "nodeName", "nominatedNodeName", "NumPDBViolations", "NodeNames", "Pods", "items",
    "startTime", "creationTimestamp", "qosClass", "labels", "containers", "requests", "limits",
}


def seeds() -> dict[str, list[tuple[str, bytes]]]:
    """verb -> [(where from, request body)] for every real request in the repository."""
    found: dict[str, list[tuple[str, bytes]]] = {verb: [] for verb in VERBS}
    for path in sorted((ROOT / "tests" / "golden").glob("*/request.json")):
        found[path.parent.name.split("-")[0]].append((str(path.relative_to(ROOT)), path.read_bytes()))
    for verb in VERBS:
        path = ROOT / "examples" / "requests" / f"{verb}.json"
        found[verb].append((str(path.relative_to(ROOT)), path.read_bytes()))
    return found


def _slots(value, hot_only: bool) -> list[tuple[object, object]]:
    """(container, key or index) for every value in the tree."""
    out = []
    stack = [value]
    while stack:
        node = stack.pop()
        entries = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in entries:
            if not hot_only or key in HOT:
                out.append((node, key))
            stack.append(child)
    return out


def _interesting(rng: random.Random):
    roll = rng.random()
    if roll < 0.015:
        return "1" * rng.choice([1_000, 100_000, 1_000_000])  # a quantity of a million digits
    if roll < 0.03:
        depth = rng.randint(100, 400)
        return json.loads("[" * depth + "]" * depth) if depth < 900 else []
    return copy.deepcopy(rng.choice(INTERESTING))


def _mutate_tree(tree, rng: random.Random) -> object:
    for _ in range(rng.randint(1, 3)):
        slots = _slots(tree, hot_only=rng.random() < 0.6) or _slots(tree, hot_only=False)
        if not slots:
            return _interesting(rng)
        node, key = rng.choice(slots)
        op = rng.random()
        if op < 0.55:
            node[key] = _interesting(rng)
        elif op < 0.7 and isinstance(node, dict):
            del node[key]
        elif op < 0.8 and isinstance(node, dict):
            new = rng.choice([str(key).lower(), str(key).upper(), "", "k" * 100_000, f"{key}\u0000"])
            node[new] = node.pop(key)
        elif op < 0.9 and isinstance(node[key], list) and node[key]:
            node[key] = node[key] * rng.choice([2, 50, 2_000])  # repeated names, victims, containers
        elif isinstance(node[key], dict) and node[key]:
            extra = {f"{k}-{i}": v for i in range(rng.choice([1, 100, 3_000])) for k, v in list(node[key].items())[:1]}
            node[key] = {**node[key], **extra}  # more nodes, labels, resources
        else:
            node[key] = _interesting(rng)
    return tree


def _mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return b"{"
    at = rng.randrange(len(data))
    op = rng.random()
    if op < 0.3:
        return data[:at]  # truncated
    if op < 0.6:
        return data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]  # one byte changed
    if op < 0.8:
        junk = rng.choice([b"\xff\xfe", b"\x00", b"NaN", b"-", b"}", b"]", b'"', b"\\u", b"\\ud800", b"1e99999"])
        return data[:at] + junk + data[at:]
    other = rng.randrange(len(data))
    return data[:at] + data[other : other + rng.randint(1, 200)] + data[at:]  # a slice spliced in


def bodies(verb: str, count: int, seed: int) -> Iterator[tuple[str, bytes]]:
    """``count`` bodies for ``verb``: (how it was made, body). A tenth are the seeds unchanged."""
    rng = random.Random(f"{seed}-{verb}")
    pool = seeds()[verb]
    for i in range(count):
        origin, raw = rng.choice(pool)
        if i % 10 == 0:
            yield f"{origin} unchanged", raw
            continue
        tree = _mutate_tree(orjson.loads(raw), rng)
        data = json.dumps(tree, separators=(",", ":")).encode("utf-8", "surrogatepass")
        how = f"{origin} mutated (seed {seed}, {verb} #{i})"
        if rng.random() < 0.25:
            data = _mutate_bytes(data, rng)
            how += " and byte-mutated"
        if len(data) > MAX_BYTES:
            data = data[:MAX_BYTES]
            how += f" and cut to {MAX_BYTES} bytes"
        yield how, data
