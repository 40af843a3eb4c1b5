"""The ``--policy`` file: multi-tenant preemption rules and the ranking's order, validated once
at startup.

Every mistake stops startup with a message naming the key (``queues[2] (prod).guaranteed.cpu:
...``). See docs/policy.md for the reference and a complete example. A file that holds only
``ranking``, ``strictBudgets`` and ``minimumRuntime`` turns on no multi-tenant (queue) rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import pydantic
import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, StrictStr, field_validator

from extender.state import handwritten, kube, translate
from extender.errors import ConfigError
from policy import ranking
from policy.guards import Guards, MinimumRuntime, StrictBudgets
from policy.tenancy import OPT_OUT_ANNOTATION, OptOut, Preemption, Queue, Rules

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
DURATION_FORM = "a duration such as 30s or 5m (units ms, s, m, h; 1m30s combines them)"


def parse_duration(text: str) -> float:
    """A Go-style duration (``30s``, ``1m30s``, ``500ms``, ``0s``) in seconds."""
    text = text.strip()
    if not text or _DURATION.sub("", text):
        hint = f": write the unit, as in {text}s" if re.fullmatch(r"\d+(\.\d+)?", text) else ""
        raise ValueError(f"{text!r} is not {DURATION_FORM}{hint}")
    return sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION.findall(text))


def _duration(value: object) -> str:
    """A duration field: a string parse_duration reads; a bare number is told the form."""
    if isinstance(value, str):
        parse_duration(value)
        return value
    hint = f": write the unit, as in {value}s" if type(value) in (int, float) else ""
    raise ValueError(f"{value!r} is not {DURATION_FORM}{hint}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Duration = Annotated[str, BeforeValidator(_duration)]


class QueueSpec(_Strict):
    name: StrictStr = Field(min_length=1)
    parent: StrictStr | None = None
    namespaces: list[StrictStr] | None = None
    selector: kube.LabelSelector | None = None
    guaranteed: kube.ResourceList | None = None
    weight: StrictInt | None = Field(default=None, ge=1, le=1_000_000)
    preemption: Literal["default", "fence", "disabled"] = "default"
    delay: Duration | None = None

    @field_validator("selector")
    @classmethod
    def _selector(cls, value: kube.LabelSelector | None) -> kube.LabelSelector | None:
        if value is not None and not value.matchLabels and not value.matchExpressions:
            raise ValueError("an empty selector matches nothing; leave it out to match by namespaces only")
        for i, term in enumerate(value.matchExpressions or () if value else ()):
            # The API server's rules for a LabelSelectorRequirement.
            if term.operator in ("In", "NotIn") and not term.values:
                raise ValueError(f"matchExpressions[{i}] ({term.key}): {term.operator} needs values")
            if term.operator in ("Exists", "DoesNotExist") and term.values:
                raise ValueError(f"matchExpressions[{i}] ({term.key}): {term.operator} takes no values")
        return value


class OptOutSpec(_Strict):
    annotation: StrictStr = Field(default=OPT_OUT_ANNOTATION, min_length=1)
    mode: Literal["soft", "hard"] = "soft"


class ApplicationSpec(_Strict):
    label: StrictStr | None = Field(default=None, min_length=1)
    ownerReference: StrictBool = False


class StrictBudgetsSpec(_Strict):
    namespaces: list[StrictStr] | None = None
    priorityClasses: list[StrictStr] | None = None


class MinimumRuntimeSpec(_Strict):
    priorityClasses: list[StrictStr] | None = None
    namespaces: list[StrictStr] | None = None
    duration: Duration


class PolicySpec(_Strict):
    queues: list[QueueSpec] = []
    defaultQueue: StrictStr = Field(default="default", min_length=1)
    optOut: OptOutSpec = OptOutSpec()
    protectedNamespaces: list[StrictStr] = ["kube-system"]
    application: ApplicationSpec = ApplicationSpec()
    preemptionDelay: Duration = "0s"
    # Criterion names (policy.ranking.MOVABLE), most decisive first; those not named follow in
    # the default order.
    ranking: list[StrictStr] | None = None
    # The guards (policy.guards): no default is validated, so an explicit null is an error.
    strictBudgets: StrictBudgetsSpec = None  # type: ignore[assignment]
    minimumRuntime: list[MinimumRuntimeSpec] = []

    @field_validator("strictBudgets", mode="before")
    @classmethod
    def _strict_budgets(cls, value: object) -> object:
        if not isinstance(value, dict):
            what = "empty" if value is None else f"{value!r} is not a mapping"
            raise ValueError(f"{what}: name namespaces and/or priorityClasses, or write {{}} to make every PodDisruptionBudget strict")
        return value


# Keys that turn on no multi-tenant rule: a file of only these has no queues.
WITHOUT_QUEUES = frozenset({"ranking", "strictBudgets", "minimumRuntime"})


@dataclass(frozen=True)
class Policy:
    rules: Rules | None  # None: the file only orders the ranking or sets guards
    order: ranking.Order = ranking.DEFAULT
    guards: Guards | None = None  # strictBudgets and minimumRuntime; None: neither


def load(path: str | Path) -> Policy:
    """Read and validate a policy file; ConfigError names the file and the offending key."""
    try:
        text = Path(path).read_bytes()  # YAML decodes it: bad encodings are YAML errors
    except OSError as exc:
        raise ConfigError(f"policy {path}: {exc.strerror or exc}") from exc
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"policy {path}: not YAML: {exc}") from exc
    return parse(raw if raw is not None else {}, source=str(path))


def parse(raw: object, *, source: str = "policy") -> Policy:
    if not isinstance(raw, dict):
        raise ConfigError(f"policy {source}: expected a mapping at the top, not {type(raw).__name__}")
    unknown = handwritten.model_problems(raw, PolicySpec)
    if unknown:
        raise ConfigError(f"policy {source}: {_named(handwritten.describe(unknown), raw)}")
    try:
        spec = PolicySpec.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"policy {source}: {_named(kube.describe_validation(exc), raw)}") from None
    try:
        order = _order(spec.ranking)
    except ValueError as exc:
        raise ConfigError(f"policy {source}: ranking{exc}") from None
    try:
        guards = _guards(spec)
        if guards is not None and guards.strict is not None:
            order = order.with_strict()
        if spec.model_fields_set and spec.model_fields_set <= WITHOUT_QUEUES:
            return Policy(None, order, guards)
        return Policy(_rules(spec), order, guards)
    except ValueError as exc:
        raise ConfigError(f"policy {source}: {exc}") from None


def _order(names: list[str] | None) -> ranking.Order:
    """The criteria named first, in the order given, then the others in the default order."""
    return ranking.DEFAULT if names is None else ranking.Order.named(names)


def _named(message: str, raw: dict) -> str:
    """``queues.2.weight`` -> ``queues[2] (prod).weight``: the operator looks for the name.
    ``minimumRuntime.0.duration`` -> ``minimumRuntime[0].duration``."""
    queues = raw.get("queues") if isinstance(raw.get("queues"), list) else []

    def name(match: re.Match) -> str:
        index = int(match.group(1))
        entry = queues[index] if index < len(queues) else None
        label = f" ({entry['name']})" if isinstance(entry, dict) and isinstance(entry.get("name"), str) else ""
        return f"queues[{index}]{label}"

    message = re.sub(r"minimumRuntime\.(\d+)", r"minimumRuntime[\1]", message)
    return re.sub(r"queues\.(\d+)", name, message)


def _guards(spec: PolicySpec) -> Guards | None:
    """strictBudgets and minimumRuntime (policy.guards); None where the file sets neither."""
    strict = None
    rule = spec.strictBudgets
    if rule is not None:
        # Both lists left out: every budget (StrictBudgets.every); an empty list selects nothing.
        strict = StrictBudgets() if rule.namespaces is None and rule.priorityClasses is None else StrictBudgets(
            namespaces=frozenset(rule.namespaces or ()),
            priority_classes=frozenset(rule.priorityClasses or ()),
        )
    runtime = []
    for i, rule in enumerate(spec.minimumRuntime):
        duration = parse_duration(rule.duration)
        if duration <= 0:
            raise ValueError(f"minimumRuntime[{i}].duration: {rule.duration} protects no pod; give a positive duration or leave the rule out")
        runtime.append(
            MinimumRuntime(
                duration=duration,
                namespaces=frozenset(rule.namespaces or ()),
                priority_classes=frozenset(rule.priorityClasses or ()),
                index=i,
            )
        )
    if strict is None and not runtime:
        return None
    return Guards(strict, tuple(runtime))


def _rules(spec: PolicySpec) -> Rules:
    names = [q.name for q in spec.queues]
    seen: set[str] = set()
    for i, q in enumerate(spec.queues):
        where = f"queues[{i}] ({q.name})"
        if q.name in seen:
            raise ValueError(f"{where}.name: queue {q.name} is defined twice")
        seen.add(q.name)
        if q.parent is not None and q.parent not in names:
            raise ValueError(f"{where}.parent: no queue is named {q.parent}")
    parents = {q.name: q.parent for q in spec.queues}
    for i, q in enumerate(spec.queues):
        where = f"queues[{i}] ({q.name})"
        chain, up = [q.name], q.parent
        while up is not None:
            if up in chain:
                raise ValueError(f"{where}.parent: the hierarchy loops: {' -> '.join([*chain, up])}")
            chain.append(up)
            up = parents[up]
        is_parent = q.name in parents.values()
        if is_parent and (q.namespaces or q.selector):
            raise ValueError(f"{where}: a queue with child queues holds no pods; move namespaces/selector to a leaf")
        if is_parent and q.delay is not None:
            raise ValueError(f"{where}.delay: only a leaf queue's pods wait; set delay on the leaf queues")
    if spec.defaultQueue in parents.values():
        raise ValueError(f"defaultQueue: {spec.defaultQueue} has child queues; the default queue must be a leaf")
    queues = tuple(
        Queue(
            name=q.name,
            parent=q.parent,
            namespaces=frozenset(q.namespaces or ()),
            selector=translate.selector(q.selector) if q.selector else None,
            guaranteed=_vector(q.guaranteed, f"queues[{i}] ({q.name}).guaranteed"),
            weight=q.weight,
            preemption=Preemption(q.preemption),
            delay=parse_duration(q.delay) if q.delay is not None else None,
        )
        for i, q in enumerate(spec.queues)
    )
    return Rules(
        queues=queues,
        default_queue=spec.defaultQueue,
        opt_out_annotation=spec.optOut.annotation,
        opt_out=OptOut(spec.optOut.mode),
        protected_namespaces=frozenset(spec.protectedNamespaces),
        application_label=spec.application.label,
        application_owner=spec.application.ownerReference,
        delay=parse_duration(spec.preemptionDelay),
    )


def _vector(quantities: dict | None, where: str) -> dict[str, int] | None:
    if quantities is None:
        return None
    if "" in quantities:
        raise ValueError(f"{where}: a resource name is empty")
    return translate.vector(quantities)  # kube.ResourceList refused negative quantities
