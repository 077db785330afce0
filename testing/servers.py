"""One shape for the API server a test talks to, the emulator or a real control plane, so a
test written once runs on both (the ``api_server`` fixture is parametrised over them).

On the emulator each test has a server of its own; a real control plane is started once per
test process and shared, so each test gets a namespace of its own there, deleted afterwards.
Tests put their namespaced objects in ``api_server.namespace``.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from kubetrio.api.core import Namespace
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client

if TYPE_CHECKING:
    from kubetrio.emulator import Emulator
    from kubetrio.testing.controlplane import ControlPlane

__all__ = ["ApiServer", "admin_client", "on_control_plane"]

ServerKind = Literal["emulator", "real"]


@dataclass(frozen=True, slots=True)
class ApiServer:
    """An API server under test: ``kind`` says which; ``kubeconfig_path`` is the admin's
    kubeconfig (for kubectl or a manager in another process); ``namespace`` is this test's;
    ``emulator`` is set on the emulator (for what only a double offers: faults, counters)."""

    kind: ServerKind
    kubeconfig_path: Path
    namespace: str
    emulator: Emulator | None = None
    control_plane: ControlPlane | None = None

    def client(self, **options: Any) -> Client:
        """A new admin client (``options`` as ``Client`` takes them)."""
        if self.emulator is not None:
            return Client.from_url(self.emulator.url, token=self.emulator.token, **options)
        return Client.from_kubeconfig(str(self.kubeconfig_path), **options)


def admin_client(server: Emulator | ApiServer, **options: Any) -> Client:
    """An admin client of either shape of server (the kit's helpers take both)."""
    if isinstance(server, ApiServer):
        return server.client(**options)
    return Client.from_url(server.url, token=server.token, **options)


@asynccontextmanager
async def on_control_plane(control_plane: ControlPlane) -> AsyncIterator[ApiServer]:
    """The shared control plane with a namespace made for the block and deleted after it."""
    name = f"test-{secrets.token_hex(4)}"
    server = ApiServer("real", control_plane.kubeconfig_path, name, control_plane=control_plane)
    client = server.client()
    await client.create(Namespace, {"metadata": {"name": name}})
    # Pods need the namespace's default ServiceAccount (the admission plugin refuses them
    # without it); kube-controller-manager makes it soon, the test may need it at once.
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    try:
        path = f"/api/v1/namespaces/{name}/serviceaccounts"
        await client.request("POST", path, body=msgspec.json.encode(account))
    except ApiError as error:
        if error.status != 409:
            raise
    try:
        yield server
    finally:
        await client.delete(Namespace, name, missing_ok=True)
