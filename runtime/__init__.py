"""kubetrio's framework, and its front door: everything a controller author needs, from here.

    from kubetrio.runtime import Manager, ObjectKey, Result, load_client

``Manager`` runs controllers (``manager.controller(name).for_(Kind)...complete(reconciler)``)
over one shared cache; ``load_client()`` finds the API server by client-go's rules (the
``--kubeconfig`` path, ``$KUBECONFIG``, the pod's ServiceAccount, ``~/.kube/config``); a
reconciler gets an ``ObjectKey`` and answers a ``Result`` (or raises; ``TerminalError`` stops
the retries); the predicates filter events; ``now()`` is the wall clock that follows trio's
(so a reconciler's time is the test's MockClock), and the helpers (finalizers, owner
references, conditions, merge patches, create-or-patch, server-side apply) each make one write
that cannot drop another writer's fields.

Each concept has a package of its own below this one (``client``, ``cache``, ``controller``,
``manager``, ``leaderelection``, ``metrics``, ``certs``, ``webhook``, ``events``, ``util``,
``gen``); reach into them for what is not here. Names load on first use, so a process that
imports one small module (the emulator's child, the CLI) does not pay for the client stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubetrio.api.condition import Condition
    from kubetrio.runtime.client.errors import ApiError
    from kubetrio.runtime.client.kubeconfig import KubeconfigError
    from kubetrio.runtime.client.loading import load_client
    from kubetrio.runtime.client.typed import Client
    from kubetrio.runtime.controller.controller import Reconciler, Result, TerminalError
    from kubetrio.runtime.controller.predicates import (
        Predicate,
        and_,
        annotation_changed,
        generation_changed,
        has_labels,
        label_changed,
        not_,
        on_events,
        or_,
        resource_version_changed,
    )
    from kubetrio.runtime.controller.queue import ObjectKey
    from kubetrio.runtime.gen.rbac import Permissions
    from kubetrio.runtime.manager.manager import Manager
    from kubetrio.runtime.util.apply import server_side_apply
    from kubetrio.runtime.util.clock import now, seconds_since
    from kubetrio.runtime.util.conditions import (
        find_condition,
        is_condition_true,
        remove_condition,
        set_condition,
    )
    from kubetrio.runtime.util.createorpatch import OperationResult, create_or_patch
    from kubetrio.runtime.util.finalizers import ensure_finalizer, remove_finalizer
    from kubetrio.runtime.util.mergepatch import apply_merge_patch, merge_patch
    from kubetrio.runtime.util.ownerrefs import (
        AlreadyOwnedError,
        is_controlled_by,
        new_controller_ref,
        set_controller_reference,
        set_owner_reference,
    )

_EXPORTS = {
    "Manager": "kubetrio.runtime.manager.manager",
    "Client": "kubetrio.runtime.client.typed",
    "load_client": "kubetrio.runtime.client.loading",
    "ApiError": "kubetrio.runtime.client.errors",
    "KubeconfigError": "kubetrio.runtime.client.kubeconfig",
    "Result": "kubetrio.runtime.controller.controller",
    "TerminalError": "kubetrio.runtime.controller.controller",
    "Reconciler": "kubetrio.runtime.controller.controller",
    "ObjectKey": "kubetrio.runtime.controller.queue",
    "Predicate": "kubetrio.runtime.controller.predicates",
    "and_": "kubetrio.runtime.controller.predicates",
    "or_": "kubetrio.runtime.controller.predicates",
    "not_": "kubetrio.runtime.controller.predicates",
    "on_events": "kubetrio.runtime.controller.predicates",
    "generation_changed": "kubetrio.runtime.controller.predicates",
    "resource_version_changed": "kubetrio.runtime.controller.predicates",
    "label_changed": "kubetrio.runtime.controller.predicates",
    "annotation_changed": "kubetrio.runtime.controller.predicates",
    "has_labels": "kubetrio.runtime.controller.predicates",
    "Permissions": "kubetrio.runtime.gen.rbac",
    "now": "kubetrio.runtime.util.clock",
    "seconds_since": "kubetrio.runtime.util.clock",
    "Condition": "kubetrio.api.condition",
    "find_condition": "kubetrio.runtime.util.conditions",
    "is_condition_true": "kubetrio.runtime.util.conditions",
    "remove_condition": "kubetrio.runtime.util.conditions",
    "set_condition": "kubetrio.runtime.util.conditions",
    "OperationResult": "kubetrio.runtime.util.createorpatch",
    "create_or_patch": "kubetrio.runtime.util.createorpatch",
    "ensure_finalizer": "kubetrio.runtime.util.finalizers",
    "remove_finalizer": "kubetrio.runtime.util.finalizers",
    "apply_merge_patch": "kubetrio.runtime.util.mergepatch",
    "merge_patch": "kubetrio.runtime.util.mergepatch",
    "AlreadyOwnedError": "kubetrio.runtime.util.ownerrefs",
    "is_controlled_by": "kubetrio.runtime.util.ownerrefs",
    "new_controller_ref": "kubetrio.runtime.util.ownerrefs",
    "set_controller_reference": "kubetrio.runtime.util.ownerrefs",
    "set_owner_reference": "kubetrio.runtime.util.ownerrefs",
    "server_side_apply": "kubetrio.runtime.util.apply",
}

__all__ = [
    "AlreadyOwnedError",
    "ApiError",
    "Client",
    "Condition",
    "KubeconfigError",
    "Manager",
    "ObjectKey",
    "OperationResult",
    "Permissions",
    "Predicate",
    "Reconciler",
    "Result",
    "TerminalError",
    "and_",
    "annotation_changed",
    "apply_merge_patch",
    "create_or_patch",
    "ensure_finalizer",
    "find_condition",
    "generation_changed",
    "has_labels",
    "is_condition_true",
    "is_controlled_by",
    "label_changed",
    "load_client",
    "merge_patch",
    "new_controller_ref",
    "not_",
    "now",
    "on_events",
    "or_",
    "remove_condition",
    "remove_finalizer",
    "resource_version_changed",
    "seconds_since",
    "server_side_apply",
    "set_condition",
    "set_controller_reference",
    "set_owner_reference",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
