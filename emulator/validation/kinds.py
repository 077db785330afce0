"""The modules of kind rules, in one list so the registry sees every one."""

from __future__ import annotations

import importlib
from types import ModuleType

_NAMES = (
    "pods",
    "apps",
    "batch",
    "configmaps",
    "events",
    "leases",
    "namespaces",
    "nodes",
    "policy",
    "rbac",
    "scheduling",
    "secrets",
    "services",
    "volumes",
    "watched",
)

MODULES: tuple[ModuleType, ...] = tuple(
    importlib.import_module(f"kubetrio.emulator.validation.{name}") for name in _NAMES
)
