"""``POST pods/{name}/binding``: the pod assigned to a node, as kube's binding storage assigns
it: ``spec.nodeName`` and a True ``PodScheduled`` condition in one write, refused (409) when
the pod is already on a node. The simulated scheduler binds through here too, so its pods
read back as a cluster's do."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.store import Entry, Store


def bind(
    store: Store, pods: ResourceType, ns: str, name: str, node: str, dry_run: bool = False
) -> Entry:
    pod = store.get(pods, ns, name)
    assigned = (pod.obj.get("spec") or {}).get("nodeName")
    if assigned:
        raise errors.conflict(
            "", "pods/binding", name, f'pod {name} is already assigned to node "{assigned}"'
        )
    new = pod.clone()
    new.setdefault("spec", {})["nodeName"] = node
    _scheduled(new.setdefault("status", {}), store.clock.now_rfc3339())
    return store.update(pods, ns, name, new, subresource="binding", dry_run=dry_run)


def _scheduled(status: dict[str, Any], now: str) -> None:
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
    )
    status["conditions"] = conditions
