"""The errors reprieve raises on purpose.

    ReprieveError
    ├── BadRequest      a request body the extender protocol does not allow (HTTP 400)
    │   └── TooLarge    a request over one of reprieve's size limits (HTTP 413)
    ├── SnapshotError   a snapshot file or object reprieve cannot use (startup stops)
    └── ConfigError     a command-line or configuration value that cannot work (startup stops)
"""


class ReprieveError(Exception):
    pass


class BadRequest(ReprieveError):
    status = 400


class TooLarge(BadRequest):
    status = 413


class SnapshotError(ReprieveError):
    pass


class ConfigError(ReprieveError):
    pass
