"""The kube-scheduler extender v1 wire types (k8s.io/kube-scheduler/extender/v1).

The Go types have no json tags, so the keys are the Go field names in PascalCase, every
field is always present and unused ones are ``null``. Embedded Pods and Nodes keep their
own camelCase keys. Requests are validated strictly; answers are built as plain dicts in
the Go field order and serialised with orjson (integers stay integers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any

import orjson
import pydantic
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, model_validator

from extender.state import kube
from extender.errors import BadRequest


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class NodeList(_Wire):
    items: list[dict[str, Any]] | None = None

    def names(self) -> list[str]:
        names = []
        for i, item in enumerate(self.items or ()):
            name = (item.get("metadata") or {}).get("name") if isinstance(item.get("metadata"), dict) else None
            if not isinstance(name, str) or not name:
                raise BadRequest(f"Nodes.items.{i}.metadata.name: required")
            names.append(name)
        return names


class ExtenderArgs(_Wire):
    """filter and prioritize requests."""

    pod: kube.Pod | None = Field(None, alias="Pod")
    nodes: NodeList | None = Field(None, alias="Nodes")
    node_names: list[StrictStr] | None = Field(None, alias="NodeNames")

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


class MetaPod(_Wire):
    uid: StrictStr = Field(alias="UID")


# int64 on the wire; a count of pods, so never negative.
Count = Annotated[StrictInt, Field(ge=0, lt=2**63)]


class MetaVictims(_Wire):
    pods: list[MetaPod] | None = Field(None, alias="Pods")
    num_pdb_violations: Count = Field(0, alias="NumPDBViolations")


class VictimPodMeta(_Wire):
    uid: StrictStr = ""


class VictimPod(_Wire):
    metadata: VictimPodMeta = VictimPodMeta()


class Victims(_Wire):
    pods: list[VictimPod] | None = Field(None, alias="Pods")
    num_pdb_violations: Count = Field(0, alias="NumPDBViolations")


class ExtenderPreemptionArgs(_Wire):
    pod: kube.Pod | None = Field(None, alias="Pod")
    node_to_victims: dict[StrictStr, Victims] | None = Field(None, alias="NodeNameToVictims")
    node_to_meta_victims: dict[StrictStr, MetaVictims] | None = Field(None, alias="NodeNameToMetaVictims")

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
            return {n: (tuple(p.uid for p in v.pods or ()), v.num_pdb_violations) for n, v in self.node_to_meta_victims.items()}
        return {
            n: (tuple(p.metadata.uid for p in v.pods or ()), v.num_pdb_violations)
            for n, v in self.node_to_victims.items()
        }


def parse(model: type[BaseModel], body: bytes) -> Any:
    """Validate a request body, turning every way it can be wrong into BadRequest."""
    if not body:
        raise BadRequest("empty request body: expected a JSON object")
    try:
        return model.model_validate_json(body)
    except pydantic.ValidationError as exc:
        raise BadRequest(kube.describe_validation(exc)) from None


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
    return orjson.dumps({"Error": message})
