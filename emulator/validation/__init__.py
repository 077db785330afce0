"""Validation of built-in kinds, as kube-apiserver's registry strategies validate them.

A real server runs each kind's ``Validate`` on create and ``ValidateUpdate`` on update (the
rules of ``k8s.io/kubernetes/pkg/apis/<group>/validation``) after defaulting and before storing,
and answers 422 with one cause per broken rule. Clients and controllers meet those refusals
first, so the emulator refuses the same objects with the same causes.

Each kind's rules live in a module of this package and register here by store key (group-
qualified plural); a kind without rules is accepted as it stands. Rules only read: defaulting
and admission effects belong to ``defaults`` and the admission plugins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]
CreateRules = Callable[[Obj, Causes], None]
UpdateRules = Callable[[Obj, Obj, Causes], None]

ON_CREATE: dict[str, CreateRules] = {}
ON_UPDATE: dict[str, UpdateRules] = {}
ON_STATUS_UPDATE: dict[str, UpdateRules] = {}
# Updates through other subresources that write the object (a pod's ephemeralcontainers and
# resize), by (store key, subresource).
ON_SUBRESOURCE_UPDATE: dict[tuple[str, str], UpdateRules] = {}


def _register() -> None:
    """Each module's ``RULES`` maps store keys to its (create, update, status update) rules."""
    from kubetrio.emulator.validation import kinds

    for module in kinds.MODULES:
        for key, (create, update, status) in module.RULES.items():
            if create is not None:
                ON_CREATE[key] = create
            if update is not None:
                ON_UPDATE[key] = update
            if status is not None:
                ON_STATUS_UPDATE[key] = status
        ON_SUBRESOURCE_UPDATE.update(getattr(module, "SUBRESOURCE_RULES", {}))


def _raise(rt: ResourceType, obj: Obj, causes: Causes) -> None:
    if causes:
        name = obj.get("metadata", {}).get("name") or ""
        raise errors.invalid(rt.group, rt.kind, name, causes.items)


def check_create(rt: ResourceType, obj: Obj) -> None:
    """422 Invalid with every broken rule, or nothing."""
    rules = ON_CREATE.get(rt.key)
    if rules is not None:
        causes = Causes()
        rules(obj, causes)
        _raise(rt, obj, causes)


def check_update(rt: ResourceType, new: Obj, old: Obj, subresource: str = "") -> None:
    """422 Invalid with every broken rule of an update (``status`` for the status
    subresource's own rules, other subresources' by name; a pod's ``binding`` has none),
    or nothing."""
    if subresource in ("", "status"):
        rules = (ON_STATUS_UPDATE if subresource else ON_UPDATE).get(rt.key)
    else:
        rules = ON_SUBRESOURCE_UPDATE.get((rt.key, subresource))
    if rules is not None:
        causes = Causes()
        rules(new, old, causes)
        _raise(rt, new, causes)


_register()
