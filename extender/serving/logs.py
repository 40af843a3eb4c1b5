"""Structured logging: one JSON object per line, every field bounded.

Strings are cut to LOG_STRING_CHARS characters and lists and maps to their first
LOG_ITEMS entries, each cut saying how much it left out, so that no request (a huge name,
20,000 unknown nodes) can write an unbounded line; a traceback keeps its last
LOG_TRACEBACK_CHARS characters. Integers beyond 64 bits are written as strings rather than
losing the line.
"""

from __future__ import annotations

import logging
import sys
import time
from itertools import islice

import orjson

LOG_STRING_CHARS = 1_024
LOG_ITEMS = 1_000
LOG_TRACEBACK_CHARS = 8_192  # the end of a traceback, where the exception is
_INT64 = range(-(2**63), 2**64)  # what orjson writes as a number


def bounded(value):
    """``value`` with every string, list and map cut to the limits above."""
    kind = type(value)
    if kind is str and len(value) <= LOG_STRING_CHARS or value is None or kind is bool or kind is float:
        return value  # the common case, first: a preempt line holds thousands of short strings
    if kind is str:  # longer than LOG_STRING_CHARS
        return f"{value[:LOG_STRING_CHARS]}... ({len(value) - LOG_STRING_CHARS} more characters)"
    if kind is dict:
        out = {k if type(k) is not str or len(k) <= LOG_STRING_CHARS else bounded(k): bounded(v) for k, v in islice(value.items(), LOG_ITEMS)}
        if len(value) > LOG_ITEMS:
            out["..."] = f"{len(value) - LOG_ITEMS} more entries"
        return out
    if kind is list or kind is tuple:
        out = [bounded(v) for v in islice(value, LOG_ITEMS)]
        if len(value) > LOG_ITEMS:
            out.append(f"... {len(value) - LOG_ITEMS} more entries")
        return out
    if kind is int and value not in _INT64:
        return str(value)
    return value


class JsonFormatter(logging.Formatter):
    converter = time.gmtime  # "time" is UTC, written with its Z like every other time reprieve shows

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%SZ"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update(getattr(record, "fields", {}))
        entry = bounded(entry)
        if record.exc_info:
            trace = self.formatException(record.exc_info)
            entry["exc"] = trace if len(trace) <= LOG_TRACEBACK_CHARS else "..." + trace[-LOG_TRACEBACK_CHARS:]
        return orjson.dumps(entry, default=str).decode()


def configure(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def event(logger: logging.Logger, msg: str, level: int = logging.INFO, /, **fields) -> None:
    """Log ``msg`` with ``fields`` as top-level JSON keys (not time, level, logger or msg)."""
    logger.log(level, msg, extra={"fields": fields})
