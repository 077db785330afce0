"""``ConfigError`` and how values and field paths read in its one-line messages."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ConfigError", "dotted", "show"]


class ConfigError(Exception):
    """A configuration problem; ``str(error)`` is the single line to show the operator."""


def show(value: object) -> str:
    """A value for an error message: strings in double quotes as the operator typed them."""
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    return repr(value)


def dotted(path: Sequence[str]) -> str:
    """A field path as a file writes it: ``leaderElection.leaseDuration``, ``controllers[1]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out
