"""pykube-ng (blocking, in worker threads) against the emulator in the same trio run."""

from __future__ import annotations

import json
from typing import Any

import pykube
import pytest
import trio
import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.sim import serve_world
from tests.helpers.kube import blocking, pykube_api


def configmap(api: pykube.HTTPClient, name: str, data: dict[str, str]) -> pykube.ConfigMap:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
    }
    return pykube.ConfigMap(api, {**obj, "data": data})


async def test_crud_and_conflict_on_stale_resource_version(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    api = pykube_api(emu)
    cm = configmap(api, "settings", {"a": "1"})
    await blocking(cm.create)
    first_rv = cm.obj["metadata"]["resourceVersion"]
    got = await blocking(
        lambda: pykube.ConfigMap.objects(api, namespace="default").get(name="settings")
    )
    assert got.obj["data"] == {"a": "1"}
    got.obj["data"]["a"] = "2"
    await blocking(got.update)
    assert int(got.obj["metadata"]["resourceVersion"]) > int(first_rv)
    stale = configmap(api, "settings", {"a": "3"})
    stale.obj["metadata"]["resourceVersion"] = first_rv
    with pytest.raises(pykube.exceptions.HTTPError) as err:
        await blocking(
            lambda: api.raise_for_status(api.put(**stale.api_kwargs(data=json.dumps(stale.obj))))
        )
    assert err.value.code == 409
    assert "the object has been modified" in str(err.value)
    dup = configmap(api, "settings", {})
    with pytest.raises(pykube.exceptions.HTTPError) as err:
        await blocking(dup.create)
    assert err.value.code == 409
    await blocking(got.delete)
    gone = await blocking(
        lambda: pykube.ConfigMap.objects(api, namespace="default").get_or_none(name="settings")
    )
    assert gone is None


async def test_watch_resumes_from_resource_version(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    api = pykube_api(emu)
    await blocking(configmap(api, "a", {"v": "0"}).create)
    listed = await blocking(lambda: pykube.ConfigMap.objects(api, namespace="default"))
    since = await blocking(lambda: listed.response["metadata"]["resourceVersion"])
    await blocking(configmap(api, "b", {"v": "0"}).create)
    a = await blocking(lambda: pykube.ConfigMap.objects(api, namespace="default").get(name="a"))
    a.obj["data"]["v"] = "1"
    await blocking(a.update)

    def collect() -> list[tuple[str, str]]:
        q = pykube.ConfigMap.objects(api, namespace="default").watch(
            since=since, params={"timeoutSeconds": "30", "allowWatchBookmarks": "false"}
        )
        return [(ev.type, ev.object.name) for ev in q]

    # A watch, not a request: it must let the mock clock run to its 30 s end.
    events = await blocking(collect, hold_clock=False)
    assert events == [("ADDED", "b"), ("MODIFIED", "a")]


async def test_watch_410_after_history_expired(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    api = pykube_api(emu)
    await blocking(configmap(api, "x", {}).create)
    old_rv = str(emu.store.rv)
    await blocking(configmap(api, "y", {}).create)
    emu.faults.expire_watch_history()

    def first_event() -> Any:
        q = pykube.ConfigMap.objects(api, namespace="default").watch(since=old_rv)
        for ev in q:
            return ev.type, ev.object.obj
        return None

    kind, status = await blocking(first_event)
    assert kind == "ERROR"
    assert status["code"] == 410
    assert status["reason"] == "Expired"
    assert status["message"].startswith(f"too old resource version: {old_rv} (")


async def test_eviction_blocked_by_pdb_with_429(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    api = pykube_api(emu)
    emu.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
    )
    emu.set_status(
        "v1",
        "Pod",
        "web-0",
        {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        "default",
    )
    emu.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}},
        }
    )
    emu.set_status(
        "policy/v1",
        "PodDisruptionBudget",
        "web",
        {
            "observedGeneration": 1,
            "disruptionsAllowed": 0,
            "currentHealthy": 1,
            "desiredHealthy": 1,
        },
        "default",
    )
    pod = await blocking(lambda: pykube.Pod.objects(api, namespace="default").get(name="web-0"))
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web-0", "namespace": "default"},
    }

    def evict() -> Any:
        r = api.post(**pod.api_kwargs(subresource="eviction", data=json.dumps(eviction)))
        return r.status_code, r.json()

    code, body = await blocking(evict)
    assert code == 429
    assert body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert "web" in body["details"]["causes"][0]["message"]
    pdb = emu.get("policy/v1", "PodDisruptionBudget", "web", "default")
    assert pdb is not None
    pdb["status"]["disruptionsAllowed"] = 1
    emu.update(pdb, subresource="status")
    code, body = await blocking(evict)
    assert code == 201
    assert body["status"] == "Success"
    assert emu.get("v1", "Pod", "web-0", "default") is None  # not bound to a node: gone at once


async def test_bearer_token_required(mock_clock: trio.testing.MockClock) -> None:
    async with serve_world(token="s3cret") as emu:
        api = pykube_api(emu)  # the kubeconfig carries the token
        names = await blocking(lambda: [n.name for n in pykube.Namespace.objects(api)])
        assert "kube-system" in names
        wrong = pykube.HTTPClient(
            pykube.KubeConfig(
                {
                    "clusters": [{"name": "c", "cluster": {"server": emu.url}}],
                    "users": [{"name": "u", "user": {"token": "not-the-token"}}],
                    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                    "current-context": "x",
                }
            )
        )
        with pytest.raises(pykube.exceptions.HTTPError) as err:
            await blocking(lambda: pykube.Namespace.objects(wrong).get_by_name("default"))
        assert err.value.code == 401
        r = await blocking(lambda: wrong.get(url="namespaces", version="v1"))
        assert r.status_code == 401
        assert r.headers["Content-Type"] == "application/json"
        assert r.json()["reason"] == "Unauthorized"
        # No token is the anonymous user, not an authentication failure: RBAC refuses it.
        anonymous = pykube.HTTPClient(pykube.KubeConfig.from_url(emu.url))
        r = await blocking(lambda: anonymous.get(url="namespaces", version="v1"))
        assert r.status_code == 403
        assert r.json()["message"] == (
            'namespaces is forbidden: User "system:anonymous" cannot list resource '
            '"namespaces" in API group "" at the cluster scope'
        )
