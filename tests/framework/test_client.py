"""The typed async client against the emulator over HTTP."""

from __future__ import annotations

import msgspec
import pytest
import trio
import trio.testing

from kubetrio.api.core import Node, Pod, Secret
from kubetrio.emulator import Emulator, FaultRule
from kubetrio.runtime.client.errors import (
    ApiError,
    is_already_exists,
    is_conflict,
    is_gone,
    is_not_found,
    is_too_many_requests,
    is_unauthorized,
    is_unreachable,
)
from kubetrio.runtime.client.typed import Client, Preconditions, WatchEvent
from kubetrio.sim import serve_world


def pod(name: str, node: str = "", **labels: str) -> dict[str, object]:
    spec: dict[str, object] = {"containers": [{"name": "app", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default", "labels": labels}, "spec": spec}


async def test_typed_crud_round_trip(
    kube: Client, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    created = await kube.create(Pod, pod("web-1", app="web"))
    assert created.metadata.uid and created.metadata.resource_version
    fetched = await kube.get(Pod, "web-1", namespace="default")
    assert fetched.metadata.labels == {"app": "web"}

    patched = await kube.patch(
        Pod, "web-1", {"metadata": {"labels": {"tier": "front"}}}, namespace="default"
    )
    assert patched.metadata.labels == {"app": "web", "tier": "front"}
    # The write was a patch: the container list we never modelled is still on the server.
    raw = emu.get("v1", "Pod", "web-1", "default")
    assert raw is not None and raw["spec"]["containers"][0]["image"] == "busybox"

    status = await kube.patch(
        Pod, "web-1", {"status": {"phase": "Running"}}, namespace="default", subresource="status"
    )
    assert status.status.phase == "Running"

    await kube.delete(Pod, "web-1", namespace="default", grace_period_seconds=0)
    assert await kube.get_or_none(Pod, "web-1", namespace="default") is None
    await kube.delete(Pod, "web-1", namespace="default", missing_ok=True)
    with pytest.raises(ApiError) as caught:
        await kube.delete(Pod, "web-1", namespace="default")
    assert is_not_found(caught.value)
    assert 'pods "web-1" not found' in str(caught.value)


async def test_list_selectors_and_pages(kube: Client, mock_clock: trio.testing.MockClock) -> None:
    for i in range(23):
        await kube.create(Pod, pod(f"p-{i:02d}", node="n1" if i % 2 else "n2", app="a"))
    await kube.create(Pod, pod("other", app="b"))
    everything = await kube.list(Pod, namespace="default", limit=5)
    assert len(everything.items) == 24
    assert int(everything.metadata.resource_version) > 0
    labelled = await kube.list(Pod, label_selector="app=a", limit=7)
    assert len(labelled.items) == 23
    on_n1 = await kube.list(Pod, field_selector="spec.nodeName=n1")
    assert sorted(p.name for p in on_n1.items) == [f"p-{i:02d}" for i in range(1, 23, 2)]


async def test_optimistic_concurrency(kube: Client, mock_clock: trio.testing.MockClock) -> None:
    created = await kube.create(
        Secret, {"metadata": {"name": "s", "namespace": "default"}, "stringData": {"k": "v"}}
    )
    stale = created.metadata.resource_version
    await kube.patch(Secret, "s", {"metadata": {"labels": {"x": "1"}}}, namespace="default")
    guarded = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": stale},
        {"op": "add", "path": "/metadata/labels/y", "value": "2"},
    ]
    with pytest.raises(ApiError) as caught:
        await kube.patch(Secret, "s", guarded, namespace="default", patch_type="json")
    assert caught.value.status in (409, 422)
    with pytest.raises(ApiError) as conflict:
        await kube.delete(
            Secret, "s", namespace="default", preconditions=Preconditions(uid="wrong")
        )
    assert is_conflict(conflict.value)
    with pytest.raises(ApiError) as exists:
        await kube.create(Secret, {"metadata": {"name": "s", "namespace": "default"}})
    assert is_already_exists(exists.value) and not is_conflict(exists.value)


async def test_throttled_requests_are_retried_after_retry_after(
    kube: Client, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    await kube.create(Pod, pod("slow"))
    emu.faults.add(FaultRule(verb="get", resource="pods", status=429, retry_after=3, count=2))
    emu.counters.reset()
    start = trio.current_time()
    fetched = await kube.get(Pod, "slow", namespace="default")
    assert fetched.name == "slow"
    assert trio.current_time() - start >= 6
    assert emu.counters.get("get", "pods") == 3

    emu.faults.add(FaultRule(verb="get", resource="pods", status=429, retry_after=1))
    with pytest.raises(ApiError) as caught:
        await kube.get(Pod, "slow", namespace="default")
    assert is_too_many_requests(caught.value) and caught.value.retry_after == 1
    assert emu.counters.get("get", "pods") == 3 + 1 + kube.max_throttle_retries


async def test_client_side_rate_limit(emu: Emulator, mock_clock: trio.testing.MockClock) -> None:
    kube = Client.from_kubeconfig(str(emu.kubeconfig_path), qps=5, burst=2)
    start = trio.current_time()
    for _ in range(7):
        await kube.list(Node)
    # burst of 2, then 5 per second: the 7th request leaves 1 s after the first.
    assert trio.current_time() - start >= 1.0


async def test_cancelled_call_frees_its_slot_and_connection(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    kube = Client.from_kubeconfig(str(emu.kubeconfig_path), max_concurrency=1)
    await kube.create(Pod, pod("p"))
    emu.faults.add(FaultRule(verb="get", resource="pods", latency=600, count=1))
    with trio.move_on_after(1) as scope:
        await kube.get(Pod, "p", namespace="default")
    assert scope.cancelled_caught
    # The only request slot is free again at once: the stuck request's socket was closed.
    with trio.fail_after(3):
        assert (await kube.get(Pod, "p", namespace="default")).name == "p"


async def test_unreachable_and_unauthorized_errors_are_clear(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with serve_world(token="s3cret") as emu:
        wrong = Client.from_url(emu.url, token="not-the-token")
        with pytest.raises(ApiError) as caught:
            await wrong.list(Pod)
        assert is_unauthorized(caught.value)
        assert "s3cret" not in str(caught.value)
        authorised = Client.from_url(emu.url, token="s3cret")
        assert (await authorised.list(Pod)).items == []
        port = emu.port
    gone = Client.from_url(f"http://127.0.0.1:{port}", qps=0)
    with pytest.raises(ApiError) as unreachable:
        await gone.list(Pod)
    assert is_unreachable(unreachable.value)
    assert "no response from the API server" in str(unreachable.value)


async def test_undecodable_object_is_a_clear_error(
    kube: Client, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "odd"},
            "spec": {
                "containers": [{"name": "c", "image": "i"}],
                "terminationGracePeriodSeconds": "high",
            },
        }
    )
    with pytest.raises(ApiError, match=r"cannot decode Pod .*terminationGracePeriodSeconds"):
        await kube.get(Pod, "odd", namespace="default")


async def collect(
    kube: Client, resource_version: str, until: int, **options: object
) -> list[WatchEvent[Pod]]:
    send, receive = trio.open_memory_channel[list[WatchEvent[Pod]]](10)
    events: list[WatchEvent[Pod]] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: kube.watch(Pod, send, resource_version=resource_version, **options)  # type: ignore[arg-type]
        )
        async for batch in receive:
            events.extend(batch)
            if len(events) >= until:
                nursery.cancel_scope.cancel()
    return events


async def test_watch_decodes_typed_events_from_a_resource_version(
    kube: Client, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    first = await kube.create(Pod, pod("w1"))
    await kube.patch(Pod, "w1", {"metadata": {"labels": {"v": "2"}}}, namespace="default")
    await kube.delete(Pod, "w1", namespace="default", grace_period_seconds=0)
    events = await collect(kube, first.metadata.resource_version, until=2)
    assert [e.type for e in events] == ["MODIFIED", "DELETED"]
    assert events[0].obj is not None and events[0].obj.metadata.labels == {"v": "2"}
    assert int(events[1].resource_version) > int(events[0].resource_version)


async def test_watch_reports_gone_history_as_an_error_event(
    kube: Client, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    first = await kube.create(Pod, pod("g1"))
    await kube.create(Pod, pod("g2"))
    emu.faults.expire_watch_history()
    events = await collect(kube, first.metadata.resource_version, until=1)
    assert events[0].type == "ERROR" and events[0].error is not None
    assert is_gone(events[0].error)


async def test_watch_start_failure_arrives_as_error_event(
    kube: Client, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.faults.add(FaultRule(verb="watch", resource="pods", status=500, count=1))
    events = await collect(kube, "", until=1)
    assert events[0].type == "ERROR" and events[0].error is not None
    assert events[0].error.status == 500


async def test_bookmarks_and_timeout_end_the_stream(
    kube: Client, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    created = await kube.create(Pod, pod("b1"))
    send, receive = trio.open_memory_channel[list[WatchEvent[Pod]]](10)
    events: list[WatchEvent[Pod]] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: kube.watch(
                Pod, send, resource_version=created.resource_version, timeout_seconds=200
            )
        )
        async for batch in receive:  # ends when the server closes the stream at 200 s
            events.extend(batch)
    assert events and all(e.type == "BOOKMARK" for e in events)
    assert events[-1].resource_version


def test_watch_line_decoding_needs_no_dicts() -> None:
    from kubetrio.runtime.client.typed import decode_watch_line

    line = msgspec.json.encode({"type": "ADDED", "object": pod("x")})
    event = decode_watch_line(line, msgspec.json.Decoder(Pod))
    assert event.type == "ADDED" and isinstance(event.obj, Pod) and event.obj.name == "x"


async def test_forbidden_and_unserved_kinds_are_clear_errors(
    kube: Client, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    from kubetrio.api.meta import KubeObject
    from kubetrio.api.registry import lookup
    from kubetrio.runtime.client.errors import is_forbidden

    emu.faults.add(
        FaultRule(
            verb="list",
            resource="nodes",
            status=403,
            message='nodes is forbidden: User "x" cannot list resource "nodes"',
        )
    )
    with pytest.raises(ApiError) as forbidden:
        await kube.list(Node)
    assert is_forbidden(forbidden.value)
    assert 'cannot list resource "nodes"' in str(forbidden.value)

    class Machine(KubeObject, kw_only=True):
        KIND = lookup("machine.sapcloud.io/v1alpha1", "Machine")

    with pytest.raises(ApiError) as unserved:
        await kube.list(Machine, namespace="default")
    assert is_not_found(unserved.value)
    assert "/apis/machine.sapcloud.io/v1alpha1/namespaces/default/machines" in str(unserved.value)
