"""The deployment kit with sharding on (``kubetrio manifests --sharding N``): the manager
Deployment runs N replicas of ``kubetrio run --sharding`` (each pod's name is its shard id), the
manager's roles grant what sharding needs (``cmd.sharding.sharding_permissions``), and with
``--sharding-webhook`` the MutatingWebhookConfiguration that assigns new objects at creation is
added, served by the webhook Service of ``config/with-webhooks`` and its cert-manager
certificate, with ``failurePolicy: Ignore`` (an unreachable webhook leaves the object to the
sharder)."""

from __future__ import annotations

from kubetrio.cmd import rbac
from kubetrio.cmd.config import ManagerConfig
from kubetrio.cmd.kustomize import Document, ordered
from kubetrio.cmd.sharding import sharded_kinds
from kubetrio.controllers import BUILTIN_CONTROLLERS
from kubetrio.runtime.gen.rbac import DEFAULT_NAMESPACE, LEADER_ELECTION_ROLE, MANAGER_ROLE, roles
from kubetrio.runtime.manager.plugins import ControllerRegistry, PluginError
from kubetrio.runtime.sharding.webhook import configuration_for

__all__ = ["with_sharding"]

MANAGER = "kubetrio-controller-manager"
WEBHOOK_SERVICE = "kubetrio-webhook-service"
CERTIFICATE = "kubetrio-serving-cert"


def with_sharding(
    documents: list[Document],
    controllers: list[str],
    replicas: int,
    *,
    webhook: bool,
) -> list[Document]:
    """``documents`` (the rendered kit, running ``controllers``) sharded over ``replicas``."""
    registry = ControllerRegistry(BUILTIN_CONTROLLERS)
    config = ManagerConfig(controllers=tuple(controllers))
    kinds = sharded_kinds(registry, config)
    if not kinds:
        raise PluginError(f"--sharding: none of {', '.join(controllers)} shards")
    pair = roles(rbac.permissions(registry, controllers, sharding=True), DEFAULT_NAMESPACE)
    replaced: dict[tuple[str, str], Document] = {
        ("ClusterRole", MANAGER_ROLE): pair.cluster_role(),
        ("Role", LEADER_ELECTION_ROLE): pair.role(),
    }
    kept: list[Document] = []
    for doc in documents:
        kind, name = doc["kind"], doc["metadata"]["name"]
        if (kind, name) in replaced:
            doc = replaced[kind, name]
        elif kind == "Deployment" and name == MANAGER:
            doc = _sharded(doc, replicas, webhook=webhook)
        kept.append(doc)
    if webhook:
        hook = configuration_for(config.sharding.ring, kinds, (DEFAULT_NAMESPACE, WEBHOOK_SERVICE))
        hook["metadata"]["annotations"] = {
            "cert-manager.io/inject-ca-from": f"{DEFAULT_NAMESPACE}/{CERTIFICATE}"
        }
        kept.append(hook)
    return ordered(kept)


def _sharded(deployment: Document, replicas: int, *, webhook: bool) -> Document:
    pod = deployment["spec"]["template"]["spec"]
    flags = ["--sharding", *(["--sharding-webhook"] if webhook else [])]
    containers = []
    for container in pod["containers"]:
        args = [a for a in container.get("args", []) if not a.startswith("--sharding")]
        containers.append({**container, "args": [*args, *flags]})
    template = {**deployment["spec"]["template"], "spec": {**pod, "containers": containers}}
    spec = {**deployment["spec"], "replicas": replicas, "template": template}
    return {**deployment, "spec": spec}
