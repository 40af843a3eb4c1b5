"""Jobs' retry budgets: what evicting a Job's pods costs the Job (batch/v1).

kube-scheduler marks a victim with the condition DisruptionTarget (status True, reason
PreemptionByScheduler) and deletes it. The Job controller counts the pod as failed unless the
Job's ``podFailurePolicy`` says otherwise; the first of its rules whose ``onPodConditions``
match DisruptionTarget (a pattern's status defaults to True) decides what the eviction does:

| the rule's action | what one eviction does |
|---|---|
| ``Ignore`` | nothing: the pod is replaced, no retry is spent |
| ``FailJob`` | the Job fails at once |
| ``FailIndex`` | the pod's index fails at once (with ``backoffLimitPerIndex``) |
| ``Count``, or no rule matches | one retry is spent |

A retry spent counts against ``backoffLimit`` (6 when unset): the Job fails once its failures
exceed it (upstream's ``failed > backoffLimit``), so with ``f`` failed so far it survives
``backoffLimit - f`` more evictions and the next fails it. With ``backoffLimitPerIndex`` the
retry counts against the pod's index too (``batch.kubernetes.io/job-completion-index``, whose
failures so far the pod carries in ``batch.kubernetes.io/job-index-failure-count``), and the
index fails once its failures exceed that limit. A Job's failures so far are its
``status.failed`` plus ``status.uncountedTerminatedPods.failed`` (failed pods the controller
has not yet counted). A finished Job (condition Complete or Failed) and an index already in
``status.failedIndexes`` lose nothing more.

Rules on exit codes are not matched: what a killed container exits with is not known before
it is killed, so a Job is judged by its pod-condition rules (upstream, an ``onExitCodes`` rule
listed before them that matches the killed container's exit code would decide instead).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # policy.model holds a JobIndex per pod: imported for types only
    from policy.model import Pod

INDEX = "batch.kubernetes.io/job-completion-index"  # a pod's index: an annotation, and a label since 1.28
INDEX_FAILURES = "batch.kubernetes.io/job-index-failure-count"  # the index's failures before this pod
# The pod annotations read here (the extender keeps only the annotations it reads).
ANNOTATIONS = frozenset({INDEX, INDEX_FAILURES})
DEFAULT_BACKOFF_LIMIT = 6
DISRUPTION = "DisruptionTarget"


class OnDisruption(Enum):
    """What a Job's podFailurePolicy does with a pod that failed with DisruptionTarget."""

    COUNT = "Count"
    IGNORE = "Ignore"
    FAIL_JOB = "FailJob"
    FAIL_INDEX = "FailIndex"


class JobIndex(NamedTuple):
    """An Indexed Job's pod: its completion index and that index's failures before it."""

    index: int
    failures: int = 0


@dataclass(frozen=True, slots=True)
class Job:
    """What a Job's retry budget needs, read once from the Job (extender.state.translate)."""

    uid: str
    namespace: str
    name: str
    backoff_limit: int = DEFAULT_BACKOFF_LIMIT
    failed: int = 0  # status.failed, with the failures not yet counted
    on_disruption: OnDisruption = OnDisruption.COUNT
    rule: int | None = None  # the podFailurePolicy rule that decides on_disruption; None: none matches
    per_index: int | None = None  # backoffLimitPerIndex
    failed_indexes: tuple[tuple[int, int], ...] = ()  # status.failedIndexes, as (first, last) ranges, ascending
    finished: bool = False  # condition Complete or Failed
    key: str = field(init=False, compare=False)  # namespace/name

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.namespace}/{self.name}")

    def index_failed(self, index: int) -> bool:
        """Whether ``index`` is in status.failedIndexes."""
        at = bisect.bisect_right(self.failed_indexes, (index, float("inf"))) - 1
        return at >= 0 and self.failed_indexes[at][0] <= index <= self.failed_indexes[at][1]

    def ruled(self) -> str:
        """``podFailurePolicy.rules[i]`` for the rule that decides, for reasons."""
        return f"podFailurePolicy.rules[{self.rule}]"


@dataclass(frozen=True, slots=True)
class Budget:
    """A Job's (or one of its indexes') evictions to spare: ``left`` more fail nothing, the next
    fails it."""

    key: str  # "Job ns/name", "Job ns/name index 3"
    left: int
    why: str  # "backoffLimit 6, 2 failed"

    def describe(self) -> str:
        return f"{self.key} ({self.why})"


@dataclass(frozen=True, slots=True)
class Stake:
    """What evicting one pod costs the Job that owns it."""

    job: Job
    index: int | None  # its completion index, where the Job has a budget per index
    counts: bool  # the Job counts the pod's failure (a retry spent, or a FailJob/FailIndex rule)
    budgets: tuple[Budget, ...] = ()  # the budgets one eviction spends from, the index's first

    def fails_alone(self) -> Budget | None:
        """The budget one eviction of this pod exhausts, if any."""
        return next((b for b in self.budgets if b.left == 0), None)

    def describe(self) -> str:
        """Its Job's stake in words, for reasons and Events."""
        job = f"its Job {self.job.key}"
        if self.job.finished:
            return f"{job} has finished"
        if not self.counts:
            return f"{job} ignores DisruptionTarget ({self.job.ruled()}: Ignore)"
        failing = self.fails_alone()
        if failing is not None:
            whose = job if failing.key == f"Job {self.job.key}" else f"index {self.index} of {job}"
            return f"{whose} fails if it is evicted ({failing.why})"
        return f"{job} spends a retry if it is evicted ({'; '.join(b.why for b in self.budgets) or 'past its backoffLimit'})"


# pod -> what evicting it costs its Job, or None where no Job owns it (ClusterView.stake_of)
StakeOf = Callable[["Pod"], Stake | None]


def stake(job: Job, index: JobIndex | None) -> Stake:
    """What evicting a pod of ``job`` (with completion ``index``, if it has one) costs it."""
    per_index = index if job.per_index is not None and index is not None else None
    at = per_index.index if per_index is not None else None
    if job.finished or job.on_disruption is OnDisruption.IGNORE:
        return Stake(job, at, False)
    if job.on_disruption is OnDisruption.FAIL_JOB:
        return Stake(job, at, True, (Budget(f"Job {job.key}", 0, f"{job.ruled()}: FailJob on {DISRUPTION}"),))
    budgets = []
    if per_index is not None and not job.index_failed(per_index.index):
        key = f"Job {job.key} index {per_index.index}"
        if job.on_disruption is OnDisruption.FAIL_INDEX:
            budgets.append(Budget(key, 0, f"{job.ruled()}: FailIndex on {DISRUPTION}"))
        elif (left := job.per_index - per_index.failures) >= 0:
            budgets.append(Budget(key, left, f"backoffLimitPerIndex {job.per_index}, {per_index.failures} failed"))
    if (left := job.backoff_limit - job.failed) >= 0:  # below 0 it is failing already
        budgets.append(Budget(f"Job {job.key}", left, f"backoffLimit {job.backoff_limit}, {job.failed} failed"))
    return Stake(job, at, True, tuple(budgets))


def failing(victims: Iterable["Pod"], stake_of: StakeOf | None) -> tuple[Budget, ...]:
    """The budgets the live ``victims`` exhaust: more of them spend one than it has ``left``
    (where its pods disagree, the fewest any of them gives). Sorted by key."""
    if stake_of is None:
        return ()
    taken: dict[str, list] = {}
    for pod in victims:
        found = None if pod.terminating else stake_of(pod)
        for budget in found.budgets if found is not None else ():
            entry = taken.setdefault(budget.key, [budget, 0])
            if budget.left < entry[0].left:
                entry[0] = budget
            entry[1] += 1
    return tuple(sorted((b for b, n in taken.values() if n > b.left), key=lambda b: b.key))


def burns(pod: "Pod", stake_of: StakeOf | None) -> bool:
    """Whether the Job owning ``pod`` counts its eviction as a failure."""
    found = stake_of(pod) if stake_of is not None else None
    return found is not None and found.counts


def less_taken(stake_of: StakeOf, taken: Sequence["Pod"]) -> StakeOf:
    """``stake_of`` with the budgets spent by the live pods of ``taken`` (victims of answers in
    flight: going, though the view still shows them running). A budget they exhaust has failed
    with those answers: no further eviction fails it again."""
    spent: dict[str, int] = {}
    for pod in taken:
        found = None if pod.terminating else stake_of(pod)
        for budget in found.budgets if found is not None else ():
            spent[budget.key] = spent.get(budget.key, 0) + 1
    if not spent:
        return stake_of

    def after(pod: "Pod") -> Stake | None:
        found = stake_of(pod)
        if found is None or not any(b.key in spent for b in found.budgets):
            return found
        left = tuple(
            Budget(b.key, b.left - spent[b.key], f"{b.why}, {spent[b.key]} more taken by answers in flight") if b.key in spent else b
            for b in found.budgets
            if b.left - spent.get(b.key, 0) >= 0
        )
        return Stake(found.job, found.index, found.counts, left)

    return after


def parse_ranges(text: str) -> tuple[tuple[int, int], ...]:
    """``status.failedIndexes`` ("1,3-5") as ascending (first, last) ranges; ValueError naming
    what is wrong. Empty text: none."""
    ranges: list[tuple[int, int]] = []
    for part in text.split(",") if text else ():
        first, dash, last = part.partition("-")
        if not _digits(first) or (dash and not _digits(last)):
            raise ValueError(f"{part!r} is not an index or a range of them (e.g. 1,3-5)")
        low, high = int(first), int(last) if dash else int(first)
        if high < low or (ranges and low <= ranges[-1][1]):
            raise ValueError(f"{part!r}: indexes must be ascending ranges (e.g. 1,3-5)")
        ranges.append((low, high))
    return tuple(ranges)


def _digits(text: str) -> bool:
    # ASCII digits only (str.isdigit() accepts "²"), and no more than an int32's.
    return text.isascii() and text.isdigit() and len(text) <= 10


def index_of(*, annotations: dict[str, str], labels: dict[str, str]) -> JobIndex | None:
    """A pod's completion index and its index's failures before it, or None if it carries no
    readable index (not an Indexed Job's pod)."""
    text = annotations.get(INDEX) or labels.get(INDEX)
    if text is None or not _digits(text):
        return None
    failures = annotations.get(INDEX_FAILURES, "0")
    return JobIndex(int(text), int(failures) if _digits(failures) else 0)


def reasons(victims: Sequence["Pod"], stake_of: StakeOf | None, failed: Sequence[Budget], limit: int = 3) -> tuple[str, ...]:
    """The words of a victim set's reasons: the Jobs (or indexes) it fails, and the retries it burns."""
    lines = []
    if failed:
        lines.append(f"fails {len(failed)} Job(s) or index(es): " + "; ".join(b.describe() for b in failed))
    burning = [p for p in victims if not p.terminating and burns(p, stake_of)]
    if burning:
        named = ", ".join(f"{p.key} (Job {stake_of(p).job.key})" for p in burning[:limit])
        more = f" and {len(burning) - limit} more" if len(burning) > limit else ""
        lines.append(f"burns {len(burning)} Job retr{'y' if len(burning) == 1 else 'ies'}: {named}{more}")
    return tuple(lines)


def spend(jobs: Mapping[str, Job], victims: Iterable["Pod"], stake_of: StakeOf) -> dict[str, Job]:
    """The Jobs (by UID) that the live ``victims`` change, as the Job controller leaves them:
    each failure it counts added to ``failed``, an index whose budget they exhaust added to
    ``failed_indexes``, and a Job whose own budget they exhaust finished (failed)."""
    live = [p for p in victims if not p.terminating]
    exhausted = {b.key for b in failing(live, stake_of)}
    counted: dict[str, int] = {}
    indexes: dict[str, set[int]] = {}
    finished: set[str] = set()
    for pod in live:
        found = stake_of(pod)
        if found is None or not found.counts or found.job.uid not in jobs:
            continue
        uid = found.job.uid
        counted[uid] = counted.get(uid, 0) + 1
        for budget in found.budgets:
            if budget.key not in exhausted:
                continue
            if budget.key == f"Job {found.job.key}":
                finished.add(uid)
            elif found.index is not None:
                indexes.setdefault(uid, set()).add(found.index)
    changed = {}
    for uid, n in counted.items():
        job = jobs[uid]
        failed_indexes = job.failed_indexes
        if uid in indexes:
            failed_indexes = _merged(failed_indexes, indexes[uid])
        changed[uid] = replace(job, failed=job.failed + n, failed_indexes=failed_indexes, finished=job.finished or uid in finished)
    return changed


def _merged(ranges: tuple[tuple[int, int], ...], more: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """``ranges`` with the indexes ``more`` added, as ascending ranges that neither overlap nor touch."""
    out: list[list[int]] = []
    for first, last in sorted([*ranges, *((i, i) for i in more)]):
        if out and first <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], last)
        else:
            out.append([first, last])
    return tuple((a, b) for a, b in out)
