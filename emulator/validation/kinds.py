"""The modules of kind rules, in one list so the registry sees every one."""

from __future__ import annotations

from types import ModuleType

MODULES: tuple[ModuleType, ...] = ()
