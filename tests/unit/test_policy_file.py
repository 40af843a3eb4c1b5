"""The --policy file: the documented example loads, and each mistake names its key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from extender import policy_file
from extender.errors import ConfigError
from policy import ranking
from policy.guards import MinimumRuntime, StrictBudgets
from policy.tenancy import OptOut, Preemption
from tests.builders import pdb, pod

ROOT = Path(__file__).resolve().parents[2]


def test_the_example_policy_loads_as_documented():
    policy = policy_file.load(ROOT / "examples" / "policy.yaml")
    assert policy.order == ranking.DEFAULT
    rules = policy.rules
    assert [q.name for q in rules.queues] == ["products", "shop", "analytics", "research", "training", "batch"]
    training = rules.queue("training")
    assert training.parent == "research" and training.weight == 3 and training.delay == 10.0
    assert training.guaranteed == {"cpu": 4000, "example.com/gpu": 1}
    assert rules.queue("products").preemption is Preemption.FENCE
    assert rules.queue("analytics").preemption is Preemption.DISABLED
    assert rules.opt_out is OptOut.SOFT and rules.delay == 30.0
    assert rules.application_label == "app.kubernetes.io/instance" and rules.application_owner


def test_the_docs_reference_example_is_the_example_file():
    # docs/policy.md embeds examples/policy.yaml verbatim, so the reference cannot drift.
    assert (ROOT / "examples" / "policy.yaml").read_text().strip() in (ROOT / "docs" / "policy.md").read_text()


def test_an_empty_file_means_defaults():
    rules = policy_file.parse({}).rules
    assert rules.queues == () and rules.protected_namespaces == {"kube-system"} and rules.delay == 0


def test_ranking_alone_orders_the_ranking_and_turns_on_no_rule():
    policy = policy_file.parse({"ranking": ["PDB violations", "victims"]})
    assert policy.rules is None
    # The pending pods left without room follow the number of victims wherever it goes.
    assert policy.order.names[:5] == ("opted-out victims", "PDB violations", "victims", "pending pods left without room", "Jobs failed")
    assert policy.order.names[-1] == ranking.START.name
    # Every criterion but the strict budgets' (first only where strictBudgets is on).
    assert sorted(policy.order.names) == sorted(c.name for c in ranking.CANONICAL if c is not ranking.STRICT_BUDGETS)
    # With rules too, both.
    both = policy_file.parse({"ranking": ["victims"], "protectedNamespaces": []})
    assert both.rules is not None and both.rules.protected_namespaces == frozenset()
    assert both.order.names[1] == "victims"


@pytest.mark.parametrize(
    "text, message",
    [
        pytest.param("queues: [{name: a, wieght: 2}]", "queues[0] (a).wieght: unknown field (did you mean weight?)", id="typo"),
        pytest.param("preemptionDealy: 30s", "preemptionDealy: unknown field (did you mean preemptionDelay?)", id="typo-top"),
        # kube.LabelSelector ignores unknown fields (the live path reads it); a policy file may not.
        pytest.param(
            "queues: [{name: a, selector: {matchLabel: {app: x}}}]",
            "queues[0] (a).selector.matchLabel: unknown field (did you mean matchLabels?)", id="typo-in-selector",
        ),
        pytest.param("optOut: {annotaton: x}", "optOut.annotaton: unknown field (did you mean annotation?)", id="typo-nested"),
        pytest.param("queues: [{name: a, zzz: 1}]", "queues[0] (a).zzz: unknown field (Queue has delay, guaranteed, name,", id="no-close-field"),
        pytest.param("preemptionDelay: 30", "preemptionDelay: 30 is not a duration such as 30s or 5m (units ms, s, m, h; 1m30s combines them): write the unit, as in 30s", id="bare-number"),
        pytest.param("preemptionDelay: '30'", "preemptionDelay: '30' is not a duration such as 30s or 5m", id="bare-number-string"),
        pytest.param("queues: [{name: a, delay: 1.5}]", "queues[0] (a).delay: 1.5 is not a duration such as 30s or 5m (units ms, s, m, h; 1m30s combines them): write the unit, as in 1.5s", id="bare-queue-delay"),
        pytest.param("queues: [{name: a, weight: 0}]", "queues[0] (a).weight: Input should be greater than or equal to 1", id="weight"),
        pytest.param("queues: [{name: a, guaranteed: {cpu: lots}}]", "queues[0] (a).guaranteed.cpu: 'lots' is not a quantity", id="quantity"),
        pytest.param("queues: [{name: a, guaranteed: {cpu: '-1'}}]", "queues[0] (a).guaranteed.cpu: '-1' must not be negative", id="negative"),
        pytest.param("queues: [{name: a, preemption: fenced}]", "queues[0] (a).preemption: Input should be 'default', 'fence' or 'disabled'", id="policy"),
        pytest.param("queues: [{name: a, parent: b}]", "queues[0] (a).parent: no queue is named b", id="parent"),
        pytest.param("queues: [{name: a, parent: b}, {name: b, parent: a}]", "the hierarchy loops: a -> b -> a", id="loop"),
        pytest.param("queues: [{name: a}, {name: a}]", "queues[1] (a).name: queue a is defined twice", id="duplicate"),
        pytest.param("queues: [{name: p, namespaces: [x]}, {name: c, parent: p}]", "queues[0] (p): a queue with child queues holds no pods", id="parent-with-pods"),
        pytest.param("queues: [{name: p, delay: 5s}, {name: c, parent: p}]", "queues[0] (p).delay: only a leaf queue", id="parent-delay"),
        pytest.param("queues: [{name: a, selector: {}}]", "queues[0] (a).selector: an empty selector matches nothing", id="empty-selector"),
        pytest.param("queues: [{name: a, selector: {matchExpressions: [{key: k, operator: In}]}}]", "queues[0] (a).selector: matchExpressions[0] (k): In needs values", id="in-without-values"),
        pytest.param("queues: [{name: a, selector: {matchExpressions: [{key: k, operator: Exists, values: [x]}]}}]", "Exists takes no values", id="exists-with-values"),
        pytest.param("queues: [{name: a, guaranteed: {'': '1'}}]", "queues[0] (a).guaranteed: a resource name is empty", id="empty-resource"),
        pytest.param("queues: [{name: a, delay: soon}]", "queues[0] (a).delay: 'soon' is not a duration", id="delay"),
        pytest.param("preemptionDelay: 3 days", "preemptionDelay: '3 days' is not a duration", id="global-delay"),
        pytest.param("optOut: {mode: sometimes}", "optOut.mode: Input should be 'soft' or 'hard'", id="opt-out-mode"),
        pytest.param("queues: [{name: p}, {name: c, parent: p}]\ndefaultQueue: p", "defaultQueue: p has child queues", id="default-not-leaf"),
        pytest.param("- just a list", "expected a mapping at the top", id="not-a-mapping"),
        pytest.param("ranking: [PDB violations, gangs]", "ranking[1]: 'gangs' is not a criterion a policy may order; one of: PDB violations, Jobs failed, broken gangs,", id="ranking-unknown"),
        pytest.param("ranking: [victims, victims]", "ranking[1]: 'victims' is named twice", id="ranking-twice"),
        pytest.param("ranking: [opted-out victims]", "ranking[0]: 'opted-out victims' is not a criterion a policy may order", id="ranking-opted-out-stays-first"),
        pytest.param("ranking: [pending pods left without room]", "ranking[0]: 'pending pods left without room' is not a criterion a policy may order",
                     id="ranking-pending-room-follows-victims"),
        pytest.param("ranking: victims", "ranking: Input should be a valid list", id="ranking-not-a-list"),
    ],
)
def test_mistakes_name_the_key(text, message):
    with pytest.raises(ConfigError) as caught:
        policy_file.parse(yaml.safe_load(text), source="p.yaml")
    assert message in str(caught.value)
    assert str(caught.value).startswith("policy p.yaml: ")


@pytest.mark.parametrize("text, seconds", [("30s", 30), ("1m30s", 90), ("500ms", 0.5), ("0s", 0), ("1h", 3600)])
def test_durations(text, seconds):
    assert policy_file.parse_duration(text) == seconds


def test_unreadable_and_non_yaml_files(tmp_path):
    with pytest.raises(ConfigError, match="No such file"):
        policy_file.load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("queues: [unclosed")
    with pytest.raises(ConfigError, match="not YAML"):
        policy_file.load(bad)
    bad.write_bytes(b"queues: [\xff]")
    with pytest.raises(ConfigError, match="not YAML"):
        policy_file.load(bad)


# strictBudgets and minimumRuntime (policy.guards).

ISSUE_29 = """
strictBudgets:            # PDBs that preemption never violates
  namespaces: [kafka]
  priorityClasses: [critical-data]
minimumRuntime:           # pods that preemption leaves alone until they have run this long
- priorityClasses: [batch-low]
  namespaces: []
  duration: 10m
"""


def test_the_guards_in_the_issues_own_syntax_turn_on_no_queue_rule():
    policy = policy_file.parse(yaml.safe_load(ISSUE_29))
    assert policy.rules is None  # no queue, no protected namespace: only these keys
    guards = policy.guards
    assert guards.strict == StrictBudgets(frozenset({"kafka"}), frozenset({"critical-data"}))
    assert guards.runtime == (MinimumRuntime(600.0, frozenset(), frozenset({"batch-low"}), 0),)
    # The strict budgets' violations come first of all; the rest is the default order.
    assert policy.order.names == ("strict budget violations", *ranking.DEFAULT.names)
    # With a ranking too, both; with queue rules too, all three.
    ordered = policy_file.parse({"ranking": ["victims"], "strictBudgets": {}})
    assert ordered.rules is None and ordered.order.names[:3] == ("strict budget violations", "opted-out victims", "victims")
    assert ordered.guards.strict.every
    queues = policy_file.parse({"queues": [{"name": "a", "namespaces": ["a"]}], "minimumRuntime": [{"duration": "1h"}]})
    assert queues.rules is not None and queues.guards.runtime[0].duration == 3600
    assert queues.order == ranking.DEFAULT  # minimumRuntime alone does not touch the order


def test_either_list_may_be_left_out():
    policy = policy_file.parse({"strictBudgets": {"priorityClasses": ["x"]}, "minimumRuntime": [{"namespaces": ["n"], "duration": "90s"}]})
    assert policy.guards.strict == StrictBudgets(frozenset(), frozenset({"x"}))
    assert policy.guards.runtime[0] == MinimumRuntime(90.0, frozenset({"n"}), frozenset(), 0)
    assert policy_file.parse({"minimumRuntime": []}).guards is None  # no rule at all


@pytest.mark.parametrize(
    "text, every, selects_kafka",
    [
        pytest.param("strictBudgets: {}", True, True, id="both-left-out-every-budget"),
        pytest.param("strictBudgets: {namespaces: []}", False, False, id="an-empty-list-selects-nothing"),
        pytest.param("strictBudgets: {namespaces: [], priorityClasses: []}", False, False, id="both-empty"),
        pytest.param("strictBudgets: {priorityClasses: []}", False, False, id="empty-classes"),
        pytest.param("strictBudgets: {namespaces: [kafka], priorityClasses: []}", False, True, id="one-listed"),
    ],
)
def test_only_a_rule_that_leaves_both_lists_out_makes_every_budget_strict(text, every, selects_kafka):
    strict = policy_file.parse(yaml.safe_load(text)).guards.strict
    assert strict.every is every
    kafka, other = pdb("k", allowed=0, ns="kafka"), pdb("o", allowed=0, ns="web")
    member = pod("m", ns="web", node="n1", pc="critical-data")
    assert strict.strict(kafka, ()) is selects_kafka
    assert strict.strict(other, (member,)) is every
    if not every and not selects_kafka:
        assert strict.describe().startswith("no PodDisruptionBudget")


@pytest.mark.parametrize(
    "text, message",
    [
        pytest.param("strictBudgets: {namespace: [kafka]}", "strictBudgets.namespace: unknown field (did you mean namespaces?)", id="typo"),
        pytest.param("strictBudgets: {namespaces: kafka}", "strictBudgets.namespaces: Input should be a valid list", id="not-a-list"),
        pytest.param("strictBudgets:", "strictBudgets: empty: name namespaces and/or priorityClasses, or write {} to make every PodDisruptionBudget strict", id="null"),
        pytest.param("strictBudgets: [kafka]", "strictBudgets: ['kafka'] is not a mapping", id="a-list"),
        pytest.param("minimumRuntime: {duration: 10m}", "minimumRuntime: Input should be a valid list", id="not-a-list-of-rules"),
        pytest.param("minimumRuntime: [{duration: 10}]", "minimumRuntime[0].duration: 10 is not a duration such as 30s or 5m (units ms, s, m, h; 1m30s combines them): write the unit, as in 10s", id="bare-number"),
        pytest.param("minimumRuntime: [{duration: ten}]", "minimumRuntime[0].duration: 'ten' is not a duration", id="bad-duration"),
        pytest.param("minimumRuntime: [{duration: 5m}, {duration: 0s}]", "minimumRuntime[1].duration: 0s protects no pod", id="zero"),
        pytest.param("minimumRuntime: [{namespaces: [a]}]", "minimumRuntime[0].duration: Field required", id="no-duration"),
        pytest.param("minimumRuntime: [{duration: 5m, priorityClass: [x]}]", "minimumRuntime[0].priorityClass: unknown field (did you mean priorityClasses?)", id="typo-in-rule"),
        pytest.param("minimumRuntime: [{duration: 5m, namespaces: [1]}]", "minimumRuntime[0].namespaces.0: Input should be a valid string", id="not-a-string"),
    ],
)
def test_guard_mistakes_name_the_key(text, message):
    with pytest.raises(ConfigError) as caught:
        policy_file.parse(yaml.safe_load(text) or {}, source="p.yaml")
    assert message in str(caught.value), str(caught.value)
    assert str(caught.value).startswith("policy p.yaml: ")
