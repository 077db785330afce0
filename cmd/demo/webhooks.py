"""The embedded demo with ``--webhooks``: the manager's webhooks installed in the embedded
cluster, so every write of the demo's MachineDeployment, sets and machines goes through them.

``kubetrio run --embedded --webhooks`` serves the webhooks on a free local port with a
self-signed CA; once the manager listens, the configurations ``kubetrio webhooks manifest``
prints are created in the embedded cluster in url form (``clientConfig.url`` at that port,
``caBundle`` the CA), since the embedded cluster has no Service to route through. Then::

    kubectl apply -f bad-machine.yaml   # refused: admission webhook "vmachine-…" denied …
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from kubetrio.cmd.webhooks import documents
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.util.log import get_logger
from kubetrio.runtime.webhook.manifest import as_url

log = get_logger("kubetrio.demo")
PATHS = {
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
}


async def install(manager: Manager, client: Client, controllers: list[str]) -> None:
    """Point the cluster at the manager's webhooks, once it serves them."""
    await manager.serving.wait()
    port, ca = manager.bound_ports.get("webhook"), manager.webhooks.ca_pem
    if port is None or ca is None:
        return  # nothing registered, or served with certificate files the demo cannot trust
    for doc in documents(controllers, "kubetrio-system"):
        local = as_url(doc, f"https://127.0.0.1:{port}", ca)
        path = f"/apis/admissionregistration.k8s.io/v1/{PATHS[doc['kind']]}"
        await client.request("POST", path, body=msgspec.json.encode(local))
        log.info("webhooks installed", configuration=doc["metadata"]["name"], port=port)


def with_webhooks(
    companion: Callable[[Manager], Awaitable[int]], client: Client, controllers: list[str]
) -> Callable[[Manager], Awaitable[int]]:
    """``companion`` (the demo), after the webhooks are installed."""

    async def run(manager: Manager) -> int:
        await install(manager, client, controllers)
        return await companion(manager)

    return run
