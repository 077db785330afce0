"""Typed Kubernetes API objects and the kind registry shared by client, informers and emulator.

The names users declare their own kinds with are importable from here (``from kubetrio.api
import KubeObject, Model, resource``); they load lazily so ``import kubetrio.api`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubetrio.api.condition import Condition
    from kubetrio.api.declare import resource
    from kubetrio.api.markers import PreserveUnknownFields
    from kubetrio.api.meta import KubeObject, Model, ObjectMeta
    from kubetrio.api.registry import PrinterColumn, Scale, register

__all__ = [
    "Condition",
    "KubeObject",
    "Model",
    "ObjectMeta",
    "PreserveUnknownFields",
    "PrinterColumn",
    "Scale",
    "register",
    "resource",
]

_HOME = {
    "Condition": "kubetrio.api.condition",
    "KubeObject": "kubetrio.api.meta",
    "Model": "kubetrio.api.meta",
    "ObjectMeta": "kubetrio.api.meta",
    "PreserveUnknownFields": "kubetrio.api.markers",
    "PrinterColumn": "kubetrio.api.registry",
    "Scale": "kubetrio.api.registry",
    "register": "kubetrio.api.registry",
    "resource": "kubetrio.api.declare",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'kubetrio.api' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
