"""What keeps a cached pod small: strings a pod template repeats are shared between pods, and
each listed object is interned as soon as it is decoded, before the next one is — interning a
whole list afterwards left the dropped copies as holes between the kept objects (+0.8 KiB per
pod by RSS at 20 000 pods; ``tests/bench/informer.py`` measures it)."""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec
import pytest
import trio
import trio.testing

from kubetrio.api.core import Pod
from kubetrio.api.meta import KubeObject, Model
from kubetrio.api.registry import KindInfo, lookup
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.cache.undecodable import Undecodable
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client

PODS = 1100  # three pages of 500


def pod(name: str, template: str = "web-5d8f9c7b6") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "generateName": f"{template}-",
            "labels": {"app": "web", "pod-template-hash": template.rsplit("-", 1)[-1]},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": template,
                    "uid": "3f2a9c1e-8b7d-4e6f-a5c4-1d2e3f4a5b6c",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": "node-a",
            "containers": [{"name": "app", "image": "registry.example.com/web:1.0"}],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{name}"}},
                {"name": "scratch", "emptyDir": {}},
            ],
        },
    }


async def synced(client: Client, kind: type[Any], **options: Any) -> Informer[Any]:
    informer = Informer(client, kind, **options)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(informer.run)
            await informer.wait_for_sync()
            nursery.cancel_scope.cancel()
    return informer


async def test_pods_of_one_template_share_its_strings(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    for name in ("web-5d8f9c7b6-abcde", "web-5d8f9c7b6-fghij"):
        emu.create(pod(name))
    informer = await synced(Client.from_url(emu.url, token=emu.token), Pod)
    a, b = sorted(informer.store.values(), key=lambda p: p.metadata.name)
    assert a.metadata.generate_name == "web-5d8f9c7b6-"
    assert a.metadata.generate_name is b.metadata.generate_name
    assert [v.name for v in a.spec.volumes] == ["data", "scratch"]
    for mine, theirs in zip(a.spec.volumes, b.spec.volumes, strict=True):
        assert mine.name is theirs.name
    assert a.status.phase == "Pending" and a.status.phase is b.status.phase
    assert a.metadata.owner_references[0].uid is b.metadata.owner_references[0].uid
    assert a.spec.node_name is b.spec.node_name
    # Unique per pod, so never interned: the table would only grow.
    assert a.spec.volumes[0].persistent_volume_claim is not None
    assert a.spec.volumes[0].persistent_volume_claim.claim_name == "data-web-5d8f9c7b6-abcde"


decoded = 0  # CountingPod instances made so far


class CountingPod(Pod, kw_only=True):
    """The Pod view, counting its decodes, to see when the informer ingests each one."""

    KIND: ClassVar[KindInfo] = lookup("v1", "Pod")

    def __post_init__(self) -> None:
        global decoded
        decoded += 1
        super().__post_init__()


async def test_each_listed_object_is_ingested_before_the_next_is_decoded(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    global decoded
    for i in range(PODS):
        emu.create(pod(f"web-5d8f9c7b6-{i:05d}"))
    decoded = 0
    seen: list[int] = []

    def transform(obj: CountingPod) -> CountingPod:
        seen.append(decoded)
        return obj

    informer = await synced(
        Client.from_url(emu.url, token=emu.token),
        CountingPod,
        transform=transform,
        streaming_lists=False,
    )
    assert len(informer.store) == PODS
    # The i-th object is ingested when exactly i objects were decoded: over all three pages,
    # never after its whole page (or the whole list) was.
    assert seen == list(range(1, PODS + 1))


async def test_list_applies_each_to_every_item_in_order(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    for i in range(3):
        emu.create(pod(f"web-5d8f9c7b6-{i:05d}"))
    client = Client.from_url(emu.url, token=emu.token)
    names: list[str] = []

    def note(obj: Pod) -> Pod:
        names.append(obj.metadata.name)
        return obj

    result = await client.list(Pod, namespace="default", limit=2, each=note)
    assert names == [p.metadata.name for p in result.items]
    assert names == [f"web-5d8f9c7b6-{i:05d}" for i in range(3)]


class DeadlineAsText(Model, kw_only=True):
    active_deadline_seconds: str = ""


class OddPod(KubeObject, kw_only=True):
    """A view that a pod with a numeric deadline does not fit."""

    KIND: ClassVar[KindInfo] = lookup("v1", "Pod")
    spec: DeadlineAsText = msgspec.field(default_factory=DeadlineAsText)


async def test_list_with_each_still_refuses_an_item_that_does_not_fit(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """Without ``on_undecodable`` a poison item fails the call, with ``each`` or without; with
    it, the item goes there and ``each`` sees only the others."""
    emu.create(pod("web-5d8f9c7b6-00000"))
    numeric = pod("web-5d8f9c7b6-00001")
    numeric["spec"]["activeDeadlineSeconds"] = 7
    emu.create(numeric)
    client = Client.from_url(emu.url, token=emu.token)
    with pytest.raises(ApiError, match="cannot decode Pod list"):
        await client.list(OddPod, namespace="default", each=lambda obj: obj)
    poisons: list[Undecodable] = []
    names: list[str] = []

    def note(obj: OddPod) -> OddPod:
        names.append(obj.metadata.name)
        return obj

    result = await client.list(
        OddPod, namespace="default", each=note, on_undecodable=poisons.append
    )
    assert names == ["web-5d8f9c7b6-00000"] == [p.metadata.name for p in result.items]
    assert [p.key.name for p in poisons] == ["web-5d8f9c7b6-00001"]
