"""The drain's planning steps: pod selection, volume accounting, budget checks, selectors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import pytest

from kubetrio.api.core import PersistentVolume, PersistentVolumeClaim, Pod
from kubetrio.api.policy import LabelSelector, PodDisruptionBudget
from kubetrio.controllers.machine.drain.budgets import budgets_for, is_misconfigured
from kubetrio.controllers.machine.drain.selection import select_pods
from kubetrio.controllers.machine.drain.volumes import pods_with_volumes
from kubetrio.runtime.cache.store import Lister, Store, key_of
from kubetrio.runtime.util.labels import SelectorError, selector_matches


def decode(kind: Any, doc: dict[str, Any]) -> Any:
    return msgspec.json.decode(msgspec.json.encode(doc), type=kind)


def pod(
    name: str,
    *,
    owner: str | None = "ReplicaSet",
    phase: str = "Running",
    claims: Sequence[str] = (),
    empty_dir: bool = False,
    priority: int | None = None,
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> Pod:
    volumes: list[dict[str, Any]] = [
        {"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims
    ]
    volumes.append({"name": "token", "projected": {"sources": []}})
    if empty_dir:
        volumes.append({"name": "scratch", "emptyDir": {}})
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "annotations": dict(annotations or {}),
        "labels": dict(labels or {}),
    }
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner,
                "name": f"{name}-o",
                "uid": "u",
                "controller": True,
            }
        ]
    spec: dict[str, Any] = {"nodeName": "n1", "volumes": volumes}
    if priority is not None:
        spec["priority"] = priority
    return decode(Pod, {"metadata": meta, "spec": spec, "status": {"phase": phase}})


def lister(objects: Sequence[Any]) -> Lister[Any]:
    store: Store[Any] = Store()
    for obj in objects:
        store.put(key_of(obj), obj)
    return Lister(store)


def test_selection_follows_mcm_filters() -> None:
    pods = [
        pod("web"),
        pod("static", annotations={"kubernetes.io/config.mirror": "x"}),
        pod("agent", owner="DaemonSet"),
        pod("agent-done", owner="DaemonSet", phase="Succeeded"),
        pod("bare", owner=None),
        pod("cache", empty_dir=True),
        pod("job-done", owner=None, phase="Failed"),
    ]
    selection = select_pods(pods)
    assert [p.name for p in selection.remove] == ["agent-done", "bare", "cache", "job-done", "web"]
    assert {p.name: why for p, why in selection.skipped} == {
        "agent": "DaemonSet-managed (agent-o)",
        "static": "mirror pod (managed by the kubelet)",
    }
    assert selection.warnings == [
        "deleting pod default/bare: not managed by a controller",
        "deleting pod default/cache: its emptyDir data is lost",
    ]


def test_pod_view_keeps_only_actionable_volumes() -> None:
    assert [v.name for v in pod("x", claims=["data"], empty_dir=True).spec.volumes] == [
        "data",
        "scratch",
    ]


def claim(name: str, volume: str) -> PersistentVolumeClaim:
    return decode(
        PersistentVolumeClaim,
        {"metadata": {"name": name, "namespace": "default"}, "spec": {"volumeName": volume}},
    )


def volume(name: str, driver: str = "sim") -> PersistentVolume:
    return decode(
        PersistentVolume,
        {
            "metadata": {"name": name},
            "spec": {"csi": {"driver": driver, "volumeHandle": f"h-{name}"}},
        },
    )


async def test_volume_accounting_pairs_by_name_and_drops_shared_and_foreign() -> None:
    pods = [
        pod("a", claims=["c-a"], priority=1),
        pod("b", claims=["c-b1", "c-b2"], priority=10),
        pod("s1", claims=["c-shared"]),
        pod("s2", claims=["c-shared"]),
        pod("f", claims=["c-foreign"]),
        pod("u", claims=["c-unbound"]),
        pod("plain"),
    ]
    claims = lister(
        [
            claim("c-a", "pv-a"),
            claim("c-b1", "pv-b1"),
            claim("c-b2", "pv-b2"),
            claim("c-shared", "pv-shared"),
            claim("c-foreign", "pv-foreign"),
            claim("c-unbound", ""),
        ]
    )
    volumes = lister(
        [
            volume("pv-a"),
            volume("pv-b1"),
            volume("pv-b2"),
            volume("pv-shared"),
            volume("pv-foreign", driver="other"),
        ]
    )
    asked: list[list[str]] = []

    async def resolve(specs: Sequence[PersistentVolume]) -> Mapping[str, str]:
        asked.append([pv.name for pv in specs])
        # The driver answers in its own order and only for volumes it owns.
        owned = [pv for pv in specs if pv.spec.csi and pv.spec.csi.driver == "sim"]
        return {pv.name: f"vol-{pv.name}" for pv in reversed(owned)}

    with_volumes, without = await pods_with_volumes(pods, claims, volumes, resolve)
    assert asked == [["pv-a", "pv-b1", "pv-b2", "pv-foreign"]]
    assert [(e.pod.name, e.volumes) for e in with_volumes] == [
        ("b", (("pv-b1", "vol-pv-b1"), ("pv-b2", "vol-pv-b2"))),
        ("a", (("pv-a", "vol-pv-a"),)),
    ]
    assert sorted(p.name for p in without) == ["f", "plain", "s1", "s2", "u"]


def budget(selector: dict[str, Any] | None, **status: Any) -> PodDisruptionBudget:
    doc: dict[str, Any] = {
        "metadata": {"name": "pdb", "namespace": "default", "generation": 2},
        "spec": {},
        "status": {"observedGeneration": 2, **status},
    }
    if selector is not None:
        doc["spec"]["selector"] = selector
    return decode(PodDisruptionBudget, doc)


def test_misconfigured_budget_is_recognised() -> None:
    stuck = {"expectedPods": 2, "currentHealthy": 2, "disruptionsAllowed": 0}
    assert is_misconfigured(budget({}, **stuck))
    assert not is_misconfigured(budget({}, **{**stuck, "disruptionsAllowed": 1}))
    assert not is_misconfigured(budget({}, **{**stuck, "currentHealthy": 1}))
    assert not is_misconfigured(budget({}, **{**stuck, "expectedPods": 0}))
    assert not is_misconfigured(budget({}, **stuck, disruptedPods={"web-1": "t"}))
    unobserved = budget({}, **stuck)
    unobserved.status.observed_generation = 1
    assert not is_misconfigured(unobserved)


def test_budgets_for_a_pod_use_label_selectors() -> None:
    web = pod("web", labels={"app": "web", "tier": "front"})
    matching = budget({"matchLabels": {"app": "web"}})
    other = budget({"matchLabels": {"app": "db"}})
    other.metadata.name = "db"
    assert budgets_for(web, lister([matching, other])) == [matching]


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ({}, True),
        ({"matchLabels": {"app": "web"}}, True),
        ({"matchLabels": {"app": "db"}}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, False),
    ],
)
def test_label_selectors(selector: dict[str, Any], matches: bool) -> None:
    parsed = decode(LabelSelector, selector)
    assert selector_matches(parsed, {"app": "web", "tier": "front"}) is matches


def test_missing_selector_matches_nothing_and_bad_operator_is_named() -> None:
    assert not selector_matches(None, {"app": "web"})
    bad = decode(LabelSelector, {"matchExpressions": [{"key": "k", "operator": "Near"}]})
    with pytest.raises(SelectorError, match="'Near' for key 'k'"):
        selector_matches(bad, {"k": "v"})
