"""``Duration``: a length of time in seconds that reads and prints the way Go writes it.

Operators coming from Go controllers write ``15s`` or ``1h30m`` in flags and config files; a
float subclass lets the parsed value go to trio as is, and printing it back Go's way lets a
dumped configuration read like the one that was written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Final

__all__ = ["Duration"]

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS: Final[Mapping[str, float]] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_NUMBER = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)$")


class Duration(float):
    """A non-negative length of time in seconds (so trio takes it as is), written Go's way.

    Accepts Go duration strings (``"15s"``, ``"1h30m"``, ``"100ms"``) and plain numbers of
    seconds (a flag's ``30``; whether a config file may write a bare number is the loader's
    call); prints back as a Go-style string.
    """

    @classmethod
    def parse(cls, value: object) -> Duration:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError(f'expected a duration like "15s", got {_as_typed(value)}')
        if isinstance(value, int | float):
            if value < 0 or value != value or value == float("inf"):
                raise ValueError(f"expected a non-negative duration, got {value!r}")
            return cls(value)
        text = value.strip()
        if _NUMBER.match(text):
            return cls.parse(float(text))
        position, total = 0, 0.0
        for match in _DURATION_PART.finditer(text):
            if match.start() != position:
                break
            total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
            position = match.end()
        if not text or position != len(text):
            raise ValueError(f'expected a duration like "15s", got {_as_typed(value)}')
        if not math.isfinite(total):  # enough digits overflow a float
            raise ValueError(f"expected a finite duration, got {_as_typed(value)}")
        return cls(total)

    def __str__(self) -> str:
        seconds = float(self)
        if seconds == 0:
            return "0s"
        if seconds < 1:
            for unit, size in (("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
                if seconds >= size:
                    return f"{_compact(seconds / size)}{unit}"
            return f"{_compact(seconds / 1e-9)}ns"
        hours, rest = divmod(seconds, 3600)
        minutes, secs = divmod(rest, 60)
        parts = [f"{int(hours)}h"] if hours else []
        if minutes:
            parts.append(f"{int(minutes)}m")
        if secs or not parts:
            parts.append(f"{_compact(secs)}s")
        return "".join(parts)

    def __repr__(self) -> str:
        return f"Duration({str(self)!r})"


def _compact(number: float) -> str:
    return format(round(number, 9), ".12g")


def _as_typed(value: object) -> str:
    """A value as the operator typed it: a string in double quotes, anything else as Python
    shows it."""
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    return repr(value)
