"""API rules over HTTP: CRDs, dryRun, pagination, status subresource, generation, graceful
deletion, selectors, errors (all on the test's MockClock)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.emulator.eventlog import WatchEvent
from kubetrio.emulator.http import Request, Response, json_response
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.testclient import EmuClient
from kubetrio.emulator.watch import Watch
from kubetrio.sim import serve_world
from tests.helpers.crds import MACHINE_CRD
from tests.helpers.kube import configmap as cm

PODS = "/api/v1/namespaces/default/pods"
CMS = "/api/v1/namespaces/default/configmaps"


def pod(name: str, node: str = "", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    if node:
        body["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body}


async def test_crd_serves_its_resource_and_discovery(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    assert (await client.get("/apis/machine.sapcloud.io/v1alpha1")).status == 404
    r = await client.request(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", MACHINE_CRD
    )
    assert r.status == 201, r.body
    conditions = {c["type"]: c["status"] for c in r.json()["status"]["conditions"]}
    assert conditions["Established"] == "True"
    groups = (await client.get("/apis")).json()["groups"]
    assert "machine.sapcloud.io" in [g["name"] for g in groups]
    resources = (await client.get("/apis/machine.sapcloud.io/v1alpha1")).json()["resources"]
    by_name = {r["name"]: r for r in resources}
    assert by_name["machines"]["shortNames"] == ["mach"]
    assert by_name["machines"]["namespaced"] is True
    assert "machines/status" in by_name
    base = "/apis/machine.sapcloud.io/v1alpha1/namespaces/default/machines"
    m = {
        "apiVersion": "machine.sapcloud.io/v1alpha1",
        "kind": "Machine",
        "metadata": {"name": "m1"},
        "spec": {"class": "small"},
        "status": {"phase": "ignored"},
    }
    r = await client.request("POST", base, m)
    assert r.status == 201
    assert "status" not in r.json()  # status subresource: create ignores status
    r = await client.request(
        "POST", "/apis/machine.sapcloud.io/v1alpha1/namespaces/nope/machines", m
    )
    assert r.status == 404
    assert r.json()["message"] == 'namespaces "nope" not found'
    r = await client.request(
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/machines.machine.sapcloud.io",
    )
    assert r.status == 200
    assert (await client.get(base)).status == 404
    bad = {**MACHINE_CRD, "metadata": {"name": "wrong.name"}}
    r = await client.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad)
    assert r.status == 422
    assert r.json()["details"]["causes"][0]["field"] == "metadata.name"
    bad = {**MACHINE_CRD, "spec": {**MACHINE_CRD["spec"], "scope": "Galaxy"}}
    r = await client.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad)
    assert r.status == 422
    assert r.json()["details"]["causes"][0]["field"] == "spec.scope"


async def test_dry_run_stores_nothing(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    rv = emu.store.rv
    r = await client.request("POST", f"{CMS}?dryRun=All", cm("dry", a="1"))
    assert r.status == 201
    assert r.json()["metadata"]["name"] == "dry"
    assert (await client.get(f"{CMS}/dry")).status == 404
    assert emu.store.rv == rv
    await client.request("POST", CMS, cm("real", a="1"))
    r = await client.request("DELETE", f"{CMS}/real?dryRun=All")
    assert r.status == 200
    assert (await client.get(f"{CMS}/real")).status == 200


async def test_pagination_with_continue_and_expired_token(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    for i in range(7):
        assert (await client.request("POST", CMS, cm(f"c{i}"))).status == 201
    names: list[str] = []
    token = ""
    pages = 0
    while True:
        r = (await client.get(f"{CMS}?limit=3" + (f"&continue={token}" if token else ""))).json()
        names += [i["metadata"]["name"] for i in r["items"]]
        pages += 1
        token = r["metadata"].get("continue", "")
        if not token:
            break
    assert names == [f"c{i}" for i in range(7)]
    assert pages == 3
    # Later pages show the snapshot of the first page, whatever changed in between.
    page1 = (await client.get(f"{CMS}?limit=3")).json()
    await client.request("DELETE", f"{CMS}/c4")
    await client.request("POST", CMS, cm("c35"))
    await client.request(
        "PATCH", f"{CMS}/c5", {"data": {"new": "1"}}, content_type="application/merge-patch+json"
    )
    rest = (await client.get(f"{CMS}?limit=10&continue={page1['metadata']['continue']}")).json()
    assert [i["metadata"]["name"] for i in rest["items"]] == ["c3", "c4", "c5", "c6"]
    assert rest["items"][2]["data"] == {}
    assert rest["metadata"]["resourceVersion"] == page1["metadata"]["resourceVersion"]
    now = (await client.get(CMS)).json()
    assert [i["metadata"]["name"] for i in now["items"]] == [
        "c0",
        "c1",
        "c2",
        "c3",
        "c35",
        "c5",
        "c6",
    ]
    first = (await client.get(f"{CMS}?limit=2")).json()["metadata"]["continue"]
    await client.request("POST", CMS, cm("later"))
    emu.faults.expire_watch_history()
    r = await client.get(f"{CMS}?limit=2&continue={first}")
    assert r.status == 410
    assert r.json()["reason"] == "Expired"


async def test_status_subresource_separation_and_generation(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": {}}
    r = (await client.request("POST", "/api/v1/nodes", node)).json()
    assert "generation" not in r["metadata"]  # a Node has none (as on kube-apiserver)
    # A main-resource write ignores status.
    r["spec"]["unschedulable"] = True
    r["status"] = {"phase": "Hacked"}
    r = (await client.request("PUT", "/api/v1/nodes/n1", r)).json()
    assert "generation" not in r["metadata"]
    assert "phase" not in r.get("status", {})
    # A status write ignores everything else.
    r["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    r["spec"]["unschedulable"] = False
    r["metadata"]["labels"] = {"sneaky": "yes"}
    r = (await client.request("PUT", "/api/v1/nodes/n1/status", r)).json()
    assert r["status"]["conditions"][0]["type"] == "Ready"
    assert r["spec"]["unschedulable"] is True
    assert "labels" not in r["metadata"]
    assert "generation" not in r["metadata"]
    r = (
        await client.request(
            "PATCH",
            "/api/v1/nodes/n1",
            {"metadata": {"labels": {"a": "b"}}},
            content_type="application/merge-patch+json",
        )
    ).json()
    rv = r["metadata"]["resourceVersion"]
    # A no-op write keeps the resourceVersion, as etcd3 storage does.
    r = (await client.request("PUT", "/api/v1/nodes/n1", r)).json()
    assert r["metadata"]["resourceVersion"] == rv


async def test_pod_graceful_deletion(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    await client.request("POST", PODS, pod("unbound"))
    r = await client.request("DELETE", f"{PODS}/unbound")
    assert r.status == 200
    assert (await client.get(f"{PODS}/unbound")).status == 404  # not on a node: immediate
    await client.request("POST", PODS, pod("bound", node="n1", terminationGracePeriodSeconds=45))
    r = (await client.request("DELETE", f"{PODS}/bound")).json()
    assert r["metadata"]["deletionGracePeriodSeconds"] == 45
    assert r["metadata"]["deletionTimestamp"]
    assert r["metadata"]["generation"] == 2  # bumped when deletion starts
    assert (await client.get(f"{PODS}/bound")).status == 200  # terminating, waits for a kubelet
    # A shorter grace period wins; 0 removes it (what a kubelet does when containers stopped).
    r = (await client.request("DELETE", f"{PODS}/bound", {"gracePeriodSeconds": 10})).json()
    assert r["metadata"]["deletionGracePeriodSeconds"] == 10
    r = await client.request("DELETE", f"{PODS}/bound?gracePeriodSeconds=0")
    assert r.status == 200
    assert (await client.get(f"{PODS}/bound")).status == 404
    created = (await client.request("POST", PODS, pod("default-grace", node="n1"))).json()
    assert created["spec"]["terminationGracePeriodSeconds"] == 30  # API defaulting
    assert created["spec"]["restartPolicy"] == "Always"
    r = (
        await client.request("DELETE", f"{PODS}/default-grace?propagationPolicy=Foreground")
    ).json()
    assert r["metadata"]["deletionGracePeriodSeconds"] == 30


async def test_selectors_and_errors(client: EmuClient, mock_clock: trio.testing.MockClock) -> None:
    await client.request("POST", CMS, cm("a", {"env": "prod", "tier": "web"}))
    await client.request("POST", CMS, cm("b", {"env": "dev"}))
    await client.request("POST", CMS, cm("c"))

    async def names(query: str) -> list[str]:
        r = await client.get(f"{CMS}?{query}")
        assert r.status == 200, r.body
        return [i["metadata"]["name"] for i in r.json()["items"]]

    assert await names("labelSelector=env%3Dprod") == ["a"]
    assert await names("labelSelector=env%21%3Dprod") == ["b", "c"]
    assert await names("labelSelector=env+in+(prod,dev)") == ["a", "b"]
    assert await names("labelSelector=env+notin+(prod)") == ["b", "c"]
    assert await names("labelSelector=tier") == ["a"]
    assert await names("labelSelector=%21tier") == ["b", "c"]
    assert await names("labelSelector=env%3D%3Ddev") == ["b"]
    assert await names("fieldSelector=metadata.name%21%3Da") == ["b", "c"]
    r = await client.get(f"{CMS}?labelSelector=env+in+prod")
    assert r.status == 400 and r.json()["reason"] == "BadRequest"
    r = await client.get(f"{PODS}?fieldSelector=spec.bogus%3Dx")
    assert r.status == 400
    assert r.json()["message"] == "field label not supported: spec.bogus"
    r = await client.request("POST", CMS, b"{not json")
    assert r.status == 400 and r.headers["content-type"] == "application/json"
    r = await client.request(
        "POST", CMS, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}
    )
    assert r.status == 400
    r = await client.request("POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})
    assert r.status == 422
    assert r.json()["details"]["causes"][0]["field"] == "metadata.name"
    r = await client.request("PUT", f"{CMS}/a", cm("other"))
    assert r.status == 400
    assert "does not match the name on the URL" in r.json()["message"]
    r = await client.get(f"{CMS}/missing")
    assert r.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "missing" not found',
        "reason": "NotFound",
        "details": {"name": "missing", "kind": "configmaps"},
        "code": 404,
    }
    r = await client.request("POST", CMS, cm("a"))
    assert r.status == 409 and r.json()["reason"] == "AlreadyExists"
    stale = (await client.get(f"{CMS}/a")).json()
    await client.request(
        "PATCH", f"{CMS}/a", {"data": {"x": "1"}}, content_type="application/merge-patch+json"
    )
    r = await client.request("PUT", f"{CMS}/a", stale)
    assert r.status == 409
    assert r.json()["message"] == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    r = await client.request("DELETE", f"{CMS}/a", {"preconditions": {"uid": "not-the-uid"}})
    assert r.status == 409
    r = await client.request(
        "PATCH",
        f"{CMS}/a",
        [{"op": "test", "path": "/data/x", "value": "2"}],
        content_type="application/json-patch+json",
    )
    assert r.status == 422
    assert (
        r.json()["details"]["causes"][0]["message"] == "testing value /data/x failed: test failed"
    )
    r = await client.request("POST", f"{CMS}/a", cm("a"))
    assert r.status == 405
    r = await client.request("DELETE", "/api/v1/namespaces/default")
    assert r.status == 403
    assert (
        r.json()["message"]
        == 'namespaces "default" is forbidden: this namespace may not be deleted'
    )
    r = await client.request(
        "POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}
    )
    assert r.status == 201
    assert r.json()["metadata"]["name"].startswith("gen-")


async def test_table_output(client: EmuClient, mock_clock: trio.testing.MockClock) -> None:
    await client.request("POST", PODS, pod("t1", node="n1"))
    r = await client.get(
        PODS, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
    )
    t = r.json()
    assert t["kind"] == "Table"
    assert [c["name"] for c in t["columnDefinitions"]][:5] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
    ]
    assert t["rows"][0]["cells"][:3] == ["t1", "0/1", "Pending"]
    assert t["rows"][0]["object"]["metadata"]["name"] == "t1"


def _running_pod(
    emu: Emulator, name: str, labels: dict[str, str], node: str = "", ready: bool = True
) -> None:
    body = pod(name, node=node)
    body["metadata"].update(namespace="default", labels=labels)
    emu.create(body)
    status: dict[str, Any] = {"phase": "Running"}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": "True"}]
    emu.set_status("v1", "Pod", name, status, "default")


def _pdb(emu: Emulator, name: str, labels: dict[str, str], allowed: int, observed: int = 1) -> None:
    emu.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
        }
    )
    status = {
        "observedGeneration": observed,
        "disruptionsAllowed": allowed,
        "currentHealthy": 2,
        "desiredHealthy": 1,
    }
    emu.set_status("policy/v1", "PodDisruptionBudget", name, status, "default")


async def test_eviction_rules(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    def eviction(name: str, version: str = "policy/v1", **options: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "apiVersion": version,
            "kind": "Eviction",
            "metadata": {"name": name},
        }
        if options:
            body["deleteOptions"] = options
        return body

    _running_pod(emu, "a", {"app": "a"})
    _pdb(emu, "a1", {"app": "a"}, allowed=1)
    _pdb(emu, "a2", {"app": "a"}, allowed=1)
    r = await client.request("POST", f"{PODS}/a/eviction", eviction("a"))
    assert r.status == 500
    assert r.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "This pod has more than one PodDisruptionBudget, which the eviction "
        "subresource does not support.",
        "code": 500,
    }
    _running_pod(emu, "b", {"app": "b"})
    _pdb(emu, "b", {"app": "b"}, allowed=1, observed=0)
    r = await client.request("POST", f"{PODS}/b/eviction", eviction("b"))
    assert r.status == 429
    assert r.headers["retry-after"] == "10"
    assert r.json()["details"]["retryAfterSeconds"] == 10
    assert r.json()["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget b is still being processed by the server.",
        }
    ]
    _running_pod(emu, "c", {"app": "c"}, node="n1")
    _pdb(emu, "c", {"app": "c"}, allowed=1)
    r = await client.request("POST", f"{PODS}/c/eviction", eviction("c", dryRun=["All"]))
    assert r.status == 201
    assert (
        emu.get("policy/v1", "PodDisruptionBudget", "c", "default")["status"]["disruptionsAllowed"]
        == 1
    )  # type: ignore[index]
    r = await client.request(
        "POST", f"{PODS}/c/eviction", eviction("c", "policy/v1beta1", gracePeriodSeconds=5)
    )
    assert r.status == 201 and r.json()["status"] == "Success"
    evicted = emu.get("v1", "Pod", "c", "default")
    assert evicted is not None and evicted["metadata"]["deletionGracePeriodSeconds"] == 5
    pdb = emu.get("policy/v1", "PodDisruptionBudget", "c", "default")
    assert pdb is not None
    assert pdb["status"]["disruptionsAllowed"] == 0
    assert list(pdb["status"]["disruptedPods"]) == ["c"]
    # An unready pod is not counted as healthy: with the budget met it goes without a decrement.
    _running_pod(emu, "u", {"app": "u"}, ready=False)
    _pdb(emu, "u", {"app": "u"}, allowed=0)
    r = await client.request("POST", f"{PODS}/u/eviction", eviction("u"))
    assert r.status == 201
    pdb_u = emu.get("policy/v1", "PodDisruptionBudget", "u", "default")
    assert pdb_u is not None and "disruptedPods" not in pdb_u["status"]
    # Pending pods ignore budgets.
    emu.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "pend", "namespace": "default", "labels": {"app": "u"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
    )
    assert (await client.request("POST", f"{PODS}/pend/eviction", eviction("pend"))).status == 201
    # Finished pods ignore budgets.
    _running_pod(emu, "d", {"app": "c"})
    emu.set_status("v1", "Pod", "d", {"phase": "Succeeded"}, "default")
    r = await client.request("POST", f"{PODS}/d/eviction", eviction("d"))
    assert r.status == 201
    r = await client.request("POST", f"{PODS}/d/eviction", eviction("d"))
    assert r.status == 404
    r = await client.request("POST", f"{PODS}/x/eviction", eviction("y"))
    assert r.status == 400


async def test_watch_older_than_window_is_gone(mock_clock: trio.testing.MockClock) -> None:
    async with serve_world(window=3) as emu:
        client = EmuClient(emu.url, emu.token)
        rvs = []
        for i in range(6):
            r = await client.request("POST", CMS, cm(f"w{i}"))
            rvs.append(int(r.json()["metadata"]["resourceVersion"]))
        async with client.watch(f"{CMS}?watch=1&resourceVersion={rvs[1]}") as w:
            ev = await w.next()
            assert ev is not None and ev["type"] == "ERROR"
            assert ev["object"]["message"] == f"too old resource version: {rvs[1]} ({rvs[3]})"
        async with client.watch(f"{CMS}?watch=1&resourceVersion={rvs[2]}") as w:
            got = [await w.next(), await w.next(), await w.next()]
            assert [e["object"]["metadata"]["name"] for e in got if e] == ["w3", "w4", "w5"]


async def test_mounted_routes_and_handler_errors(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async def cloud(req: Request) -> Response:
        if req.path.endswith("/boom"):
            raise RuntimeError("bug in a mounted handler")
        return json_response({"path": req.path, "method": req.method})

    emu.mount("/cloud", cloud)
    r = await client.get("/cloud/v1/vms")
    assert r.json() == {"path": "/cloud/v1/vms", "method": "GET"}
    r = await client.get("/cloud/boom")
    assert r.status == 500
    assert r.headers["content-type"] == "application/json"
    assert r.json()["kind"] == "Status" and r.json()["reason"] == "InternalError"
    assert (await client.get("/api/v1/namespaces")).status == 200  # still serving


async def test_watch_producer_failure_keeps_server_up(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock, monkeypatch: Any
) -> None:
    def broken(self: Any, ev: Any) -> bytes:
        raise RuntimeError("bug while rendering an event")

    monkeypatch.setattr(Watch, "_render", broken)
    async with client.watch(f"{CMS}?watch=1") as w:
        await emu.faults.wait_open_watches(lambda n: n == 1)
        await client.request("POST", CMS, cm("trigger"))
        assert await w.next() is None and w.broken
    assert (await client.get(f"{CMS}/trigger")).status == 200


async def test_store_subscribers_are_the_place_for_cluster_behaviours(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """A kubelet stand-in: finish pods as soon as they start terminating."""
    pods = emu.resource("pods")

    def kubelet(rt: ResourceType, ev: WatchEvent) -> None:
        md = ev.entry.obj["metadata"]
        if rt is pods and ev.type == "MODIFIED" and md.get("deletionTimestamp"):
            emu.store.delete(rt, md["namespace"], md["name"], grace=0)

    unsubscribe = emu.store.subscribe(kubelet)
    await client.request("POST", PODS, pod("managed", node="n1"))
    async with client.watch(f"{PODS}?watch=1&resourceVersion={emu.store.rv}") as w:
        await client.request("DELETE", f"{PODS}/managed")
        types = [(await w.next() or {}).get("type"), (await w.next() or {}).get("type")]
    assert types == ["MODIFIED", "DELETED"]
    assert (await client.get(f"{PODS}/managed")).status == 404
    unsubscribe()


@pytest.mark.slow
async def test_hundreds_of_watchers_each_get_every_event(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    start = emu.store.rv
    counts: list[int] = []

    async def watcher() -> None:
        async with client.watch(f"{CMS}?watch=1&resourceVersion={start}") as w:
            n = 0
            async for ev in w:
                n += 1
                if ev["object"]["metadata"]["name"] == "last":
                    break
            counts.append(n)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for _ in range(200):
                nursery.start_soon(watcher)
            await emu.faults.wait_open_watches(lambda n: n == 200)
            for i in range(20):
                await client.request("POST", CMS, cm(f"e{i}"))
            await client.request("POST", CMS, cm("last"))
    assert counts == [21] * 200


async def test_strategic_merge_patch_directives(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "smp", "finalizers": ["a/one"]},
        "spec": {
            "taints": [
                {"key": "k1", "value": "v1", "effect": "NoSchedule"},
                {"key": "k2", "value": "v2", "effect": "NoExecute"},
            ]
        },
    }
    await client.request("POST", "/api/v1/nodes", node)
    # Admission tainted the new Node not-ready; lift it, as its lifecycle controller would, so
    # the list holds only the test's taints.
    lifted = await client.request(
        "PATCH",
        "/api/v1/nodes/smp",
        {"spec": {"taints": node["spec"]["taints"]}},
        content_type="application/merge-patch+json",
    )
    assert lifted.status == 200, lifted.body

    async def smp(patch: dict[str, Any]) -> dict[str, Any]:
        r = await client.request(
            "PATCH",
            "/api/v1/nodes/smp",
            patch,
            content_type="application/strategic-merge-patch+json",
        )
        assert r.status == 200, r.body
        out: dict[str, Any] = r.json()
        return out

    # Taints merge by key: k1 updated in place, k3 appended, k2 untouched.
    n = await smp(
        {
            "spec": {
                "taints": [
                    {"key": "k1", "value": "new", "effect": "NoSchedule"},
                    {"key": "k3", "effect": "NoSchedule"},
                ]
            }
        }
    )
    assert [(t["key"], t.get("value")) for t in n["spec"]["taints"]] == [
        ("k1", "new"),
        ("k2", "v2"),
        ("k3", None),
    ]
    n = await smp({"spec": {"taints": [{"key": "k2", "$patch": "delete"}]}})
    assert [t["key"] for t in n["spec"]["taints"]] == ["k1", "k3"]
    n = await smp({"spec": {"$setElementOrder/taints": [{"key": "k3"}, {"key": "k1"}]}})
    assert [t["key"] for t in n["spec"]["taints"]] == ["k3", "k1"]
    n = await smp({"metadata": {"finalizers": ["a/two"]}})
    assert n["metadata"]["finalizers"] == ["a/one", "a/two"]  # merged as a set
    n = await smp({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/one"]}})
    assert n["metadata"]["finalizers"] == ["a/two"]
    n = await smp({"spec": {"podCIDR": "10.0.0.0/24", "providerID": "sim://1"}})
    n = await smp({"spec": {"$retainKeys": ["taints", "podCIDR"], "podCIDR": "10.0.1.0/24"}})
    assert set(n["spec"]) == {"taints", "podCIDR"}
    n = await smp(
        {"spec": {"taints": [{"$patch": "replace"}, {"key": "only", "effect": "NoSchedule"}]}}
    )
    assert [t["key"] for t in n["spec"]["taints"]] == ["only"]
    n = await smp({"spec": {"podCIDR": None}})
    assert "podCIDR" not in n["spec"]


async def test_custom_resource_status_and_generation(
    client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    await client.request(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", MACHINE_CRD
    )
    base = "/apis/machine.sapcloud.io/v1alpha1/namespaces/default/machines"
    m = {
        "apiVersion": "machine.sapcloud.io/v1alpha1",
        "kind": "Machine",
        "metadata": {"name": "m"},
        "spec": {"a": 1},
    }
    await client.request("POST", base, m)
    r = (
        await client.request(
            "PATCH",
            f"{base}/m/status",
            {"status": {"phase": "Running"}, "spec": {"a": 2}},
            content_type="application/merge-patch+json",
        )
    ).json()
    assert r["status"] == {"phase": "Running"} and r["spec"] == {"a": 1}
    assert r["metadata"]["generation"] == 1
    r = (
        await client.request(
            "PATCH",
            f"{base}/m",
            {"status": {"phase": "Lost"}, "spec": {"a": 3}},
            content_type="application/merge-patch+json",
        )
    ).json()
    assert r["status"] == {"phase": "Running"} and r["spec"] == {"a": 3}
    assert r["metadata"]["generation"] == 2
    r = await client.request(
        "PATCH",
        f"{base}/m",
        {"spec": {"a": 4}},
        content_type="application/strategic-merge-patch+json",
    )
    assert r.status == 415
    r = await client.get(f"{base}/m/status")
    assert r.status == 200 and r.json()["status"] == {"phase": "Running"}
    r = await client.get(f"{base}?fieldSelector=spec.a%3D3")
    assert r.status == 400


async def test_fault_probability_is_seeded(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.faults.add(verb="list", resource="secrets", status=500, probability=0.5)
    codes = [(await client.get("/api/v1/namespaces/default/secrets")).status for _ in range(40)]
    assert 5 < codes.count(500) < 35
    assert set(codes) == {200, 500}


async def test_namespace_termination(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    await client.request(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tmp"}},
    )
    base = "/api/v1/namespaces/tmp"
    held = cm("held")
    held["metadata"]["finalizers"] = ["example.com/keep"]
    await client.request("POST", f"{base}/configmaps", held)
    await client.request("POST", f"{base}/configmaps", cm("plain"))
    await client.request("POST", f"{base}/pods", pod("running", node="n1"))
    r = (await client.request("DELETE", base)).json()
    assert r["status"]["phase"] == "Terminating"
    assert (await client.get(f"{base}/configmaps/plain")).status == 404
    assert (await client.get(f"{base}/configmaps/held")).json()["metadata"]["deletionTimestamp"]
    assert (await client.get(f"{base}/pods/running")).json()["metadata"][
        "deletionGracePeriodSeconds"
    ] == 30
    r = await client.request("POST", f"{base}/configmaps", cm("new"))
    assert r.status == 403
    assert "because it is being terminated" in r.json()["message"]
    await client.request(
        "PATCH",
        f"{base}/configmaps/held",
        {"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    assert (await client.get(base)).status == 200  # the terminating pod still holds it
    await client.request("DELETE", f"{base}/pods/running?gracePeriodSeconds=0")
    assert (await client.get(base)).status == 404
    await client.request(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "empty"}},
    )
    assert (await client.request("DELETE", "/api/v1/namespaces/empty")).status == 200
    assert (await client.get("/api/v1/namespaces/empty")).status == 404
