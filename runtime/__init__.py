"""kubetrio's framework: work queue, rate limiters, client, informers, controllers, manager.

The helpers every reconciler needs are importable from here (each module's docstring has an
example): finalizers, status conditions, owner references, merge patches, create-or-patch,
server-side apply.
They load on first use, so importing one ``kubetrio.runtime`` module (the emulator's child
process, the CLI) does not pay for the client stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubetrio.api.condition import Condition
    from kubetrio.runtime.util.apply import server_side_apply
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
    "Condition",
    "OperationResult",
    "apply_merge_patch",
    "create_or_patch",
    "ensure_finalizer",
    "find_condition",
    "is_condition_true",
    "is_controlled_by",
    "merge_patch",
    "new_controller_ref",
    "remove_condition",
    "remove_finalizer",
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
