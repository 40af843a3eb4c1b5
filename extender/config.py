"""Settings: one frozen object, read once from the command line (environment as fallback)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Mode(str, Enum):
    """Whether reprieve's decisions reach the scheduler."""

    ENFORCE = "enforce"  # answer with reprieve's decisions
    SHADOW = "shadow"  # answer as if reprieve were not there; log and count what it would have done


class Events(str, Enum):
    """Which Kubernetes Events reprieve records about the preemptions it sees carried out."""

    ON = "true"  # on the preemptor and each victim of a preemption reprieve answered (enforce mode)
    OFF = "false"  # none
    SHADOW = "shadow"  # as ON, and in shadow mode a "would have" Event on each preemptor


@dataclass(frozen=True)
class Settings:
    bind: str = "127.0.0.1:8888"
    threads: int = 4
    # Non-cache-mode requests carry whole Node objects; 64 MiB is ~10,000 of them.
    max_body_bytes: int = 64 * 2**20
    log_level: str = "INFO"
    # Seconds a live view may lag behind the API server (a broken watch, a relist) before
    # /readyz fails and the verbs give their safe answers.
    staleness_bound: float = 5.0
    mode: Mode = Mode.ENFORCE
    events: Events = Events.ON
