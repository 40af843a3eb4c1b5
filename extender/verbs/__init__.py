"""One module per extender verb: parse -> translate -> decide -> serialise."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from extender.metrics import Metrics
from extender.standings import Standings
from policy.view import ClusterView


@dataclass(frozen=True)
class Context:
    view: ClusterView | None  # None: not ready, give the documented safe answer
    metrics: Metrics
    log: logging.Logger
    standings: Standings | None = None  # the --policy rules; None: Kubernetes rules only
