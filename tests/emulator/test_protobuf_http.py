"""Protobuf over raw HTTP, as client-go speaks it: enveloped bodies both ways, length-framed
watch streams, Status errors, 415 for custom resources and 406 when nothing fits. Responses are
read with the protobuf library's message classes (field access, not our JSON mapping), so a
wrong wire encoding fails here even if the mapping round-trips with itself."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import h11
import trio
import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.emulator.kubepb import codec
from kubetrio.emulator.kubepb.negotiate import PROTOBUF, PROTOBUF_WATCH
from kubetrio.emulator.testclient import EmuClient, Reply

PB_ACCEPT = {"Accept": f"{PROTOBUF}, application/json"}
CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
META = "k8s.io.apimachinery.pkg.apis.meta.v1"


def msg(full_name: str) -> Any:
    cls = codec.message_class(full_name)
    assert cls is not None, full_name
    return cls()


def envelope(api_version: str, kind: str, message: Any) -> bytes:
    env = msg("k8s.io.apimachinery.pkg.runtime.Unknown")
    env.typeMeta.apiVersion = api_version
    env.typeMeta.kind = kind
    env.raw = message.SerializeToString()
    return b"k8s\x00" + env.SerializeToString()


def open_envelope(body: bytes, full_name: str) -> tuple[Any, Any]:
    """(Unknown envelope, typed message) of a protobuf body."""
    assert body[:4] == b"k8s\x00", body[:20]
    env = msg("k8s.io.apimachinery.pkg.runtime.Unknown")
    env.ParseFromString(body[4:])
    out = msg(full_name)
    out.ParseFromString(env.raw)
    return env, out


def configmap(name: str, **data: str) -> Any:
    cm = msg("k8s.io.api.core.v1.ConfigMap")
    cm.metadata.name = name
    cm.metadata.labels["app"] = "pb"
    for k, v in data.items():
        cm.data[k] = v
    cm.binaryData["blob"] = b"\x00\xffbin"
    return cm


async def pb_post(client: EmuClient, path: str, body: bytes, **headers: str) -> Reply:
    return await client.request(
        "POST", path, body, headers={**PB_ACCEPT, **headers}, content_type=PROTOBUF
    )


def status_of(reply: Reply) -> Any:
    assert reply.headers["content-type"] == PROTOBUF
    env, status = open_envelope(reply.body, f"{META}.Status")
    assert (env.typeMeta.apiVersion, env.typeMeta.kind) == ("v1", "Status")
    return status


async def test_create_get_list_in_protobuf(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    r = await pb_post(client, CMS, envelope("v1", "ConfigMap", configmap("one", a="1")))
    assert r.status == 201, r.body
    assert r.headers["content-type"] == PROTOBUF
    env, created = open_envelope(r.body, "k8s.io.api.core.v1.ConfigMap")
    assert (env.typeMeta.apiVersion, env.typeMeta.kind) == ("v1", "ConfigMap")
    assert created.metadata.name == "one"
    assert created.metadata.namespace == "default"
    assert created.metadata.uid and int(created.metadata.resourceVersion) > 0
    assert created.metadata.creationTimestamp.seconds > 1_000_000_000
    assert dict(created.data) == {"a": "1"}
    assert created.binaryData["blob"] == b"\x00\xffbin"

    # What protobuf stored, JSON reads back in k8s's JSON form (bytes as base64).
    js = (await client.get(f"{CMS}/one")).json()
    assert js["data"] == {"a": "1"} and js["binaryData"] == {"blob": "AP9iaW4="}
    assert js["metadata"]["labels"] == {"app": "pb"}

    r = await client.get(f"{CMS}/one", headers=PB_ACCEPT)
    assert r.status == 200 and r.headers["content-type"] == PROTOBUF
    _, got = open_envelope(r.body, "k8s.io.api.core.v1.ConfigMap")
    assert got.metadata.uid == created.metadata.uid

    await client.request("POST", CMS, {"metadata": {"name": "two"}, "data": {"b": "2"}})
    r = await client.get(CMS, headers=PB_ACCEPT)
    env, lst = open_envelope(r.body, "k8s.io.api.core.v1.ConfigMapList")
    assert (env.typeMeta.apiVersion, env.typeMeta.kind) == ("v1", "ConfigMapList")
    assert sorted(i.metadata.name for i in lst.items) >= ["one", "two"]
    assert int(lst.metadata.resourceVersion) >= int(created.metadata.resourceVersion)
    # Selectors and pagination apply as on the JSON path.
    r = await client.get(f"{CMS}?labelSelector=app%3Dpb&limit=1", headers=PB_ACCEPT)
    _, page = open_envelope(r.body, "k8s.io.api.core.v1.ConfigMapList")
    assert [i.metadata.name for i in page.items] == ["one"]

    # JSON clients are unaffected.
    r = await client.get(CMS)
    assert r.headers["content-type"] == "application/json" and r.json()["kind"] == "ConfigMapList"


async def test_update_delete_and_delete_options_in_protobuf(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    r = await pb_post(client, CMS, envelope("v1", "ConfigMap", configmap("u", a="1")))
    _, cm = open_envelope(r.body, "k8s.io.api.core.v1.ConfigMap")
    cm.data["a"] = "2"
    r = await client.request(
        "PUT",
        f"{CMS}/u",
        envelope("v1", "ConfigMap", cm),
        headers=PB_ACCEPT,
        content_type=PROTOBUF,
    )
    assert r.status == 200, r.body
    _, updated = open_envelope(r.body, "k8s.io.api.core.v1.ConfigMap")
    assert updated.data["a"] == "2"
    # Stale resourceVersion: a protobuf 409 Status.
    r = await client.request(
        "PUT", f"{CMS}/u", envelope("v1", "ConfigMap", cm), headers=PB_ACCEPT, content_type=PROTOBUF
    )
    status = status_of(r)
    assert (r.status, status.code, status.reason) == (409, 409, "Conflict")

    # DeleteOptions as protobuf: a wrong UID precondition must be read, and refuse.
    opts = msg(f"{META}.DeleteOptions")
    opts.preconditions.uid = "not-the-uid"
    r = await client.request(
        "DELETE",
        f"{CMS}/u",
        envelope("meta.k8s.io/v1", "DeleteOptions", opts),
        headers=PB_ACCEPT,
        content_type=PROTOBUF,
    )
    assert r.status == 409, r.body
    assert "Precondition failed" in status_of(r).message
    opts.preconditions.uid = updated.metadata.uid
    r = await client.request(
        "DELETE",
        f"{CMS}/u",
        envelope("meta.k8s.io/v1", "DeleteOptions", opts),
        headers=PB_ACCEPT,
        content_type=PROTOBUF,
    )
    assert r.status == 200, r.body
    # Gone at once: a Success Status naming it, as a cluster answers for a ConfigMap.
    gone = status_of(r)
    assert (gone.status, gone.details.name, gone.details.kind) == ("Success", "u", "configmaps")
    assert (await client.get(f"{CMS}/u")).status == 404

    # deletecollection answers the deleted items as a protobuf List.
    await pb_post(client, CMS, envelope("v1", "ConfigMap", configmap("c1")))
    r = await client.request("DELETE", f"{CMS}?labelSelector=app%3Dpb", headers=PB_ACCEPT)
    _, lst = open_envelope(r.body, "k8s.io.api.core.v1.ConfigMapList")
    assert [i.metadata.name for i in lst.items] == ["c1"]


async def test_errors_and_eviction_status_in_protobuf(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    r = await client.get(f"{CMS}/missing", headers=PB_ACCEPT)
    status = status_of(r)
    assert (r.status, status.code, status.reason, status.status) == (
        404,
        404,
        "NotFound",
        "Failure",
    )
    assert status.message == 'configmaps "missing" not found'
    assert (status.details.name, status.details.kind) == ("missing", "configmaps")

    # A JSON client still gets JSON errors.
    r = await client.get(f"{CMS}/missing")
    assert r.headers["content-type"] == "application/json" and r.json()["code"] == 404

    # Invalid object sent as protobuf: the apiserver's 422 with causes naming the field.
    bad = msg("k8s.io.api.core.v1.ConfigMap")
    r = await pb_post(client, CMS, envelope("v1", "ConfigMap", bad))
    status = status_of(r)
    assert r.status == 422 and status.reason == "Invalid"
    assert any(c.field == "metadata.name" for c in status.details.causes)

    pod = msg("k8s.io.api.core.v1.Pod")
    pod.metadata.name = "p"
    c = pod.spec.containers.add()
    c.name, c.image = "c", "busybox"
    r = await pb_post(client, PODS, envelope("v1", "Pod", pod))
    assert r.status == 201, r.body
    ev = msg("k8s.io.api.policy.v1.Eviction")
    ev.metadata.name = "p"
    r = await pb_post(client, f"{PODS}/p/eviction", envelope("policy/v1", "Eviction", ev))
    status = status_of(r)
    assert (r.status, status.status) == (201, "Success")


async def test_garbage_and_custom_resources(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    for body in (b"not protobuf at all", b"k8s\x00\xff\xff\xff", b""):
        r = await pb_post(client, CMS, body)
        assert r.status == 400, (body, r.status)
        assert status_of(r).reason == "BadRequest"

    # An envelope without typeMeta decodes as the type the URL names (Go decodes "into" it).
    bare = msg("k8s.io.apimachinery.pkg.runtime.Unknown")
    bare.raw = configmap("untyped", a="1").SerializeToString()
    r = await pb_post(client, CMS, b"k8s\x00" + bare.SerializeToString())
    assert r.status == 201, r.body
    assert (await client.get(f"{CMS}/untyped")).json()["data"] == {"a": "1"}
    # An envelope naming another kind than the URL: the apiserver's 400, not a silent store.
    r = await pb_post(client, CMS, envelope("v1", "Secret", configmap("s")))
    assert r.status == 400 and status_of(r).reason == "BadRequest"

    # A CustomResourceDefinition itself is a built-in kind: protobuf both ways, with the
    # JSON-schema names ($ref, x-kubernetes-*) mapped.
    ext = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"
    crd = msg(f"{ext}.CustomResourceDefinition")
    crd.metadata.name = "widgets.example.com"
    crd.spec.group, crd.spec.scope = "example.com", "Namespaced"
    names = crd.spec.names
    names.plural, names.singular, names.kind = "widgets", "widget", "Widget"
    version = crd.spec.versions.add()
    version.name, version.served, version.storage = "v1", True, True
    schema = version.schema.openAPIV3Schema
    schema.type = "object"
    schema.xKubernetesPreserveUnknownFields = True
    schema.properties["spec"].type = "object"
    schema.properties["spec"].properties["size"].type = "integer"
    schema.properties["spec"].properties["size"].maximum = 10
    r = await pb_post(
        client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd),
    )
    assert r.status == 201, r.body
    _, created = open_envelope(r.body, f"{ext}.CustomResourceDefinition")
    assert created.spec.versions[0].schema.openAPIV3Schema.xKubernetesPreserveUnknownFields
    js = (
        await client.get(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"
        )
    ).json()
    stored = js["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert stored["x-kubernetes-preserve-unknown-fields"] is True
    assert stored["properties"]["spec"]["properties"]["size"] == {"type": "integer", "maximum": 10}
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    # A custom resource has no protobuf form: 415 with a Status, never a JSON parse error.
    cm = envelope("example.com/v1", "Widget", configmap("w"))
    r = await client.request("POST", widgets, cm, content_type=PROTOBUF)
    assert r.status == 415
    js = r.json()
    assert (js["kind"], js["reason"], js["code"]) == ("Status", "UnsupportedMediaType", 415)
    assert "application/json" in js["message"]
    r = await pb_post(client, widgets, cm)
    assert r.status == 415 and status_of(r).reason == "UnsupportedMediaType"

    # Asked for protobuf or JSON, a custom resource answers JSON; protobuf only: 406.
    await client.request("POST", widgets, {"metadata": {"name": "w1"}, "spec": {"size": 1}})
    r = await client.get(f"{widgets}/w1", headers=PB_ACCEPT)
    assert r.headers["content-type"] == "application/json" and r.json()["spec"] == {"size": 1}
    r = await client.get(f"{widgets}/w1", headers={"Accept": PROTOBUF})
    assert r.status == 406
    assert status_of(r).reason == "NotAcceptable"
    r = await client.get(f"{CMS}", headers={"Accept": "text/html"})
    assert r.status == 406 and r.json()["reason"] == "NotAcceptable"


async def test_accept_preferences(client: EmuClient, mock_clock: trio.testing.MockClock) -> None:
    await client.request("POST", CMS, {"metadata": {"name": "q"}})
    cases = {
        f"application/json;q=0.9, {PROTOBUF}": PROTOBUF,
        f"{PROTOBUF};q=0.5, application/json": "application/json",
        f"{PROTOBUF};q=0, */*": "application/json",
        "*/*": "application/json",
        f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io, application/json": "application/json",
        f"{PROTOBUF}": PROTOBUF,
    }
    for accept, want in cases.items():
        r = await client.get(f"{CMS}/q", headers={"Accept": accept})
        assert (r.status, r.headers["content-type"]) == (200, want), accept


@asynccontextmanager
async def pb_watch(client: EmuClient, path: str) -> AsyncIterator[Any]:
    """A protobuf watch: yields a function returning the next (type, enveloped object)."""
    stream = await trio.open_tcp_stream(client.host, client.port)
    async with stream:
        conn = h11.Connection(h11.CLIENT)
        headers = [
            ("Host", f"{client.host}:{client.port}"),
            ("Accept", PB_ACCEPT["Accept"]),
            ("Authorization", f"Bearer {client.token}"),
        ]
        await stream.send_all(
            conn.send(h11.Request(method="GET", target=path, headers=headers))
            + conn.send(h11.EndOfMessage())
        )
        buf = bytearray()
        content_type: list[str] = []

        async def next_frame() -> tuple[str, bytes]:
            while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await stream.receive_some(65536))
                elif isinstance(event, h11.Response):
                    content_type.append(dict(event.headers)[b"content-type"].decode())
                elif isinstance(event, h11.Data):
                    buf.extend(event.data)
                else:
                    raise AssertionError(f"stream ended: {event}")
            (size,) = struct.unpack(">I", buf[:4])
            frame = bytes(buf[4 : 4 + size])
            del buf[: 4 + size]
            # Frames are bare WatchEvents (client-go decodes them with the raw serializer).
            assert not frame.startswith(b"k8s\x00")
            ev = msg(f"{META}.WatchEvent")
            ev.ParseFromString(frame)
            assert content_type == [PROTOBUF_WATCH]
            return ev.type, ev.object.raw

        yield next_frame


async def test_watch_in_protobuf(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    r = await pb_post(client, CMS, envelope("v1", "ConfigMap", configmap("w0", a="0")))
    rv = open_envelope(r.body, "k8s.io.api.core.v1.ConfigMap")[1].metadata.resourceVersion
    async with pb_watch(client, f"{CMS}?watch=1&allowWatchBookmarks=true") as next_frame:
        type_, raw = await next_frame()
        _, obj = open_envelope(raw, "k8s.io.api.core.v1.ConfigMap")
        assert (type_, obj.metadata.name, obj.data["a"]) == ("ADDED", "w0", "0")
        await client.request("POST", CMS, {"metadata": {"name": "w1"}, "data": {"a": "1"}})
        type_, raw = await next_frame()
        env, obj = open_envelope(raw, "k8s.io.api.core.v1.ConfigMap")
        assert (type_, obj.metadata.name, env.typeMeta.kind) == ("ADDED", "w1", "ConfigMap")
        await client.request("DELETE", f"{CMS}/w0")
        type_, raw = await next_frame()
        assert (type_, open_envelope(raw, "k8s.io.api.core.v1.ConfigMap")[1].metadata.name) == (
            "DELETED",
            "w0",
        )
        # Nothing happens for a minute of (mock) time: a bookmark, an object with only metadata.
        type_, raw = await next_frame()
        assert type_ == "BOOKMARK"
        _, mark = open_envelope(raw, "k8s.io.api.core.v1.ConfigMap")
        assert int(mark.metadata.resourceVersion) > int(rv) and not mark.metadata.name

    # A resourceVersion from before the window: the 410 arrives as a protobuf ERROR Status.
    await client.request("PUT", f"{CMS}/w1", {"metadata": {"name": "w1"}, "data": {"i": "2"}})
    emu.store.expire_history()
    async with pb_watch(client, f"{CMS}?watch=1&resourceVersion={rv}") as next_frame:
        type_, raw = await next_frame()
        env, status = open_envelope(raw, f"{META}.Status")
        assert (type_, env.typeMeta.kind, status.code, status.reason) == (
            "ERROR",
            "Status",
            410,
            "Expired",
        )
