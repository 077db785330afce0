"""Shared by the garbage-collector tests: objects with owner references and waiting on the
store (never on time)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from kubetrio.emulator import Emulator
from kubetrio.emulator.eventlog import WatchEvent
from kubetrio.emulator.kinds import ResourceType


def cm(
    name: str,
    *owners: dict[str, Any],
    namespace: str = "default",
    finalizers: tuple[str, ...] = (),
) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners:
        md["ownerReferences"] = list(owners)
    if finalizers:
        md["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": {"k": name}}


def ref(owner: dict[str, Any], block: bool | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        **extra,
    }
    if block is not None:
        out["blockOwnerDeletion"] = block
    return out


def cm_of(emu: Emulator, name: str, namespace: str = "default") -> dict[str, Any] | None:
    return emu.get("v1", "ConfigMap", name, namespace)


def ref_uids(obj: dict[str, Any] | None) -> list[str]:
    assert obj is not None
    return [r["uid"] for r in obj["metadata"].get("ownerReferences") or []]


async def until(emu: Emulator, condition: Callable[[], bool], seconds: float = 60.0) -> None:
    """Wait for ``condition``, re-checked after every store write."""
    box = [trio.Event()]

    def changed(_rt: ResourceType, _ev: WatchEvent) -> None:
        box[0].set()

    unsubscribe = emu.store.subscribe(changed)
    try:
        with trio.fail_after(seconds):
            while not condition():
                await box[0].wait()
                box[0] = trio.Event()
    finally:
        unsubscribe()


async def settle(emu: Emulator, seconds: float = 60.0) -> None:
    """Until the collector has handled everything the writes so far gave it."""
    with trio.fail_after(seconds):
        await emu.gc.settled()
