"""The simulated storage service and the storage controllers in a manager against it: storage nodes
registered and made ready, the manager's settings, and the Events the controllers record; the
storage service tests, the node-delete and GC tests and the two-cluster tests share them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from kubetrio.cmd.config import ManagerConfig
from kubetrio.controllers import BUILTIN_CONTROLLERS
from kubetrio.controllers.storage.options import StorageOptions
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.manager.plugins import ControllerRegistry
from kubetrio.runtime.util.duration import Duration
from kubetrio.sim.storage import (
    NODE_ID_ANNOTATION,
    SimulatedStorage,
)

DRIVER = "csi.storageos.com"


def node(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Node", "metadata": md}


def set_ready(emu: Emulator, name: str, status: str = "True") -> None:
    emu.set_status("v1", "Node", name, {"conditions": [{"type": "Ready", "status": status}]})


def add_ready_node(emu: Emulator, name: str, annotations: dict[str, str] | None = None) -> None:
    emu.create(node(name, annotations))
    set_ready(emu, name)


async def registered(storage: SimulatedStorage, *names: str) -> None:
    """Until every name has a storage node and its Node carries the id."""
    await storage.wait_for(lambda: all(storage.node(n) is not None for n in names))


IMMEDIATE = {"offline_after": (0.0, 0.0), "lock_seconds": 0.0}


def manager_config(url: str, *, gc_delay: float = 30, gc_interval: float = 0) -> ManagerConfig:
    return ManagerConfig(
        storage=StorageOptions(
            backend_url=url, gc_delay=Duration(gc_delay), gc_interval=Duration(gc_interval)
        )
    )


@asynccontextmanager
async def running_manager(
    emu: Emulator, config: ManagerConfig, controllers: Sequence[str] = ("nodedelete",)
) -> AsyncIterator[Manager]:
    manager = Manager(
        Client.from_kubeconfig(str(emu.kubeconfig_path)),
        metrics_bind_address="0",
        health_probe_bind_address="0",
        workers=config.workers,
    )
    registry = ControllerRegistry(BUILTIN_CONTROLLERS)
    for name in controllers:
        registry.setup(name)(manager, config)
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        yield manager
        manager.stop()


def deletes(manager: Manager, result: str) -> float:
    value = manager.registry.get_sample_value(
        "kubetrio_storage_node_deletes_total", {"result": result}
    )
    return value or 0.0


def events_for(emu: Emulator, name: str) -> list[tuple[str, str, str]]:
    """Events about the Node ``name``, oldest first, as stored."""
    found = [
        entry.obj
        for entry in emu.store.iter(emu.resource("events"), "default")
        if entry.obj["involvedObject"].get("kind") == "Node"
        and entry.obj["involvedObject"]["name"] == name
    ]
    found.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [(e["type"], e["reason"], e["message"]) for e in found]


async def event_recorded(emu: Emulator, name: str, reason: str) -> None:
    """Until an Event ``reason`` about the Node ``name`` is stored: the reconciler records it
    last, so everything it counted before is settled by then."""
    changed = trio.Event()

    def on_change(rt: Any, _: Any) -> None:
        if rt.plural == "events":
            changed.set()

    unsubscribe = emu.store.subscribe(on_change)
    try:
        while not any(r == reason for _, r, _ in events_for(emu, name)):
            await changed.wait()
            changed = trio.Event()
    finally:
        unsubscribe()


def emu_annotated(emu: Emulator, name: str) -> bool:
    obj = emu.get("v1", "Node", name)
    return obj is not None and NODE_ID_ANNOTATION in (obj["metadata"].get("annotations") or {})


def sample(manager: Manager, name: str, **labels: str) -> float:
    return manager.registry.get_sample_value(name, labels) or 0.0
