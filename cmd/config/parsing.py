"""Text from a flag or an environment variable turned into a value, by the setting's kind.

Errors name the flag or variable (``label``): the text is parsed as it is read, before it is
merged with the file, so a bad value is reported as the operator typed it.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

from kubetrio.cmd.config.errors import ConfigError, show
from kubetrio.cmd.config.settings import Kind
from kubetrio.runtime.util.duration import Duration

__all__ = ["parse_list", "parse_text"]

_TRUE: Final = frozenset({"1", "t", "true", "yes", "y", "on"})
_FALSE: Final = frozenset({"0", "f", "false", "no", "n", "off"})


def parse_text(kind: Kind, text: str, label: str, *, empty_is_unset: bool = False) -> Any:
    """The value ``text`` stands for; ``empty_is_unset``: empty text is None (not set)."""
    value = text.strip()
    try:
        if kind == "bool":
            lowered = value.lower()
            if lowered not in _TRUE | _FALSE:
                raise ValueError(f"expected true or false, got {show(text)}")
            return lowered in _TRUE
        if kind == "int":
            if not re.fullmatch(r"[+-]?\d+", value):
                raise ValueError(f"expected an integer, got {show(text)}")
            return int(value)
        if kind == "float":
            try:
                number = float(value)
            except ValueError:
                raise ValueError(f"expected a number, got {show(text)}") from None
            if not math.isfinite(number):
                raise ValueError(f"expected a finite number, got {show(text)}")
            return number
        if kind == "duration":
            return float(Duration.parse(value))
        if kind == "list":
            return parse_list(text)
    except ValueError as exc:
        raise ConfigError(f"{label}: {exc}") from None
    if empty_is_unset and not value:
        return None
    return text


def parse_list(text: str) -> list[str]:
    """Comma-separated names; an empty list or item is refused, not dropped: ``a,,b`` or a
    trailing comma is a typo, and an empty ``--controllers`` would run nothing at all."""
    if not text.strip():
        raise ValueError("expected a comma-separated list of names, got an empty value")
    items = [item.strip() for item in text.split(",")]
    for number, item in enumerate(items, 1):
        if not item:
            raise ValueError(f"item {number} of {show(text)} is empty")
    return items
