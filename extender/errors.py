"""The errors reprieve raises on purpose.

    ReprieveError
    ├── BadRequest      a request body the extender protocol does not allow (HTTP 400)
    │   └── TooLarge    a request over one of reprieve's size limits (HTTP 413)
    ├── Unanswerable    a valid request no answer of the protocol can serve (HTTP 422)
    ├── SnapshotError   a snapshot file or object reprieve cannot use (startup stops)
    └── ConfigError     a command-line or configuration value that cannot work (startup stops)
"""


class ReprieveError(Exception):
    pass


class BadRequest(ReprieveError):
    status = 400


class TooLarge(BadRequest):
    status = 413


class Unanswerable(ReprieveError):
    """The scheduler's own choice must stand (it skips an ignorable extender that answers an
    error): see policy.preempt.PreemptDecision.defers."""

    status = 422


class SnapshotError(ReprieveError):
    pass


class ConfigError(ReprieveError):
    pass
