"""resource.Quantity's text form read as an exact number, so requests and limits compare as
kube compares them (``1000m`` equals ``1``, ``1Gi`` is ``1024Mi``)."""

from __future__ import annotations

import functools
import re
from fractions import Fraction

_FORM = re.compile(r"([+-]?)(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?\Z")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse(value: object) -> Fraction | None:
    """The quantity's value, or None when it is not one (JSON numbers count, as kube reads
    them)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Fraction(value)
    if not isinstance(value, str):
        return None
    return _parse_text(value)


@functools.lru_cache(maxsize=1024)
def _parse_text(value: str) -> Fraction | None:
    """Cached: pods repeat the same few quantities, and pod creation is hot."""
    m = _FORM.match(value.strip())
    if m is None:
        return None
    sign, number, suffix = m.groups()
    amount = Fraction(number)
    if sign == "-":
        amount = -amount
    if not suffix:
        return amount
    if suffix in _BINARY:
        return amount * (1 << _BINARY[suffix])
    exponent = _DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:])
    return amount * Fraction(10) ** exponent
