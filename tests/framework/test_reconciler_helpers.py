"""The reconciler helpers that talk to the API, over HTTP against the emulator: finalizers
written conditionally on the resourceVersion (and not at all when already right), owner
references the garbage collector follows, create_or_patch's three outcomes without dropping
fields the typed view does not hold, server-side apply, and conditions that a CRD validates
as metav1.Condition. kubectl reads results back independently; those tests run on the real
clock, as a child process's wait would let a mock clock jump."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio.testing

from kubetrio.api.condition import Condition
from kubetrio.api.core import ConfigMap
from kubetrio.api.meta import ObjectMeta
from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime import (
    AlreadyOwnedError,
    create_or_patch,
    ensure_finalizer,
    remove_finalizer,
    server_side_apply,
    set_condition,
    set_controller_reference,
)
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from tests.helpers.gc import cm_of, until
from tests.helpers.kube import Kubectl

OURS = "example.com/cleanup"
THEIRS = "other.example.com/keep"


def new_cm(name: str, *finalizers: str) -> ConfigMap:
    return ConfigMap(
        metadata=ObjectMeta(name=name, namespace="default", finalizers=finalizers),
        data={"k": "v"},
    )


def patches(emu: Emulator) -> int:
    return emu.counters.get("patch", "configmaps")


@pytest.mark.kubectl
async def test_finalizers_are_added_and_removed_beside_others(
    emu: Emulator, kube: Client, kubectl: Kubectl
) -> None:
    created = await kube.create(ConfigMap, new_cm("g", THEIRS))
    held = await ensure_finalizer(kube, created, OURS)
    assert held is not None and held.metadata.finalizers == (THEIRS, OURS)
    assert held.resource_version != created.resource_version
    # Already there: no request at all.
    before = patches(emu)
    assert await ensure_finalizer(kube, held, OURS) is held
    assert await remove_finalizer(kube, created, "absent.example.com/x") is created
    assert patches(emu) == before
    shown = await kubectl.json("get", "configmap", "g", "-n", "default")
    assert shown["metadata"]["finalizers"] == [THEIRS, OURS]

    released = await remove_finalizer(kube, held, OURS)
    assert released is not None and released.metadata.finalizers == (THEIRS,)
    assert (cm_of(emu, "g") or {})["metadata"]["finalizers"] == [THEIRS]


async def test_a_stale_object_conflicts_instead_of_dropping_a_finalizer(
    emu: Emulator, kube: Client, mock_clock: trio.testing.MockClock
) -> None:
    stale = await kube.create(ConfigMap, new_cm("g"))
    # Someone else adds theirs after our read.
    await kube.patch(ConfigMap, "g", {"metadata": {"finalizers": [THEIRS]}}, namespace="default")
    with pytest.raises(ApiError) as caught:
        await ensure_finalizer(kube, stale, OURS)
    assert caught.value.status == 409
    assert (cm_of(emu, "g") or {})["metadata"]["finalizers"] == [THEIRS]
    # The retry, on a fresh read, keeps both.
    fresh = await kube.get(ConfigMap, "g", namespace="default")
    held = await ensure_finalizer(kube, fresh, OURS)
    assert held is not None and held.metadata.finalizers == (THEIRS, OURS)


async def test_removing_the_last_finalizer_lets_deletion_finish(
    emu: Emulator, kube: Client, mock_clock: trio.testing.MockClock
) -> None:
    await kube.create(ConfigMap, new_cm("g", OURS))
    await kube.delete(ConfigMap, "g", namespace="default")
    deleting = await kube.get(ConfigMap, "g", namespace="default")
    assert deleting.deleting
    await remove_finalizer(kube, deleting, OURS)
    assert cm_of(emu, "g") is None
    # A pass on a stale cache: the object is gone, and that is no error.
    assert await remove_finalizer(kube, deleting, OURS) is None
    assert await ensure_finalizer(kube, new_cm("never-created"), OURS) is None


async def test_a_controller_reference_is_followed_by_the_garbage_collector(
    emu: Emulator, kube: Client, mock_clock: trio.testing.MockClock
) -> None:
    owner = await kube.create(ConfigMap, new_cm("owner"))
    child = await kube.create(ConfigMap, set_controller_reference(owner, new_cm("child")))
    (ref,) = child.metadata.owner_references
    assert (ref.uid, ref.controller, ref.block_owner_deletion) == (owner.metadata.uid, True, True)
    other = await kube.create(ConfigMap, new_cm("other"))
    with pytest.raises(AlreadyOwnedError, match="ConfigMap controller owner"):
        set_controller_reference(other, child)
    await kube.delete(ConfigMap, "owner", namespace="default")
    await until(emu, lambda: cm_of(emu, "child") is None)


@pytest.mark.kubectl
async def test_create_or_patch_creates_patches_the_difference_and_skips_no_ops(
    emu: Emulator, kube: Client, kubectl: Kubectl
) -> None:
    def greet(cm: ConfigMap) -> None:
        cm.data = {**cm.data, "greeting": "hello"}

    result, created = await create_or_patch(kube, new_cm("g"), greet)
    assert result == "created" and created.data == {"k": "v", "greeting": "hello"}
    # A field our typed view does not hold, written by someone else.
    await kube.patch(ConfigMap, "g", {"binaryData": {"b": "AAEC"}}, namespace="default")

    before = patches(emu)
    result, same = await create_or_patch(kube, new_cm("g"), greet)
    assert result == "unchanged" and same.data == created.data
    assert patches(emu) == before

    def reword(cm: ConfigMap) -> None:
        cm.data = {"greeting": "hi"}
        cm.metadata.labels = {"app": "greeter"}

    result, patched = await create_or_patch(kube, new_cm("g"), reword)
    assert result == "patched" and patches(emu) == before + 1
    shown = await kubectl.json("get", "configmap", "g", "-n", "default")
    assert shown["data"] == {"greeting": "hi"}
    assert shown["binaryData"] == {"b": "AAEC"}  # kept: the patch held only the difference
    assert shown["metadata"]["labels"] == {"app": "greeter"}
    assert msgspec.to_builtins(patched.data) == shown["data"]

    def rename(cm: ConfigMap) -> None:
        cm.metadata.name = "elsewhere"

    with pytest.raises(ValueError, match=r"must not change metadata\.name"):
        await create_or_patch(kube, new_cm("g"), rename)


async def test_server_side_apply_creates_then_merges_under_a_field_manager(
    emu: Emulator, kube: Client, mock_clock: trio.testing.MockClock
) -> None:
    desired = ConfigMap(
        metadata=ObjectMeta(name="g", namespace="default", labels={"app": "greeter"}),
        data={"greeting": "hello"},
    )
    created = await server_side_apply(kube, desired, field_manager="greeter")
    assert created.metadata.uid and created.data == {"greeting": "hello"}
    await kube.patch(ConfigMap, "g", {"data": {"theirs": "x"}}, namespace="default")
    # ``again`` carries a stale resourceVersion: dropped, since a desired state is unconditional.
    again = msgspec.structs.replace(created, data={"greeting": "hi"})
    applied = await server_side_apply(kube, again, field_manager="greeter")
    assert applied.data == {"greeting": "hi", "theirs": "x"}
    assert applied.metadata.labels == {"app": "greeter"}
    assert emu.counters.get("patch", "configmaps") == 3  # two applies, one merge patch
    # The server keeps who owns what; the typed view decodes without it.
    stored = emu.store.get(emu.store.types.lookup("", "v1", "configmaps"), "default", "g").obj
    owners = {(e["manager"], e["operation"]) for e in stored["metadata"]["managedFields"]}
    assert owners >= {("greeter", "Apply"), ("kubetrio", "Update")}
    # Another controller applying a field "greeter" owns, unforced, meets a conflict.
    rival = msgspec.structs.replace(desired, data={"greeting": "yo"})
    with pytest.raises(ApiError) as caught:
        await server_side_apply(kube, rival, field_manager="rival", force=False)
    assert caught.value.status == 409
    assert caught.value.message == (
        'Apply failed with 1 conflict: conflict with "greeter": .data.greeting'
    )
    taken = await server_side_apply(kube, rival, field_manager="rival")
    assert taken.data["greeting"] == "yo"
    with pytest.raises(ValueError, match="field_manager must name"):
        await server_side_apply(kube, desired, field_manager="")


CONDITIONS_SCHEMA: dict[str, Any] = {  # metav1.Condition as controller-gen writes it
    "type": "array",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
    "items": {
        "type": "object",
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        "properties": {
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "message": {"type": "string", "maxLength": 32768},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "reason": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1024,
                "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
            },
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "type": {"type": "string", "maxLength": 316},
        },
    },
}
GREETINGS = "/apis/example.com/v1/namespaces/default/greetings"


async def test_conditions_round_trip_through_a_crd_that_validates_them(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "status": {"type": "object", "properties": {"conditions": CONDITIONS_SCHEMA}},
        },
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "greetings.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "greetings", "singular": "greeting", "kind": "Greeting"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }
    r = await client.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert r.status == 201, r.body
    greeting = {"apiVersion": "example.com/v1", "kind": "Greeting", "metadata": {"name": "g"}}
    r = await client.request("POST", GREETINGS, greeting)
    assert r.status == 201, r.body
    generation = r.json()["metadata"]["generation"]

    async def write(conditions: tuple[Condition, ...]) -> tuple[Condition, ...]:
        body = {"status": {"conditions": msgspec.to_builtins(conditions)}}
        r = await client.request(
            "PATCH", f"{GREETINGS}/g/status", body, content_type="application/merge-patch+json"
        )
        assert r.status == 200, r.body  # an empty message is still sent: it is required
        stored = r.json()["status"]["conditions"]
        return msgspec.convert(stored, tuple[Condition, ...])

    waiting = set_condition((), "Ready", "False", "Waiting", "", generation)
    assert await write(waiting) == waiting
    mock_clock.jump(60)
    still = set_condition(waiting, "Ready", "False", "StillWaiting", "a minute on", generation)
    stored = await write(still)
    assert stored[0].last_transition_time == waiting[0].last_transition_time
    assert stored[0].reason == "StillWaiting"
    mock_clock.jump(60)
    ready = await write(set_condition(stored, "Ready", "True", "Ready", "", generation))
    assert ready[0].last_transition_time > waiting[0].last_transition_time
