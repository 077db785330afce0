"""Importing a library without the optional extras it would load and we never call.

A module stays in memory for the life of the process, so an optional integration a library
imports "in case" (structlog's rich tracebacks, pykube-ng's OAuth and JSONPath auth providers)
costs every manager megabytes for nothing. Such libraries guard those imports with
``try: import x / except ImportError``; hiding ``x`` while the library loads takes that branch.
The hidden modules are importable again afterwards, for whoever really uses them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable


def import_without(module: str, hidden: Iterable[str]) -> None:
    """Import ``module`` (once per process) while ``hidden`` cannot be imported. Nothing
    happens when ``module`` is already loaded, and a hidden module already loaded stays
    visible: hiding must never change what another part of the process sees."""
    if module in sys.modules:
        return
    masked = [name for name in hidden if name not in sys.modules]
    for name in masked:
        sys.modules[name] = None  # type: ignore[assignment]  # ``import name`` now fails
    try:
        importlib.import_module(module)
    finally:
        for name in masked:
            del sys.modules[name]
