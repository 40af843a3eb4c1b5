"""The kube-scheduler extender v1 wire types (k8s.io/kube-scheduler/extender/v1).

The Go types have no json tags, so the keys are the Go field names in PascalCase, every
field is always present and unused ones are ``null``. Embedded Pods and Nodes keep their
own camelCase keys. Requests are validated strictly; answers are built as plain dicts in
the Go field order and serialised with orjson (integers stay integers).

Whatever an answer echoes back (node names, UIDs, whole Node objects) is checked on the way
in, so that every answer can be written; extender.limits bounds the sizes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from typing_extensions import NotRequired, TypedDict

import orjson
import pydantic
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr, model_validator

from extender.errors import BadRequest, TooLarge
from extender.limits import MAX_ERROR_CHARS, MAX_NODES, MAX_VICTIMS_PER_NODE
from extender.state import kube

_INT64 = range(-(2**63), 2**63)


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


def _echoable(value: Any) -> str | None:
    """Where in ``value`` is something an answer must not carry: an integer beyond int64
    (orjson cannot write one past 64 bits, Go cannot read one past 63) or NaN/Infinity (JSON
    has none). None if nothing; depth is bounded by the JSON parser."""
    if type(value) is dict:
        for key, item in value.items():
            if (where := _echoable(item)) is not None:
                return f"{key}.{where}" if where else key
    elif type(value) is list:
        for i, item in enumerate(value):
            if (where := _echoable(item)) is not None:
                return f"{i}.{where}" if where else str(i)
    elif type(value) is int:
        return None if value in _INT64 else ""
    elif type(value) is float:
        return None if math.isfinite(value) else ""
    return None


def _node_item(item: dict[str, Any]) -> dict[str, Any]:
    """A Node echoed back as sent (nodeCacheCapable: false): named, and writable as JSON."""
    meta = item.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise ValueError("metadata.name: required")
    if len(name) > 253:
        raise ValueError(f"metadata.name: {len(name)} characters, at most 253")
    if (where := _echoable(item)) is not None:
        raise ValueError(f"{where}: an integer beyond int64, or NaN/Infinity, cannot be sent back")
    return item


NodeName = Annotated[StrictStr, Field(min_length=1, max_length=253)]
UID = Annotated[StrictStr, Field(max_length=253)]


class NodeList(_Wire):
    items: Annotated[list[Annotated[dict[str, Any], AfterValidator(_node_item)]], Field(max_length=MAX_NODES)] | None = None

    def names(self) -> list[str]:
        return [item["metadata"]["name"] for item in self.items or ()]  # checked by _node_item


class ExtenderArgs(_Wire):
    """filter and prioritize requests."""

    pod: kube.Pod | None = Field(None, alias="Pod")
    nodes: NodeList | None = Field(None, alias="Nodes")
    node_names: list[NodeName] | None = Field(None, alias="NodeNames", max_length=MAX_NODES)

    @model_validator(mode="after")
    def _complete(self) -> "ExtenderArgs":
        if self.pod is None:
            raise ValueError("Pod is required")
        if self.node_names is None and self.nodes is None:
            raise ValueError("one of NodeNames (nodeCacheCapable: true) or Nodes must be set")
        return self

    @property
    def cache_mode(self) -> bool:
        return self.node_names is not None

    def candidate_names(self) -> list[str]:
        names = self.node_names if self.cache_mode else self.nodes.names()
        return list(dict.fromkeys(names))  # the scheduler never repeats a node; be safe anyway


# int64 on the wire; a count of pods, so never negative.
Count = Annotated[StrictInt, Field(ge=0, lt=2**63)]


# NodeNameToMetaVictims holds up to MAX_NODES of these: validated as plain dicts (keys as on
# the wire), about half the cost of a model per node, and each node's kept as (victim UIDs in
# the order sent, NumPDBViolations as sent) at once, so that its dicts are freed before the
# next node's are made (fewer of the collector's passes per request). The errors read the same
# as a model's (field path and message).
class MetaPod(TypedDict):
    UID: UID


class MetaVictims(TypedDict):
    Pods: NotRequired[Annotated[list[MetaPod], Field(max_length=MAX_VICTIMS_PER_NODE)] | None]
    NumPDBViolations: NotRequired[Count]


def _proposed(victims: MetaVictims) -> tuple[tuple[str, ...], int]:
    return tuple([p["UID"] for p in victims.get("Pods") or ()]), victims.get("NumPDBViolations", 0)


class VictimPodMeta(_Wire):
    uid: UID = ""


class VictimPod(_Wire):
    metadata: VictimPodMeta = VictimPodMeta()


class Victims(_Wire):
    pods: list[VictimPod] | None = Field(None, alias="Pods", max_length=MAX_VICTIMS_PER_NODE)
    num_pdb_violations: Count = Field(0, alias="NumPDBViolations")


class ExtenderPreemptionArgs(_Wire):
    pod: kube.Pod | None = Field(None, alias="Pod")
    node_to_victims: dict[NodeName, Victims] | None = Field(None, alias="NodeNameToVictims", max_length=MAX_NODES)
    node_to_meta_victims: dict[NodeName, Annotated[MetaVictims, AfterValidator(_proposed)]] | None = Field(
        None, alias="NodeNameToMetaVictims", max_length=MAX_NODES
    )

    @model_validator(mode="after")
    def _complete(self) -> "ExtenderPreemptionArgs":
        if self.pod is None:
            raise ValueError("Pod is required")
        if self.node_to_victims is None and self.node_to_meta_victims is None:
            raise ValueError("one of NodeNameToMetaVictims (nodeCacheCapable: true) or NodeNameToVictims must be set")
        return self

    def proposals(self) -> dict[str, tuple[tuple[str, ...], int]]:
        """node -> (victim UIDs in the order sent, NumPDBViolations as sent)."""
        if self.node_to_meta_victims is not None:
            return self.node_to_meta_victims  # read so when validated (_proposed)
        return {
            n: (tuple(p.metadata.uid for p in v.pods or ()), v.num_pdb_violations)
            for n, v in self.node_to_victims.items()
        }


def parse(model: type[BaseModel], body: bytes) -> Any:
    """Validate a request body, turning every way it can be wrong into BadRequest (TooLarge
    when a list or map is longer than reprieve's limits)."""
    if not body:
        raise BadRequest("empty request body: expected a JSON object")
    try:
        return model.model_validate_json(body)
    except pydantic.ValidationError as exc:
        # "too_long" is a list or map over its limit; strings over theirs are "string_too_long".
        error = TooLarge if any(e["type"] == "too_long" for e in exc.errors(include_input=False)) else BadRequest
        raise error(kube.describe_validation(exc)) from None


def filter_result(
    *,
    args: ExtenderArgs,
    passed: Iterable[str],
    unresolvable: Mapping[str, str],
) -> bytes:
    """The filter answer. FailedNodes is always empty: see policy.filter for why reprieve's
    rejections are all unresolvable."""
    passed = list(passed)
    if args.cache_mode:
        nodes, names = None, passed
    else:
        keep = set(passed)
        items = [item for item in args.nodes.items or () if item["metadata"]["name"] in keep]  # names checked on parse
        nodes, names = {"metadata": {}, "items": items}, None
    return orjson.dumps(
        {
            "Nodes": nodes,
            "NodeNames": names,
            "FailedNodes": {},
            "FailedAndUnresolvableNodes": dict(unresolvable),
            "Error": "",
        }
    )


def host_priorities(scores: Iterable[tuple[str, int]]) -> bytes:
    return orjson.dumps([{"Host": host, "Score": int(score)} for host, score in scores])


def preemption_result(victims: Mapping[str, tuple[Iterable[str], int]]) -> bytes:
    return orjson.dumps(
        {
            "NodeNameToMetaVictims": {
                node: {"Pods": [{"UID": uid} for uid in uids], "NumPDBViolations": int(count)}
                for node, (uids, count) in victims.items()
            }
        }
    )


def error_body(message: str) -> bytes:
    """``{"Error": message}``, the message cut to MAX_ERROR_CHARS characters."""
    if len(message) > MAX_ERROR_CHARS:
        message = f"{message[:MAX_ERROR_CHARS]}... ({len(message) - MAX_ERROR_CHARS} more characters)"
    return orjson.dumps({"Error": message})
