"""``manager.webhook(kind)``: registers a kind's defaulter, validator and converter.

    manager.webhook(Machine).defaulter(default_machine).validator(MachineValidator())
    manager.webhook(GreetingV1).converter(convert_greeting)

Each call registers at once with the manager's webhook server, at controller-runtime's paths
(``mutating_path``, ``validating_path``, ``/convert``), and returns the builder for chaining.
"""

from __future__ import annotations

from typing import Generic, Self, TypeVar

from kubetrio.api.meta import KubeObject
from kubetrio.runtime.webhook.admission import (
    Defaulter,
    MutatingHandler,
    ValidatingHandler,
    Validator,
)
from kubetrio.runtime.webhook.conversion import Converter
from kubetrio.runtime.webhook.server import WebhookServer

__all__ = ["WebhookBuilder", "mutating_path", "validating_path"]

T = TypeVar("T", bound=KubeObject)


def _suffix(kind: type[KubeObject]) -> str:
    info = kind.KIND
    group, _, version = info.api_version.rpartition("/")
    return f"{group.replace('.', '-')}-{version}-{info.kind.lower()}"


def mutating_path(kind: type[KubeObject]) -> str:
    """``/mutate-machine-sapcloud-io-v1alpha1-machine`` (``/mutate--v1-pod`` for core)."""
    return f"/mutate-{_suffix(kind)}"


def validating_path(kind: type[KubeObject]) -> str:
    return f"/validate-{_suffix(kind)}"


class WebhookBuilder(Generic[T]):
    """What ``manager.webhook(kind)`` returns: add the kind's defaulter, validator and
    converter; each is served on the path controller-gen's manifests name for the kind."""

    def __init__(self, server: WebhookServer, kind: type[T]) -> None:
        self._server = server
        self._kind = kind

    def defaulter(self, fn: Defaulter[T]) -> Self:
        """``async def fn(obj, request) -> obj``: the object with its defaults set."""
        self._server.register(mutating_path(self._kind), MutatingHandler(self._kind, fn).handle)
        return self

    def validator(self, validator: Validator[T]) -> Self:
        """An object with ``validate_create``, ``validate_update`` and ``validate_delete``."""
        handler = ValidatingHandler(self._kind, validator).handle
        self._server.register(validating_path(self._kind), handler)
        return self

    def converter(self, fn: Converter) -> Self:
        """``fn(obj: dict, to_api_version: str) -> dict`` for every version pair of the kind."""
        group = self._kind.KIND.api_version.rpartition("/")[0]
        self._server.register_converter(group, self._kind.KIND.kind, fn)
        return self
