"""Kubernetes resource quantities as the integers the scheduler compares.

cpu is counted in millicores and everything else in whole units (bytes for memory and
ephemeral-storage, items for extended resources and pods), rounded up like upstream's
``Quantity.MilliValue()`` / ``Quantity.Value()``.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

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
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Decimal:
    """The exact decimal value of a quantity such as ``500m``, ``4Gi`` or ``1e3``."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise QuantityError(f"quantity must be a string or a number, not {type(text).__name__}")
    match = _QUANTITY.match(str(text).strip())
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
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only valid decimals
        raise QuantityError(f"{text!r} is not a quantity") from exc
    # Upstream quantities are int64 in milli-units at most; anything larger is a mistake, and
    # turning it into a huge integer later would stall the process.
    if value.copy_abs() >= _MAX:
        raise QuantityError(f"{text!r} is out of range")
    return value


def to_units(resource: str, text: str | int | float) -> int:
    """The integer the scheduler uses for ``resource``: millicores for cpu, else whole units."""
    value = parse_quantity(text)
    if resource == CPU:
        value *= 1000
    return int(value.to_integral_value(rounding=ROUND_CEILING))
