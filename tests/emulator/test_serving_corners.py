"""What a cluster answers at the corners of serving, held on the emulator without a cluster:
the delete answer per kind, the watch cache's unpaged resourceVersion=0 lists and its wait for
a future resourceVersion, request options refused as invalid options, bodies it cannot read,
aggregated discovery, the newly served kinds, and a custom resource's watch cache starting
with its CRD (the conformance corpus holds each against kube-apiserver)."""

from __future__ import annotations

import trio
import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from tests.helpers.crd_schema import WIDGETS, with_crd
from tests.helpers.kube import configmap as cm

CMS = "/api/v1/namespaces/default/configmaps"
ACCOUNTS = "/api/v1/namespaces/default/serviceaccounts"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


async def test_delete_answers_a_status_or_the_object_as_the_registry_does(
    client: EmuClient,
) -> None:
    await client.request("POST", CMS, cm("c"))
    gone = (await client.request("DELETE", f"{CMS}/c")).json()
    assert (gone["kind"], gone["status"]) == ("Status", "Success")
    assert (gone["details"]["name"], gone["details"]["kind"]) == ("c", "configmaps")
    # ServiceAccounts keep kube's ReturnDeletedObject: the object comes back.
    await client.request("POST", ACCOUNTS, {"metadata": {"name": "sa"}})
    answer = (await client.request("DELETE", f"{ACCOUNTS}/sa")).json()
    assert (answer["kind"], answer["metadata"]["name"]) == ("ServiceAccount", "sa")
    # Held by a finalizer: the object, marked for deletion.
    held_cm = cm("held")
    held_cm["metadata"]["finalizers"] = ["example.com/hold"]
    assert (await client.request("POST", CMS, held_cm)).status == 201
    held = (await client.request("DELETE", f"{CMS}/held")).json()
    assert held["kind"] == "ConfigMap" and held["metadata"]["deletionTimestamp"]


async def test_resource_version_zero_is_served_whole_and_a_future_one_waits(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    for name in ("a", "b", "c"):
        await client.request("POST", CMS, cm(name))
    whole = (await client.get(f"{CMS}?limit=1&resourceVersion=0")).json()
    assert len(whole["items"]) == 3 and "continue" not in whole["metadata"]
    paged = (await client.get(f"{CMS}?limit=1")).json()
    assert len(paged["items"]) == 1 and paged["metadata"]["continue"]

    future = emu.store.rv + 1
    started = trio.current_time()
    late = await client.get(f"{CMS}?resourceVersion={future + 5}")
    assert late.status == 504 and trio.current_time() - started >= 3
    assert late.json()["message"].startswith("Timeout: Too large resource version")

    async with trio.open_nursery() as nursery:
        # Reached while it waits: answered then.
        answers = []

        async def list_at_future() -> None:
            answers.append(await client.get(f"{CMS}?resourceVersion={future}"))

        nursery.start_soon(list_at_future)
        await trio.sleep(1)
        await client.request("POST", CMS, cm("d"))
    assert answers[0].status == 200 and len(answers[0].json()["items"]) == 4


async def test_request_options_are_refused_as_invalid_options(client: EmuClient) -> None:
    r = await client.request("POST", f"{CMS}?fieldManager={'m' * 129}&dryRun=Some", cm("c"))
    assert r.status == 422
    details = r.json()["details"]
    assert (details["group"], details["kind"]) == ("meta.k8s.io", "CreateOptions")
    assert [c["field"] for c in details["causes"]] == ["fieldManager", "dryRun"]
    await client.request("POST", CMS, cm("c"))
    r = await client.request(
        "PATCH", f"{CMS}/c?force=true", {"data": {}}, content_type="application/merge-patch+json"
    )
    assert r.status == 422 and r.json()["details"]["kind"] == "PatchOptions"
    r = await client.get(f"{CMS}?resourceVersion=0&resourceVersionMatch=Exact")
    assert r.status == 422 and r.json()["details"]["kind"] == "ListOptions"
    r = await client.get(f"{CMS}?resourceVersion=abc")
    assert r.status == 400


async def test_bodies_by_media_type(client: EmuClient) -> None:
    r = await client.request("POST", CMS, b"name: c", content_type="text/plain")
    assert r.status == 415 and r.json()["reason"] == "UnsupportedMediaType"
    yaml_body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  a: b\n"
    r = await client.request("POST", CMS, yaml_body, content_type="application/yaml")
    assert r.status == 201 and r.json()["data"] == {"a": "b"}


async def test_aggregated_discovery(client: EmuClient) -> None:
    r = await client.get("/apis", headers={"Accept": f"{AGGREGATED},application/json"})
    assert r.headers["content-type"] == AGGREGATED
    groups = {g["metadata"]["name"]: g for g in r.json()["items"]}
    storage = {res["resource"] for res in groups["storage.k8s.io"]["versions"][0]["resources"]}
    assert {"storageclasses", "csidrivers", "csinodes"} <= storage
    core = (await client.get("/api", headers={"Accept": AGGREGATED})).json()["items"][0]
    pods = next(x for x in core["versions"][0]["resources"] if x["resource"] == "pods")
    assert pods["scope"] == "Namespaced" and pods["responseKind"]["kind"] == "Pod"
    assert "status" in [s["subresource"] for s in pods["subresources"]]
    legacy = await client.get("/apis")
    assert legacy.json()["kind"] == "APIGroupList"
    v2beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    assert (await client.get("/apis", headers={"Accept": v2beta1})).status == 406


async def test_custom_resource_watch_cache_starts_with_its_crd(
    client: EmuClient, emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    before = emu.store.rv
    await with_crd(emu)
    async with client.watch(f"{WIDGETS}?watch=1&resourceVersion={before}") as w:
        event = await w.next()
    assert event is not None and event["type"] == "ERROR"
    assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")


async def test_hpa_is_served_in_autoscaling_v1_and_v2(client: EmuClient) -> None:
    v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
    v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}
    body = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h"},
        "spec": {"scaleTargetRef": target, "maxReplicas": 4, "targetCPUUtilizationPercentage": 70},
    }
    assert (await client.request("POST", v1, body)).status == 201
    stored = (await client.get(f"{v2}/h")).json()
    assert stored["apiVersion"] == "autoscaling/v2" and stored["spec"]["minReplicas"] == 1
    cpu = stored["spec"]["metrics"][0]["resource"]
    assert (cpu["name"], cpu["target"]["averageUtilization"]) == ("cpu", 70)
    # A metric v1 cannot say travels in an annotation, and comes back whole.
    memory = {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}
    patch = {"spec": {"metrics": [{"type": "Resource", "resource": memory}]}}
    r = await client.request("PATCH", f"{v2}/h", patch, content_type="application/merge-patch+json")
    assert r.status == 200
    old = (await client.get(f"{v1}/h")).json()
    assert "targetCPUUtilizationPercentage" not in old["spec"]
    assert "memory" in old["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
    r = await client.request(
        "PATCH",
        f"{v1}/h",
        {"spec": {"maxReplicas": 6}},
        content_type="application/merge-patch+json",
    )
    again = (await client.get(f"{v2}/h")).json()
    assert again["spec"]["maxReplicas"] == 6
    assert again["spec"]["metrics"] == [{"type": "Resource", "resource": memory}]
    assert "annotations" not in again["metadata"]
