"""The modules of kind rules, in one list so the registry sees every one."""

from __future__ import annotations

from types import ModuleType

from kubetrio.emulator.validation import (
    apps,
    batch,
    configmaps,
    events,
    leases,
    namespaces,
    nodes,
    pods,
    policy,
    rbac,
    scheduling,
    secrets,
    services,
    volumes,
    watched,
)

MODULES: tuple[ModuleType, ...] = (
    pods,
    apps,
    batch,
    configmaps,
    events,
    leases,
    namespaces,
    nodes,
    policy,
    rbac,
    scheduling,
    secrets,
    services,
    volumes,
    watched,
)
