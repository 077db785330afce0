"""Webhook configurations generated from the registrations, as controller-gen's ``webhook``
output, so the code and the manifests cannot drift.

Registration code is written against ``Registrar`` (``manager.webhook(kind)``); calling it on a
``Recorder`` instead of a manager records which kinds got a defaulter or a validator, and
``configurations`` turns that into one ``MutatingWebhookConfiguration`` and one
``ValidatingWebhookConfiguration``, each webhook calling the Service in front of the manager::

    recorder = Recorder()
    register_machine_webhooks(recorder)
    docs = configurations(recorder, service=("kubetrio-system", "kubetrio-webhook-service"))

``as_url`` rewrites such a document for a manager running outside the cluster (a local run, a
test): ``clientConfig.url`` at the manager's address and its CA in ``caBundle``.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from kubetrio.api.meta import KubeObject
from kubetrio.runtime.webhook.builder import WebhookBuilder, mutating_path, validating_path
from kubetrio.runtime.webhook.server import WebhookServer

__all__ = ["Recorder", "Registrar", "as_url", "configurations"]

K = TypeVar("K", bound=KubeObject)
V1 = "admissionregistration.k8s.io/v1"
INJECT_CA_FROM = "cert-manager.io/inject-ca-from"


class Registrar(Protocol):
    """What registration code needs: a ``Manager``, or a ``Recorder``."""

    def webhook(self, kind: type[K]) -> WebhookBuilder[K]: ...


@dataclass
class Recorder:
    """Registers on a server that never runs, keeping the kinds in registration order."""

    server: WebhookServer = field(default_factory=WebhookServer)
    kinds: list[type[KubeObject]] = field(default_factory=list)

    def webhook(self, kind: type[K]) -> WebhookBuilder[K]:
        if kind not in self.kinds:
            self.kinds.append(kind)
        return WebhookBuilder(self.server, kind)


def _name(kind: type[KubeObject], verb: str) -> str:
    """controller-gen's webhook names: ``mmachine-v1alpha1.kb.io`` style, on the group."""
    info = kind.KIND
    return f"{verb}{info.kind.lower()}-{info.version}.{info.group or 'core'}"


def _webhook(kind: type[KubeObject], path: str, verb: str, service: tuple[str, str]) -> Any:
    info = kind.KIND
    namespace, name = service
    return {
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": name, "namespace": namespace, "path": path}},
        "failurePolicy": "Fail",
        "name": _name(kind, verb),
        "rules": [
            {
                "apiGroups": [info.group],
                "apiVersions": [info.version],
                "operations": ["CREATE", "UPDATE"],
                "resources": [info.plural],
                # The API server's default, spelled out so re-applying changes nothing
                # (rules is an atomic list: a defaulted field would be patched every time).
                "scope": "Namespaced" if info.namespaced else "Cluster",
            }
        ],
        "sideEffects": "None",
    }


def configurations(
    recorder: Recorder,
    service: tuple[str, str],
    prefix: str = "kubetrio",
    certificate: str | None = None,
) -> list[dict[str, Any]]:
    """The two configurations (either left out when it would be empty). ``certificate``
    (``namespace/name``): cert-manager's Certificate whose CA its injector puts in the
    ``caBundle`` (the ``cert-manager.io/inject-ca-from`` annotation)."""
    paths = set(recorder.server.paths)
    docs = []
    for kind_name, path_of, verb in (
        ("MutatingWebhookConfiguration", mutating_path, "m"),
        ("ValidatingWebhookConfiguration", validating_path, "v"),
    ):
        hooks = [
            _webhook(kind, path_of(kind), verb, service)
            for kind in recorder.kinds
            if path_of(kind) in paths
        ]
        if hooks:
            prefix_kind = kind_name.removesuffix("WebhookConfiguration").lower()
            metadata: dict[str, Any] = {"name": f"{prefix}-{prefix_kind}-webhook-configuration"}
            if certificate is not None:
                metadata["annotations"] = {INJECT_CA_FROM: certificate}
            docs.append(
                {"apiVersion": V1, "kind": kind_name, "metadata": metadata, "webhooks": hooks}
            )
    return docs


def as_url(doc: dict[str, Any], base_url: str, ca_pem: bytes) -> dict[str, Any]:
    """A copy calling ``base_url`` + each webhook's service path, trusting ``ca_pem`` (and
    no longer asking cert-manager for a CA)."""
    result = copy.deepcopy(doc)
    result["metadata"].pop("annotations", None)
    for hook in result["webhooks"]:
        path = hook["clientConfig"]["service"].get("path", "/")
        hook["clientConfig"] = {
            "url": base_url.rstrip("/") + path,
            "caBundle": base64.b64encode(ca_pem).decode(),
        }
    return result
