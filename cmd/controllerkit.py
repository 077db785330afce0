"""The deployment kit for a chosen set of controllers, yours among them
(``kubetrio manifests --controllers greeter``).

Everything a controller needs from the cluster is derived from its code, the way ``kubetrio
rbac``, ``kubetrio crd generate`` and ``kubetrio webhooks manifest`` derive it, so the kit cannot
drift from what the manager does:

- the CRDs of the kinds its RBAC declaration names that were declared with ``@resource``
  (custom kinds; built-in ones every server serves);
- the manager's ClusterRole and leader-election Role from the declarations of exactly these
  controllers;
- with webhooks, the configurations its package's ``webhooks`` module registers;
- the Deployment runs ``kubetrio run --controllers LIST``.

A controller from an entry point is found as ``kubetrio run`` finds it, so the package must be
installed where ``kubetrio manifests`` runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubetrio.api.registry import all_kinds
from kubetrio.cmd import rbac, webhooks
from kubetrio.cmd.kustomize import Document, ordered
from kubetrio.controllers import BUILTIN_CONTROLLERS
from kubetrio.runtime.gen.crd import crd_for, import_class
from kubetrio.runtime.gen.rbac import (
    DEFAULT_NAMESPACE,
    LEADER_ELECTION_ROLE,
    MANAGER_ROLE,
    Permissions,
    roles,
)
from kubetrio.runtime.manager.plugins import ControllerRegistry, PluginError

__all__ = ["custom_resource_definitions", "for_controllers"]

MANAGER = "kubetrio-controller-manager"


def for_controllers(
    documents: list[Document], controllers: list[str], *, with_webhooks: bool
) -> list[Document]:
    """``documents`` (the rendered kit) made to run ``controllers`` and nothing else.

    Raises ``PluginError`` (one line) for an unknown controller, one that cannot be imported or
    declares no RBAC, and for ``with_webhooks`` when none of them registers a webhook."""
    if not controllers:
        raise PluginError("--controllers: name at least one controller")
    permissions = rbac.permissions(ControllerRegistry(BUILTIN_CONTROLLERS), controllers)
    pair = roles(permissions, DEFAULT_NAMESPACE)
    replaced: dict[tuple[str, str], Document] = {
        ("ClusterRole", MANAGER_ROLE): pair.cluster_role(),
        ("Role", LEADER_ELECTION_ROLE): pair.role(),
    }
    hooks: list[Document] = []
    if with_webhooks:
        hooks = webhooks.documents(controllers, DEFAULT_NAMESPACE)
        if not hooks:
            raise PluginError(
                f"--webhooks: {', '.join(controllers)} register no admission webhooks"
            )
    kept: list[Document] = []
    for doc in documents:
        kind, name = doc["kind"], doc["metadata"]["name"]
        if kind == "CustomResourceDefinition" or kind in webhooks.WEBHOOK_KINDS:
            continue
        if (kind, name) in replaced:
            doc = replaced[kind, name]
        elif kind == "Deployment" and name == MANAGER:
            doc = _running(doc, controllers)
        kept.append(doc)
    return ordered([*custom_resource_definitions(permissions), *kept, *hooks])


def custom_resource_definitions(permissions: Iterable[Permissions]) -> list[dict[str, Any]]:
    """The CRDs of the ``@resource`` kinds the rules of ``permissions`` name, generated from
    their classes (their modules are imported already: the declarations name their ``KIND``)."""
    named = {
        (group, resource.partition("/")[0])
        for each in permissions
        for rule in (*each.cluster, *each.own_namespace)
        for group, resource, _verb in rule.atoms()
    }
    classes = [
        import_class(kind.crd.source)
        for kind in all_kinds()
        if kind.crd is not None and kind.crd.source and (kind.group, kind.plural) in named
    ]
    return crd_for(*classes)


def _running(deployment: Document, controllers: list[str]) -> Document:
    """The manager Deployment with ``--controllers`` set to ``controllers``."""
    pod = deployment["spec"]["template"]["spec"]
    containers = []
    for container in pod["containers"]:
        args = [a for a in container.get("args", []) if not a.startswith("--controllers")]
        containers.append({**container, "args": [*args, f"--controllers={','.join(controllers)}"]})
    template = {**deployment["spec"]["template"], "spec": {**pod, "containers": containers}}
    return {**deployment, "spec": {**deployment["spec"], "template": template}}
