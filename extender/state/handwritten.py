"""Hand-written input checked as the API server would check it: ``explain --pod FILE``,
``simulate --pods`` and ``--policy`` files.

The projections of kube.py read only the fields policy needs and ignore the rest. That is right
for what an API server has already admitted (the live cache, the verbs' bodies, a dump) and
must stay so; for a file a person typed it is not: ``requets:`` would silently mean "no
requests". So for those files only, before they are read:

- every key must be a field of its Kubernetes type (the installed kubernetes client's types,
  which are the API's: client 37 is Kubernetes 1.37; reprieve's own projections add the
  fields it reads, for an older client), and the message names the closest known field;
- container resources follow ``ValidateResourceRequirements``: a name without a domain is a
  standard resource, an extended resource is a whole number, and the resources that cannot be
  overcommitted (extended resources, hugepages) have requests equal to limits; cpu, memory and
  ephemeral-storage requests are at most their limits.

Each function returns the problems found as ``field.path: what is wrong`` (empty: none), first
the unknown fields, in the order of the file.
"""

from __future__ import annotations

import difflib
import functools
import re
import types
import typing
from collections.abc import Iterator, Mapping
from decimal import Decimal

import pydantic

from extender.errors import ConfigError
from extender.state import kube
from policy.quantity import QuantityError, parse_quantity

_LIST = re.compile(r"^(?:List\[(.+)\]|list\[(.+)\])$")
_DICT = re.compile(r"^(?:Dict\[str, (.+)\]|dict\(str, (.+)\))$")

# Fields reprieve reads that an older kubernetes client (the dependency allows 29 and later)
# may not know yet: the projection's fields count as known at the same place.
_PROJECTIONS: Mapping[str, type[pydantic.BaseModel]] = {
    "V1Pod": kube.Pod,
    "V1ObjectMeta": kube.PodMeta,
    "V1PodSpec": kube.PodSpec,
    "V1Container": kube.Container,
    "V1ResourceRequirements": kube.ResourceRequirements,
    "V1PodStatus": kube.PodStatus,
}

# ValidateResourceRequirements' vocabulary (k8s.io/kubernetes pkg/apis/core/validation).
_STANDARD = ("cpu", "memory", "ephemeral-storage")  # and hugepages-<size>
_CLOSE = 0.6  # difflib's cutoff for "did you mean"


def pod_problems(obj: Mapping) -> list[str]:
    """What the API server would reject in the Pod ``obj`` (a hand-written file), or []."""
    problems = list(_unknown_in_client_type(obj, "V1Pod", ()))
    if obj.get("apiVersion", "v1") != "v1":
        problems.append(f"apiVersion: {obj.get('apiVersion')!r} is not a Pod's (v1)")
    spec = obj.get("spec")
    if isinstance(spec, Mapping):
        for group in ("containers", "initContainers"):
            containers = spec.get(group)
            for i, container in enumerate(containers if isinstance(containers, list) else ()):
                resources = container.get("resources") if isinstance(container, Mapping) else None
                if isinstance(resources, Mapping):
                    problems += _resource_problems(resources, f"spec.{group}.{i}.resources")
    return problems


def parse_pod(obj: Mapping, where: str) -> kube.Pod:
    """A hand-written Pod checked as the API server would check it (pod_problems), then read;
    ConfigError naming ``where`` and what is wrong otherwise."""
    problems = pod_problems(obj)
    if problems:
        raise ConfigError(f"{where}: {describe(problems)}")
    try:
        return kube.Pod.model_validate(obj)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"{where}: {kube.describe_validation(exc)}") from None


def model_problems(obj: object, model: type[pydantic.BaseModel]) -> list[str]:
    """The unknown fields of ``obj`` as ``model`` (a pydantic model of a hand-written file,
    such as the policy file's) reads it: nested models that ignore extras included."""
    return list(_unknown_in_model(obj, model, ()))


def describe(problems: list[str], *, limit: int = 3) -> str:
    """The first few problems on one line, the way kube.describe_validation gives them."""
    more = len(problems) - limit
    return "; ".join(problems[:limit]) + (f" (and {more} more)" if more > 0 else "")


# Unknown fields.


def _unknown(path: tuple, key: object, known: list[str], type_name: str) -> str:
    where = ".".join(str(p) for p in (*path, key))
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=_CLOSE)
    hint = f"did you mean {close[0]}?" if close else f"{type_name} has {', '.join(sorted(known))}"
    return f"{where}: unknown field ({hint})"


@functools.cache  # a few dozen types, looked up for every object of every pod file
def _client_fields(type_name: str) -> dict[str, str | None] | None:
    """JSON field name -> its client type name, for a kubernetes client model; None if there is
    no such model (a primitive, ``object``, or a type this client does not have)."""
    import kubernetes.client

    cls = getattr(kubernetes.client, type_name, None)
    types = getattr(cls, "openapi_types", None)
    if not isinstance(types, dict):
        return None
    fields: dict[str, str | None] = {cls.attribute_map[name]: t for name, t in types.items()}
    projection = _PROJECTIONS.get(type_name)
    for name in projection.model_fields if projection else ():
        fields.setdefault(name, None)  # known; what is under it is the projection's to check
    return fields


def _unknown_in_client_type(value: object, type_name: str | None, path: tuple) -> Iterator[str]:
    if type_name is None:
        return
    if (m := _LIST.match(type_name)) is not None:
        for i, item in enumerate(value if isinstance(value, list) else ()):
            yield from _unknown_in_client_type(item, m.group(1) or m.group(2), (*path, i))
        return
    if (m := _DICT.match(type_name)) is not None:
        for key, item in (value.items() if isinstance(value, dict) else ()):
            yield from _unknown_in_client_type(item, m.group(1) or m.group(2), (*path, key))
        return
    fields = _client_fields(type_name)
    if fields is None or not isinstance(value, dict):
        return  # a primitive, free-form JSON, or not an object: validation says what it must be
    for key, item in value.items():
        if key not in fields:
            yield _unknown(path, key, list(fields), type_name.removeprefix("V1"))
        else:
            yield from _unknown_in_client_type(item, fields[key], (*path, key))


def _shape(annotation: object) -> tuple[str, object] | None:
    """("model", cls), ("list", item) or ("dict", value) for a field's annotation; None for
    anything that holds no fields."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _shape(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        shapes = [s for a in typing.get_args(annotation) if (s := _shape(a)) is not None]
        return shapes[0] if shapes else None
    if origin is list:
        return "list", typing.get_args(annotation)[0]
    if origin is dict:
        return "dict", typing.get_args(annotation)[1]
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return "model", annotation
    return None


def _unknown_in_model(value: object, annotation: object, path: tuple) -> Iterator[str]:
    shape = _shape(annotation)
    if shape is None:
        return
    what, inner = shape
    if what == "list":
        for i, item in enumerate(value if isinstance(value, list) else ()):
            yield from _unknown_in_model(item, inner, (*path, i))
    elif what == "dict":
        for key, item in (value.items() if isinstance(value, dict) else ()):
            yield from _unknown_in_model(item, inner, (*path, key))
    elif isinstance(value, dict):
        fields = inner.model_fields  # type: ignore[union-attr]
        for key, item in value.items():
            if key not in fields:
                yield _unknown(path, key, list(fields), inner.__name__.removesuffix("Spec"))  # type: ignore[union-attr]
            else:
                yield from _unknown_in_model(item, fields[key].annotation, (*path, key))


# Container resources.


def _resource_problems(resources: Mapping, where: str) -> list[str]:
    requests, limits = resources.get("requests"), resources.get("limits")
    requests = requests if isinstance(requests, Mapping) else {}
    limits = limits if isinstance(limits, Mapping) else {}
    problems = []
    values: dict[tuple[str, str], Decimal] = {}
    for kind, entries in (("limits", limits), ("requests", requests)):
        for name, quantity in entries.items():
            at = f"{where}.{kind}.{name}"
            if not isinstance(name, str):
                continue  # the projection says what a resource name must be
            if "/" not in name and name not in _STANDARD and not name.startswith("hugepages-"):
                close = difflib.get_close_matches(name, _STANDARD, n=1, cutoff=0.75)  # gpu is not cpu
                hint = f"did you mean {close[0]}?" if close else "an extended resource has a domain, such as nvidia.com/gpu"
                problems.append(f"{at}: not a standard resource (cpu, memory, ephemeral-storage, hugepages-<size>); {hint}")
                continue
            try:
                value = parse_quantity(quantity)
            except QuantityError:
                continue  # the projection names the bad quantity
            values[kind, name] = value
            if _extended(name) and value != value.to_integral_value():
                problems.append(f"{at}: {quantity} must be a whole number ({name} is an extended resource)")
    for name in sorted({n for _, n in values}):
        request, limit = values.get(("requests", name)), values.get(("limits", name))
        if _overcommittable(name):
            if request is not None and limit is not None and request > limit:
                problems.append(f"{where}.requests.{name}: {requests[name]} must be at most the limit, {limits[name]}")
        elif request is not None and limit is None:
            problems.append(
                f"{where}.limits.{name}: required: {name} cannot be overcommitted, so its limit must be set, equal to the request"
            )
        elif request is not None and request != limit:
            problems.append(
                f"{where}.requests.{name}: {requests[name]} must equal the limit, {limits[name]} ({name} cannot be overcommitted)"
            )
    return problems


def _native(name: str) -> bool:
    """upstream IsNativeResource: no domain, or kubernetes.io's."""
    return "/" not in name or "kubernetes.io/" in name


def _extended(name: str) -> bool:
    """An extended resource (upstream IsExtendedResourceName): not native, and not a quota's
    ``requests.`` name. Counted in whole units."""
    return not _native(name) and not name.startswith("requests.")


def _overcommittable(name: str) -> bool:
    """upstream IsOvercommitAllowed: a request may be below its limit (cpu, memory,
    ephemeral-storage); for the rest (extended resources, hugepages) it must equal it."""
    return _native(name) and not name.startswith("hugepages-")
