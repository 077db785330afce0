"""The modules of kind rules, in one list so the registry sees every one."""

from __future__ import annotations

from types import ModuleType

from kubetrio.emulator.validation import apps, batch, pods, watched

MODULES: tuple[ModuleType, ...] = (pods, apps, batch, watched)
