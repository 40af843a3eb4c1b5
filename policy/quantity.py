"""Kubernetes resource quantities as the integers the scheduler compares.

cpu is counted in millicores and everything else in whole units (bytes for memory and
ephemeral-storage, items for extended resources and pods), rounded up like upstream's
``Quantity.MilliValue()`` / ``Quantity.Value()``.

The grammar is upstream's (k8s.io/apimachinery/pkg/api/resource, ``parseQuantityString``):
ASCII digits only, an optional sign, a decimal or binary SI suffix or a decimal exponent.
Two bounds upstream leaves to the request size: a quantity has at most ``MAX_CHARS``
characters (the API server stores canonical forms, at most about 25), and its magnitude in
milli-units fits an int64 (upstream caps larger values; reprieve refuses them).
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, DecimalException

CPU = "cpu"

_SUFFIX = {
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_MAX = Decimal(2) ** 63 / 1000
MAX_CHARS = 64
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$",
    re.ASCII,  # \d is 0-9, as upstream: no other script's digits
)
_SPACE = " \t\n\r\v\f"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Decimal:
    """The exact decimal value of a quantity such as ``500m``, ``4Gi`` or ``1e3``."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise QuantityError(f"quantity must be a string or a number, not {type(text).__name__}")
    if isinstance(text, int) and text.bit_length() > 63:  # before str(): a huge int is slow to print
        raise QuantityError("the number is out of range")
    text = str(text)
    if len(text) > MAX_CHARS:
        raise QuantityError(f"{shown(text)} is too long for a quantity ({len(text)} characters, at most {MAX_CHARS})")
    if not text.isascii():
        raise QuantityError(f"{text!r} is not a quantity: digits, sign and suffix are ASCII (examples: 500m, 2, 4Gi)")
    match = _QUANTITY.match(text.strip(_SPACE))
    if match is None:
        raise QuantityError(f"{text!r} is not a quantity (examples: 500m, 2, 4Gi, 1e3)")
    try:
        value = Decimal(match["num"])
        if match["exp"]:
            exponent = int(match["exp"][1:])
            if abs(exponent) > 40:
                raise QuantityError(f"{text!r} is out of range")
            value = value.scaleb(exponent)
        else:
            value = value * _SUFFIX[match["suffix"] or ""]
    except DecimalException as exc:  # pragma: no cover - the regex and MAX_CHARS admit only small decimals
        raise QuantityError(f"{text!r} is not a quantity") from exc
    # Upstream quantities are int64 in milli-units at most; anything larger is a mistake, and
    # turning it into a huge integer later would stall the process.
    if value.copy_abs() >= _MAX:
        raise QuantityError(f"{text!r} is out of range")
    return value


def shown(text: str, limit: int = 24) -> str:
    """``text`` quoted for a message, cut to ``limit`` characters."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}..."


def to_units(resource: str, text: str | int | float) -> int:
    """The integer the scheduler uses for ``resource``: millicores for cpu, else whole units."""
    value = parse_quantity(text)
    if resource == CPU:
        value *= 1000
    return int(value.to_integral_value(rounding=ROUND_CEILING))
