"""The RBAC proof's scenario: ``kubetrio run`` as a process, under a ServiceAccount's token only,
through a machine lifecycle, a drain with evictions, node deletion, storage node-delete and GC,
and leader election — then the emulator's audit log says which rules allowed what.

The manager is a separate process on the real clock (as in a cluster), so the emulator runs on
the real clock too and every wait here is on a condition of the emulator's store, woken by its
changes, with a generous bound only to fail instead of hanging.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
import yaml

from kubetrio.api.machine import PHASE_RUNNING
from kubetrio.emulator import Emulator
from kubetrio.emulator.auth.access import DECISION_ANNOTATION, RULE_ANNOTATION
from kubetrio.runtime.gen.rbac import PolicyRule
from kubetrio.sim.cloud import SimulatedCloud
from kubetrio.sim.storage import SimulatedStorage
from tests.helpers.machines import MACHINE_API, class_secret_doc, machine_class_doc
from tests.helpers.soak import objects

NAMESPACE = "kubetrio-system"
SERVICE_ACCOUNT = "kubetrio-controller-manager"
SA_USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
REPO = Path(__file__).resolve().parents[2]
WITHIN = 120.0  # a bound on each step, only so a broken run fails instead of hanging


async def until(emu: Emulator, condition: Callable[[], bool], what: str) -> None:
    """Until ``condition`` holds, re-checked after every change to the emulator's store."""
    changed = trio.Event()

    def wake(_rt: Any, _ev: Any) -> None:
        changed.set()

    unsubscribe = emu.store.subscribe(wake)
    try:
        with trio.fail_after(WITHIN):
            while not condition():
                await changed.wait()
                changed = trio.Event()
    except trio.TooSlowError:
        raise AssertionError(f"never happened: {what}") from None
    finally:
        unsubscribe()


async def storage_until(
    storage: SimulatedStorage, condition: Callable[[], bool], what: str
) -> None:
    """Until ``condition`` holds, re-checked after every change at the storage service."""
    try:
        with trio.fail_after(WITHIN):
            await storage.wait_for(condition)
    except trio.TooSlowError:
        raise AssertionError(f"never happened: {what}") from None


def sa_kubeconfig(path: Path, server: str, token: str) -> Path:
    """A kubeconfig holding nothing but the ServiceAccount's token."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "emu", "cluster": {"server": server}}],
        "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "emu", "user": SERVICE_ACCOUNT}}],
        "current-context": "sa",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@asynccontextmanager
async def manager_process(
    kubeconfig: Path, log: Path, *extra: str, env: dict[str, str] | None = None
) -> AsyncIterator[trio.Process]:
    """``kubetrio run`` with ``kubeconfig``; stopped with SIGTERM (gracefully) on exit."""
    command = [
        sys.executable,
        "-m",
        "kubetrio.cmd.main",
        "run",
        "--kubeconfig",
        str(kubeconfig),
        "--metrics-bind-address",
        "127.0.0.1:0",
        "--health-probe-bind-address",
        "127.0.0.1:0",
        *extra,
    ]
    with log.open("wb") as out:
        async with trio.open_nursery() as nursery:
            process: trio.Process = await nursery.start(
                functools.partial(
                    trio.run_process,
                    command,
                    check=False,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
            )
            try:
                yield process
            finally:
                process.terminate()
                with trio.fail_after(60):  # beyond the 30 s grace period
                    await process.wait()


# -- the scenario's objects


def deployment(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "MachineDeployment",
        "metadata": {"name": "pool", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"name": "pool"}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            },
            "template": {
                "metadata": {"labels": {"name": "pool"}},
                "spec": {"class": {"kind": "MachineClass", "name": "small"}},
            },
        },
    }


def workload(replicas: int) -> list[dict[str, Any]]:
    """Pods the drain evicts, under a budget; and one with a CSI volume, whose attachment a
    forced deletion removes."""
    template: dict[str, Any] = {"terminationGracePeriodSeconds": 1}
    container = {"name": "c", "image": "busybox"}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {**template, "containers": [container]},
                },
            },
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"maxUnavailable": 2, "selector": {"matchLabels": {"app": "web"}}},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "sim-csi",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {
                        **template,
                        "containers": [container],
                        "volumes": [
                            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
                        ],
                    },
                },
            },
        },
    ]


# -- what the audit log says


@dataclass
class Usage:
    """The ServiceAccount's requests as the audit log recorded them."""

    requests: int = 0
    denied: list[dict[str, Any]] = field(default_factory=list)
    # (role, rule index) -> atoms (apiGroup, resource, verb) that rule allowed
    by_rule: dict[tuple[str, int], set[tuple[str, str, str]]] = field(default_factory=dict)
    atoms: set[tuple[str, str, str]] = field(default_factory=set)  # every allowed atom

    def used(self, role: str, index: int) -> set[tuple[str, str, str]]:
        return self.by_rule.get((role, index), set())


def atom_of(event: dict[str, Any]) -> tuple[str, str, str]:
    ref = event.get("objectRef") or {}
    if not ref.get("resource"):
        return ("", event["requestURI"].split("?")[0], event["verb"])
    resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
    return (ref.get("apiGroup", ""), resource, event["verb"])


def read_usage(audit: Path, user: str = SA_USER) -> Usage:
    usage = Usage()
    for line in audit.read_text().splitlines():
        event = json.loads(line)
        if event.get("user", {}).get("username") != user:
            continue
        usage.requests += 1
        annotations = event.get("annotations", {})
        if annotations.get(DECISION_ANNOTATION) != "allow":
            usage.denied.append(event)
            continue
        atom = atom_of(event)
        usage.atoms.add(atom)
        if RULE_ANNOTATION in annotations:
            role, _, index = annotations[RULE_ANNOTATION].rpartition("#")
            usage.by_rule.setdefault((role, int(index)), set()).add(atom)
    return usage


@dataclass
class Coverage:
    """Shipped rules and atoms against the ones the run used."""

    rules: int
    rules_used: int
    atoms: int
    atoms_used: int
    unused: list[str]


def _listed_by_watch(atom: tuple[str, str, str], seen: set[tuple[str, str, str]]) -> bool:
    """A ``list`` the run never made is still needed where it made the ``watch``: informers
    sync by streaming list (a watch, which needs only ``watch``), and a server without
    streaming lists makes them LIST instead."""
    group, resource, verb = atom
    return verb == "list" and (group, resource, "watch") in seen


def coverage(usage: Usage, shipped: Iterable[tuple[str, list[PolicyRule]]]) -> Coverage:
    rules = rules_used = atoms = atoms_used = 0
    unused: list[str] = []
    for role, role_rules in shipped:
        for index, r in enumerate(role_rules):
            rules += 1
            seen = usage.used(role, index)
            rules_used += bool(seen)
            for atom in sorted(r.atoms()):
                atoms += 1
                if atom in seen or _listed_by_watch(atom, seen):
                    atoms_used += 1
                else:
                    unused.append(f"{role}#{index} {atom}")
    return Coverage(rules, rules_used, atoms, atoms_used, unused)


# -- the scenario


@dataclass
class ScenarioFigures:
    seconds: float = 0.0
    machines_running: int = 0
    evicted: int = 0  # evictions the emulator answered
    attachments_deleted: int = 0  # VolumeAttachments a client deleted


def _machines(emu: Emulator) -> list[dict[str, Any]]:
    return objects(emu, "machines", "machine.sapcloud.io", "default")


def _set_replicas(emu: Emulator, replicas: int) -> None:
    pool = emu.get(MACHINE_API, "MachineDeployment", "pool", "default")
    assert pool is not None
    pool["spec"]["replicas"] = replicas
    emu.update(pool)


def _running_pods(emu: Emulator) -> int:
    return sum(
        1
        for pod in objects(emu, "pods", ns="default")
        if pod["spec"].get("nodeName") and pod.get("status", {}).get("phase") == "Running"
    )


async def lifecycle(emu: Emulator, storage: SimulatedStorage) -> ScenarioFigures:
    """With a manager running: two machines up, a workload on them, a scale-down that drains
    one (evictions under a budget) and deletes it, its node and its storage node; then the
    other force-deleted (pods deleted, its volume's attachment removed), and the deployment
    deleted."""
    figures = ScenarioFigures()
    started = trio.current_time()
    # The first machine creations fail alike: the MachineSet's repeated FailedCreate Event is
    # patched (its count) rather than created again, so the role's events/patch is needed.
    emu.faults.add(verb="create", resource="machines", status=500, message="injected", count=8)
    emu.create(class_secret_doc())
    emu.create(machine_class_doc())
    emu.create(deployment(2))

    def running() -> list[dict[str, Any]]:
        return [
            m
            for m in _machines(emu)
            if (m.get("status", {}).get("currentStatus") or {}).get("phase") == PHASE_RUNNING
        ]

    await until(emu, lambda: len(running()) == 2, "two machines Running")
    figures.machines_running = len(running())
    nodes = sorted(m["status"]["node"] for m in running())
    await storage_until(
        storage,
        lambda: all(storage.node(n) is not None for n in nodes),
        "the storage service registered both nodes",
    )
    for doc in workload(4):
        emu.create(doc)
    await until(emu, lambda: _running_pods(emu) == 5, "the workload running")
    evictions = emu.counters.get("create", "pods", "eviction")

    # Scale down: one machine drained (evictions under the budget) and deleted with its VM,
    # node and storage node.
    _set_replicas(emu, 1)
    await until(
        emu,
        lambda: len(objects(emu, "nodes")) == 1 and len(_machines(emu)) == 1,
        "one machine and node left",
    )
    gone = next(n for n in nodes if emu.get("v1", "Node", n) is None)
    await storage_until(storage, lambda: storage.node(gone) is None, "its storage node deleted")
    figures.evicted = emu.counters.get("create", "pods", "eviction") - evictions
    await until(emu, lambda: _running_pods(emu) == 5, "the workload moved over")

    # The last machine force-deleted: its pods deleted rather than evicted, the volume's
    # attachment (kept by a slow detach) deleted by the controller.
    [name] = [m["metadata"]["name"] for m in _machines(emu)]
    last = emu.get(MACHINE_API, "Machine", name, "default")
    assert last is not None
    last["metadata"].setdefault("labels", {})["force-deletion"] = "True"
    emu.update(last)
    attachments = emu.counters.get("delete", "volumeattachments")
    _set_replicas(emu, 0)
    await until(
        emu,
        lambda: not _machines(emu) and not objects(emu, "nodes"),
        "every machine and node gone",
    )
    figures.attachments_deleted = emu.counters.get("delete", "volumeattachments") - attachments
    emu.delete(MACHINE_API, "MachineDeployment", "pool", "default")
    await until(
        emu,
        lambda: (
            not objects(emu, "machinedeployments", "machine.sapcloud.io", "default")
            and not objects(emu, "machinesets", "machine.sapcloud.io", "default")
        ),
        "the deployment and its sets gone",
    )
    figures.seconds = trio.current_time() - started
    return figures


STORAGE_ARGS = ("--node-delete-gc-delay", "1s")


def manager_args(emu: Emulator, storage: SimulatedStorage, *controllers: str) -> list[str]:
    return [
        *(["--controllers", ",".join(controllers)] if controllers else []),
        "--leader-elect",
        "--leader-election-namespace",
        NAMESPACE,
        "--sim-cloud-url",
        emu.extension(SimulatedCloud).url,
        "--storage-backend-url",
        storage.url,
        *STORAGE_ARGS,
    ]
