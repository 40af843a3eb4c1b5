"""Settings: one frozen object, read once from the command line (environment as fallback)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from extender.serving import limits


class Mode(str, Enum):
    """Whether reprieve's decisions reach the scheduler."""

    ENFORCE = "enforce"  # answer with reprieve's decisions
    SHADOW = "shadow"  # answer as if reprieve were not there; log and count what it would have done


@dataclass(frozen=True)
class Settings:
    bind: str = "127.0.0.1:8888"
    threads: int = 4
    max_body_bytes: int = limits.MAX_BODY_BYTES
    log_level: str = "INFO"
    # Seconds a live view may lag behind the API server (a broken watch, a relist) before
    # /readyz fails and the verbs give their safe answers.
    staleness_bound: float = 5.0
    mode: Mode = Mode.ENFORCE
