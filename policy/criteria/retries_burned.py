"""Fewest retries burned (policy.jobs): victims whose Job counts their eviction as a failure,
spending one of its ``backoffLimit`` retries (or failing it outright, with a FailJob or
FailIndex rule for DisruptionTarget). A victim whose Job ignores DisruptionTarget, or that no
Job owns, burns none. Right after the highest victim priority by default (an explicit signal,
before the inferred QoS classes and homes): docs/policy.md says why, with the measurements."""

from __future__ import annotations

from policy import jobs
from policy.criteria.criterion import Criterion, Facts, Kind, Stay
from policy.model import Pod


def _of_pod(pod: Pod, facts: Facts) -> int:
    return int(jobs.burns(pod, facts.stake_of))


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    mine, theirs = stay.stakes.get(pod.uid), stay.stakes.get(victim.uid)
    if mine is None or not mine.counts or (theirs is not None and theirs.counts):
        return None
    if theirs is None:
        other = f"no Job owns {victim.key}"
    elif theirs.job.finished:
        other = f"{victim.key}'s Job {theirs.job.key} has finished"
    else:
        other = f"{victim.key}'s Job {theirs.job.key} ignores DisruptionTarget"
    return f"{mine.describe()}, where {other}"


def _brief(value: float, _) -> str | None:
    return f"{value} retr{'y' if value == 1 else 'ies'} burned" if value else None


# No floor: 0 bounds it (a candidate's Job is looked up per request, never kept in a node's summary).
CRITERION = Criterion(
    name="retries burned", field="retries_burned", kind=Kind.SUM, of_pod=_of_pod, brief=_brief, stays=_stays,
)
