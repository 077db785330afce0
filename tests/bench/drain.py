"""Node drain: kubetrio's ``Drainer`` against ``kubectl drain`` on the simulated cluster.

Servers: the emulator with the simulated cluster for (a) and (b); the emulator and a real
kube-apiserver side by side for (c), a node of pods under PodDisruptionBudgets.

Everything runs on the real clock: the emulator (with ``ClusterSimulation``: kubelet,
scheduler, ReplicaSet/StatefulSet controllers, CSI attach/detach) and kubetrio's informer cache
and drain in this process's trio run, kubectl 1.33 as a child process against the same
emulator.

(a) Three identical nodes, each with N pods (default 100) of a ReplicaSet pinned to it by a
    nodeSelector, no volumes, ``terminationGracePeriodSeconds: 1`` and ``grace_factor=1.0``.
    After the pods run, each node gets a spare node in its own group, so replacements of
    evicted pods land there and never on another drained node. Node A is drained by
    ``Drainer.drain(A, DrainOptions())`` with the default ``Client`` (20 qps / burst 30); node
    A' the same way with a client at **kubectl's limits** (``Client(qps=5, burst=10)``,
    client-go's defaults, which kubectl drain uses and offers no flag to change:
    ``--kube-api-qps`` is not a kubectl flag, so the honest equal footing is ours lowered to
    theirs); node B by ``kubectl drain B --ignore-daemonsets --delete-emptydir-data --force
    --timeout=120s``. Per drain: wall time, and API requests per pod from ``emu.counters``
    (reset just before the drain, read just after it; divided by N). Requests are reported
    twice: during the drain only, and **all** a standalone drain makes: kubetrio's informer
    cache LISTs and WATCHes every kind it reads once before its drains (counted from the
    emulator's counters while it syncs, and added to each of its drains), kubectl's own LIST
    and GETs fall inside its window; discovery (kubectl's is warmed with a ``kubectl get
    nodes`` beforehand; kubetrio makes none) is logged per User-Agent and added to "all".
(b) One node with P pods (default 10) of a Parallel StatefulSet whose claims are exclusive
    ``sim-csi`` volumes, and a spare node for their replacements; ``attach_delay`` and
    ``detach_delay`` 0.5 s, grace 1 s. kubetrio drains it (volume pods go one at a time, each
    waiting for its volume to detach and re-attach elsewhere). The floor the simulated cluster
    imposes is the sum over pods of grace x grace_factor + detach_delay + attach_delay: the
    pod's termination, then the detach the attach/detach controller starts once the pod is
    gone, then the attach on the spare node, which cannot start before the detach finished
    (single-attach volumes). The replacement's ``pod_start_delay`` is not on the path (the
    drain waits for the attachment, not for the pod to run) and the StatefulSet is Parallel so
    no replacement waits for a lower ordinal to be Ready.

(c) **Both servers**, the emulator and a real kube-apiserver (etcd + kube-apiserver and
    kube-controller-manager's ``disruption`` controller, from ``KUBEBUILDER_ASSETS``,
    ``tests/bench/realserver.py``), the same work in the same run: a node of ``--xs-pods`` pods
    (default 100) bound to it, owned by ReplicaSets, Running and Ready, with one
    PodDisruptionBudget ``minAvailable: 1`` per 10 pods (each group has one more pod on a spare
    node, so a budget never blocks the drain but every eviction is checked against it and
    counted in its status); ``Drainer.drain`` with the default client and ``DrainOptions()``.
    There is no kubelet on the real server (nor a scheduler or ReplicaSet controller; the
    emulator runs only its disruption controller, ``SIM_PDB_ONLY``, in a process of its own):
    **the benchmark acts as the kubelet**, deleting with grace 0 each pod whose deletion began
    (``deletionTimestamp`` set), on both servers alike; no replacements are made. Compared side
    by side and as real/emulator: the drain's wall time and its requests per pod, counted by the
    drainer's own client (``rest_client_requests_total``, so the same count on both servers),
    and its informers' sync LISTs. kubectl is not run here; (a) compares it on the emulator.

Why both rate limits: kubectl drain polls each evicted pod until it is gone while kubetrio's
waits read its cache, so requests per pod compare the two designs; wall time at unequal client
rate limits mostly compares the limits, which the run at kubectl's limits separates out. What
it measured, when and on what machine: ``docs/performance.md``.

``python tests/bench/drain.py [--pods N] [--pv-pods P]``; last line ``RESULT {json}``, a ratio
line with pass/miss per target before it. CI size: ``--pods 20 --pv-pods 2 --xs-pods 20``
(most of its time is the serial volume drain's own floor and starting the real server).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/drain.py``: keep this folder from shadowing stdlib modules.
# Its helpers (realserver.py) still import, from the end of the path.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import argparse
import json
import math
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import trio
from prometheus_client import CollectorRegistry
from realserver import SHARED, available, real_server

from kubetrio.api.core import PersistentVolume
from kubetrio.controllers.machine.drain.cache import DrainCache
from kubetrio.controllers.machine.drain.drain import Drainer, DrainOptions, DrainResult
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.changes import InformerChanges
from kubetrio.runtime.cache.informercache import InformerCache
from kubetrio.runtime.client.typed import Client
from kubetrio.sim import serve_world
from kubetrio.sim.cluster import SIM_CSI_DRIVER, ClusterSimulation

NS = "default"
GRACE_S = 1
SIM_PLAIN = ClusterSimulation(pod_start_delay=0.0, grace_factor=1.0)
SIM_PV = ClusterSimulation(
    pod_start_delay=0.2, grace_factor=1.0, attach_delay=0.5, detach_delay=0.5
)
SETUP_TIMEOUT = 120.0


def find_kubectl() -> str | None:
    """$KUBECTL, else the 1.33 binary beside the kubectl on PATH (``tests/helpers/kube.py``)."""
    env = os.environ.get("KUBECTL")
    if env:
        return env if Path(env).exists() else None
    which = shutil.which("kubectl")
    if which is None:
        return None
    candidate = Path(os.path.realpath(which)).parent / "kubectl.1.33"
    return str(candidate) if candidate.exists() else None


async def sim_volume_ids(specs: Sequence[PersistentVolume]) -> Mapping[str, str]:
    return {
        pv.name: pv.spec.csi.volume_handle
        for pv in specs
        if pv.spec.csi is not None and pv.spec.csi.driver == SIM_CSI_DRIVER
    }


# --------------------------------------------------------------------------- objects


def node(name: str, group: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "bench.kubetrio.io/group": group},
        },
    }


def pod_spec(group: str) -> dict[str, Any]:
    return {
        "terminationGracePeriodSeconds": GRACE_S,
        "nodeSelector": {"bench.kubetrio.io/group": group},
        "containers": [{"name": "c", "image": "web"}],
    }


def replicaset(name: str, replicas: int, group: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec(group)},
        },
    }


def statefulset(name: str, replicas: int, group: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec(group)},
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "storageClassName": "sim-csi",
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }


# --------------------------------------------------------------------------- measuring


@dataclass
class HttpLog:
    """Every HTTP request the emulator serves (discovery included), by User-Agent."""

    entries: list[tuple[str, str, str]]  # (agent, method, path)

    @classmethod
    def install(cls, emu: Emulator) -> HttpLog:
        log = cls([])
        resolve = emu.router.resolve

        def logging_resolve(path: str) -> Any:
            handler = resolve(path)

            async def logged(req: Any) -> Any:
                agent = req.header("user-agent", "?").split("/", 1)[0]
                log.entries.append((agent, req.method, req.path))
                return await handler(req)

            return logged

        emu.router.resolve = logging_resolve  # type: ignore[method-assign]
        return log

    def reset(self) -> None:
        self.entries.clear()

    def by_agent(self) -> dict[str, int]:
        return dict(Counter(agent for agent, _, _ in self.entries))

    def discovery(self) -> int:
        return sum(1 for _, _, path in self.entries if _is_discovery(path))


def _is_discovery(path: str) -> bool:
    parts = [p for p in path.split("/") if p]
    return (parts[:1] == ["api"] and len(parts) <= 2) or (parts[:1] == ["apis"] and len(parts) <= 3)


@dataclass
class DrainRun:
    wall_s: float
    requests: int
    counters: dict[str, int]
    http_by_agent: dict[str, int]
    discovery: int

    def per_pod(self, pods: int) -> float:
        return self.requests / pods


def snapshot(emu: Emulator, http: HttpLog, wall: float) -> DrainRun:
    return DrainRun(
        wall_s=wall,
        requests=emu.counters.total(),
        counters=emu.counters.snapshot(),
        http_by_agent=http.by_agent(),
        discovery=http.discovery(),
    )


@asynccontextmanager
async def drain_setup(emu: Emulator) -> AsyncIterator[Drainer]:
    client = Client.from_kubeconfig(str(emu.kubeconfig_path))
    cache = InformerCache(client)
    view = DrainCache.from_cache(cache)
    async with trio.open_nursery() as nursery:
        await nursery.start(cache.run)
        await cache.wait_for_sync()
        # Every informer's WATCH is open too (a LIST is followed by its WATCH at once); the
        # counters have no change event to wait on, and this is a benchmark's set-up.
        while any(  # noqa: ASYNC110
            emu.counters.get("watch", key.split(" ", 1)[1]) == 0
            for key in emu.counters.snapshot()
            if key.startswith("list ")
        ):
            await trio.sleep(0.01)
        yield Drainer(client, view, sim_volume_ids)
        nursery.cancel_scope.cancel()


async def wait_for(d: Drainer, what: str, condition: Callable[[], bool]) -> None:
    deadline = trio.current_time() + SETUP_TIMEOUT
    if not await d.cache.pod_changes.wait_until(condition, deadline):
        raise SystemExit(f"setup: timed out waiting for {what}")


def running_on(d: Drainer, prefix: str) -> Counter[str]:
    """Running, not deleting pods named ``prefix*``, per node."""
    return Counter(
        p.spec.node_name or ""
        for p in d.cache.pods.list(NS)
        if p.name.startswith(prefix) and p.status.phase == "Running" and not p.deleting
    )


def on_node(d: Drainer, prefix: str, node_name: str) -> int:
    return sum(
        1
        for p in d.cache.pods_on(node_name)
        if p.name.startswith(prefix) and p.status.phase not in ("Succeeded", "Failed")
    )


def check(result: DrainResult, who: str) -> None:
    if not result.succeeded:
        raise SystemExit(f"{who}: drain failed: {result.summary()}")


# --------------------------------------------------------------------------- (a)


# kubectl drain's client-side rate limit: client-go's defaults (rest.Config QPS 5, Burst 10).
KUBECTL_QPS, KUBECTL_BURST = 5.0, 10
GROUPS = (("node-kt", "kt"), ("node-kteq", "kteq"), ("node-kubectl", "kubectl"))


async def bench_plain(pods: int, kubectl: str, tmp: Path) -> dict[str, Any]:
    async with serve_world(simulate=SIM_PLAIN) as emu, drain_setup(emu) as d:
        # Only kubetrio's informers have talked to the emulator so far.
        informer_requests = emu.counters.snapshot()
        http = HttpLog.install(emu)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp),
            "KUBECONFIG": str(emu.kubeconfig_path),
            "KUBECACHEDIR": str(tmp / "kube-cache"),
        }
        for name, group in GROUPS:
            emu.create(node(name, group))
            emu.create(replicaset(f"web-{group}", pods, group))
        await wait_for(
            d,
            f"{pods} running pods on each node",
            lambda: all(running_on(d, f"web-{g}-")[name] == pods for name, g in GROUPS),
        )
        # Only now the spare nodes: the pods above stay where they are, their replacements
        # (each ReplicaSet's nodeSelector names its group) can only go to their group's spare.
        for _, group in GROUPS:
            emu.create(node(f"spare-{group}", group))
        await d.cache.node_changes.wait_until(
            lambda: all(
                (n := d.cache.nodes.get("", f"spare-{group}")) is not None
                and any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
                for _, group in GROUPS
            ),
            trio.current_time() + SETUP_TIMEOUT,
        )
        # Warm kubectl's discovery cache, as kubetrio's informers were synced.
        await run_kubectl(kubectl, env, "get", "nodes")
        await trio.sleep(2.0)  # the client's token bucket refills after the informers' LISTs

        # kubetrio
        emu.counters.reset()
        http.reset()
        started = time.perf_counter()
        result = await d.drain("node-kt", DrainOptions())
        kt = snapshot(emu, http, time.perf_counter() - started)
        check(result, "kubetrio")
        if len(result.pods) != pods:
            raise SystemExit(f"kubetrio drained {len(result.pods)} pods, expected {pods}")
        await wait_for(
            d,
            "kubetrio's replacements running on spare-kt",
            lambda: running_on(d, "web-kt-")["spare-kt"] == pods,
        )

        # kubetrio at kubectl's rate limits
        equal = Drainer(
            Client.from_kubeconfig(str(emu.kubeconfig_path), qps=KUBECTL_QPS, burst=KUBECTL_BURST),
            d.cache,
            sim_volume_ids,
        )
        emu.counters.reset()
        http.reset()
        started = time.perf_counter()
        result = await equal.drain("node-kteq", DrainOptions())
        kteq = snapshot(emu, http, time.perf_counter() - started)
        check(result, "kubetrio at kubectl's limits")
        if len(result.pods) != pods:
            raise SystemExit(f"kubetrio (equal limits) drained {len(result.pods)} pods of {pods}")
        await wait_for(
            d,
            "kubetrio's (equal limits) replacements running on spare-kteq",
            lambda: running_on(d, "web-kteq-")["spare-kteq"] == pods,
        )

        # kubectl
        emu.counters.reset()
        http.reset()
        started = time.perf_counter()
        out = await run_kubectl(
            kubectl,
            env,
            "drain",
            "node-kubectl",
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--force",
            "--timeout=120s",
        )
        kc = snapshot(emu, http, time.perf_counter() - started)
        evicted = out.count("evicted")
        if evicted != pods:
            raise SystemExit(f"kubectl evicted {evicted} pods, expected {pods}:\n{out}")
        await wait_for(
            d,
            "kubectl's replacements running on spare-kubectl",
            lambda: running_on(d, "web-kubectl-")["spare-kubectl"] == pods,
        )
        for node_name, group in GROUPS:
            left = on_node(d, f"web-{group}-", node_name)
            if left:
                raise SystemExit(f"{left} pods still on {node_name} after its drain")
            if any(running_on(d, f"web-{group}-")[other] for other, _ in GROUPS):
                raise SystemExit("a replacement landed on a drained node")
        return {"kt": kt, "kteq": kteq, "kubectl": kc, "informer": informer_requests}


async def run_kubectl(kubectl: str, env: dict[str, str], *args: str) -> str:
    with trio.fail_after(180):
        proc = await trio.run_process(
            [kubectl, *args], capture_stdout=True, capture_stderr=True, check=False, env=env
        )
    if proc.returncode != 0:
        raise SystemExit(
            f"kubectl {' '.join(args)} exited {proc.returncode}\n"
            f"stdout: {proc.stdout.decode()}\nstderr: {proc.stderr.decode()}"
        )
    return proc.stdout.decode() + proc.stderr.decode()


# --------------------------------------------------------------------------- (b)


async def bench_pv(pv_pods: int) -> dict[str, Any]:
    sim = SIM_PV
    async with serve_world(simulate=sim) as emu, drain_setup(emu) as d:
        emu.create(node("pv-victim", "pv"))
        emu.create(statefulset("db", pv_pods, "pv"))
        await wait_for(
            d,
            f"{pv_pods} running volume pods",
            lambda: running_on(d, "db-")["pv-victim"] == pv_pods,
        )
        await d.cache.attachment_changes.wait_until(
            lambda: sum(va.status.attached for va in d.cache.attachments.list()) == pv_pods,
            trio.current_time() + SETUP_TIMEOUT,
        )
        emu.create(node("pv-spare", "pv"))
        await d.cache.node_changes.wait_until(
            lambda: (
                (n := d.cache.nodes.get("", "pv-spare")) is not None
                and any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
            ),
            trio.current_time() + SETUP_TIMEOUT,
        )
        await trio.sleep(1.0)
        emu.counters.reset()
        started = time.perf_counter()
        result = await d.drain("pv-victim", DrainOptions())
        wall = time.perf_counter() - started
        check(result, "kubetrio (volumes)")
        if len(result.pods) != pv_pods:
            raise SystemExit(f"kubetrio drained {len(result.pods)} volume pods of {pv_pods}")
        for report in result.pods:
            if report.warnings or "reattach" not in report.phases:
                raise SystemExit(f"{report.pod}: not re-attached: {report.warnings}")
        phases: dict[str, float] = {}
        for report in result.pods:
            for phase, seconds in report.phases.items():
                phases[phase] = phases.get(phase, 0.0) + seconds
        per_pod = GRACE_S * sim.grace_factor + sim.detach_delay + sim.attach_delay
        return {
            "wall_s": wall,
            "floor_s": pv_pods * per_pod,
            "per_pod_floor_s": per_pod,
            "phase_sums_s": phases,
            "requests": emu.counters.total(),
            "counters": emu.counters.snapshot(),
        }


# --------------------------------------------------------------------------- (c) both servers

XS_NS = "drain"
XS_NODE, XS_SPARE = "xs-node", "xs-spare"
XS_GROUP = 10  # pods per PodDisruptionBudget
XS_SETUP_WRITERS = 8
# The emulator with nothing of the simulated cluster but its disruption controller: what a real
# control plane running kube-controller-manager's ``disruption`` controller has.
SIM_PDB_ONLY = ClusterSimulation(
    kubelet=False,
    scheduler=False,
    attach_detach=False,
    provisioner=False,
    replicasets=False,
    statefulsets=False,
    daemonsets=False,
    deployments=False,
    disruption=True,
    node_lifecycle=False,
)


def serve_emulator_child(kubeconfig: str) -> None:
    """``--serve-emulator``: the emulator with ``SIM_PDB_ONLY`` in a process of its own, as the
    real server has its own; prints ``url=...`` once it serves."""
    from kubetrio.emulator import EmulatorOptions

    async def serve() -> None:
        options = EmulatorOptions(kubeconfig_path=Path(kubeconfig))
        async with serve_world(options=options, simulate=SIM_PDB_ONLY) as emu:
            print(f"url={emu.url}", flush=True)
            await trio.sleep_forever()

    trio.run(serve)


def xs_pod(name: str, node_name: str, group: int, owner_uid: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": XS_NS,
            "labels": {"app": "xs", "group": str(group)},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"xs-{group}",
                    "uid": owner_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "nodeName": node_name,
            "terminationGracePeriodSeconds": 30,
            "containers": [{"name": "c", "image": "web"}],
        },
    }


RUNNING_READY = {
    "status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
    }
}


async def xs_setup(client: Client, pods: int) -> None:
    """The nodes, a ReplicaSet per group (the pods' controller: a drain refuses unmanaged
    pods), ``pods`` pods bound to ``XS_NODE`` and one anchor per group on ``XS_SPARE``, all
    Running and Ready, and per group a PodDisruptionBudget ``minAvailable: 1``."""
    from kubetrio.api.core import Namespace, Pod
    from kubetrio.api.core import Node as NodeKind

    await client.create(Namespace, {"metadata": {"name": XS_NS}})
    for name in (XS_NODE, XS_SPARE):
        await client.create(NodeKind, node(name, "xs"))
    groups = -(-pods // XS_GROUP)
    owners: dict[int, str] = {}
    for g in range(groups):
        labels = {"app": "xs", "group": str(g)}
        rs = replicaset(f"xs-{g}", 0, "xs")
        rs["metadata"]["namespace"] = XS_NS
        rs["spec"]["selector"] = {"matchLabels": labels}
        rs["spec"]["template"]["metadata"]["labels"] = labels
        answer = await client.request(
            "POST", f"/apis/apps/v1/namespaces/{XS_NS}/replicasets", body=json.dumps(rs).encode()
        )
        owners[g] = json.loads(answer)["metadata"]["uid"]
    todo = iter(
        [(f"p-{i}", XS_NODE, i // XS_GROUP) for i in range(pods)]
        + [(f"anchor-{g}", XS_SPARE, g) for g in range(groups)]
    )

    async def writer() -> None:
        for name, node_name, g in todo:
            await client.create(Pod, xs_pod(name, node_name, g, owners[g]))
            await client.patch(Pod, name, RUNNING_READY, namespace=XS_NS, subresource="status")

    async with trio.open_nursery() as nursery:
        for _ in range(XS_SETUP_WRITERS):
            nursery.start_soon(writer)
    for g in range(groups):
        pdb = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": f"xs-{g}", "namespace": XS_NS},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"group": str(g)}}},
        }
        await client.request(
            "POST",
            f"/apis/policy/v1/namespaces/{XS_NS}/poddisruptionbudgets",
            body=json.dumps(pdb).encode(),
        )


async def act_as_kubelet(client: Client, ready: trio.Event) -> None:
    """The kubelet's one job here: a pod whose deletion began (``deletionTimestamp`` set) is
    deleted with grace 0, as a kubelet does once its containers stopped. Runs until cancelled."""
    from kubetrio.api.core import Pod
    from kubetrio.runtime.cache.informer import EventHandler, Informer

    send, receive = trio.open_memory_channel[str](math.inf)
    informer = Informer(client, Pod, namespace=XS_NS)

    def deleting(pod: Pod) -> None:
        if pod.metadata.deletion_timestamp is not None:
            send.send_nowait(pod.name)

    informer.add_handler(
        EventHandler(on_add=lambda pod, _: deleting(pod), on_update=lambda _, pod: deleting(pod))
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(informer.run)
        await informer.wait_for_sync()
        ready.set()
        async for name in receive:
            nursery.start_soon(
                partial(
                    client.delete,
                    Pod,
                    name,
                    namespace=XS_NS,
                    grace_period_seconds=0,
                    missing_ok=True,
                )
            )


def requests_made(registry: CollectorRegistry) -> Counter[str]:
    """The client's requests so far, by method (its ``rest_client_requests_total``)."""
    made: Counter[str] = Counter()
    for family in registry.collect():
        for sample in family.samples:
            if sample.name == "rest_client_requests_total":
                made[sample.labels["method"]] += int(sample.value)
    return made


async def xs_drain(kubeconfig: str, pods: int) -> dict[str, Any]:
    """Set up on the server ``kubeconfig`` names, then drain ``XS_NODE`` with the default
    client and ``DrainOptions()``; wall time and the drainer's requests."""
    from kubetrio.api.core import Pod
    from kubetrio.api.policy import PodDisruptionBudget

    harness = Client.from_kubeconfig(kubeconfig, qps=0)
    await xs_setup(harness, pods)
    registry = CollectorRegistry()
    client = Client.from_kubeconfig(kubeconfig, registry=registry)
    cache = InformerCache(client)
    view = DrainCache.from_cache(cache)
    budgets = cache.informer(PodDisruptionBudget)
    groups = -(-pods // XS_GROUP)
    async with trio.open_nursery() as nursery:
        kubelet_ready = trio.Event()
        nursery.start_soon(act_as_kubelet, harness, kubelet_ready)
        await nursery.start(cache.run)
        await cache.wait_for_sync()
        await kubelet_ready.wait()
        deadline = trio.current_time() + SETUP_TIMEOUT

        def budgets_computed() -> bool:
            found = [b for b in budgets.lister.list(XS_NS) if b.status is not None]
            return len(found) == groups and all(
                b.status.observed_generation >= b.metadata.generation
                and b.status.current_healthy == b.status.expected_pods
                for b in found
            )

        if not await InformerChanges.of(budgets).wait_until(budgets_computed, deadline):
            raise SystemExit("setup: the disruption budgets' status was not computed in time")
        synced = requests_made(registry)
        drainer = Drainer(client, view, sim_volume_ids)
        started = time.perf_counter()
        result = await drainer.drain(XS_NODE, DrainOptions())
        wall = time.perf_counter() - started
        made = requests_made(registry) - synced
        check(result, "kubetrio (both servers)")
        if len(result.pods) != pods or view.pods_on(XS_NODE):
            raise SystemExit(f"drained {len(result.pods)} of {pods}; left {view.pods_on(XS_NODE)}")
        # Leave no pods behind for the next benchmark on a shared server (no kubelet: grace 0).
        for g in range(groups):
            await harness.delete(Pod, f"anchor-{g}", namespace=XS_NS, grace_period_seconds=0)
        nursery.cancel_scope.cancel()
    phases: Counter[str] = Counter()
    for report in result.pods:
        phases.update(report.phases)
    return {
        "phases_s": {phase: round(seconds, 2) for phase, seconds in phases.items()},
        "wall_s": wall,
        "requests": sum(made.values()),
        "by_method": dict(made),
        "sync_requests": sum(synced.values()),
    }


def xs_emulator(pods: int) -> dict[str, Any]:
    """``xs_drain`` against a fresh ``--serve-emulator`` child."""
    with tempfile.TemporaryDirectory(prefix="kubetrio-bench-drain-xs-") as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        command = [sys.executable, __file__, "--serve-emulator", kubeconfig]
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
            try:
                assert proc.stdout is not None
                line = proc.stdout.readline().strip()
                if not line.startswith("url="):
                    raise SystemExit(f"the emulator did not start: {line!r}")
                return trio.run(xs_drain, kubeconfig, pods)
            finally:
                proc.terminate()
                proc.wait(30)


def both_servers(pods: int) -> dict[str, dict[str, Any]]:
    out = {"emulator": xs_emulator(pods)}
    with real_server() as real:
        if real is not None:
            out["real"] = trio.run(xs_drain, str(real), pods)
    return out


# --------------------------------------------------------------------------- main


def verdict(ok: bool) -> str:
    return "pass" if ok else "MISS"


async def main(args: argparse.Namespace) -> dict[str, Any]:
    kubectl = find_kubectl()
    if kubectl is None:
        raise SystemExit("kubectl 1.33 not found: set $KUBECTL (see tests/helpers/kube.py)")
    pods = args.pods
    with tempfile.TemporaryDirectory(prefix="kubetrio-bench-drain-") as tmpdir:
        plain = await bench_plain(pods, kubectl, Path(tmpdir))
    kt: DrainRun = plain["kt"]
    kteq: DrainRun = plain["kteq"]
    kc: DrainRun = plain["kubectl"]
    informer: dict[str, int] = plain["informer"]
    synced = sum(informer.values())
    print(f"(a) {pods} pods per node, grace {GRACE_S}s x {SIM_PLAIN.grace_factor}, no volumes")
    print("    'drain': requests from just before each drain to just after it; 'all': plus")
    print(f"    kubetrio's informer sync ({synced} LIST+WATCH: {informer}) and every")
    print("    discovery request (kubectl's discovery cache was warm).")
    runs = (("kubetrio", kt), (f"kubetrio {KUBECTL_QPS:g}/{KUBECTL_BURST}", kteq), ("kubectl", kc))
    all_requests: dict[str, int] = {}
    for label, run in runs:
        extra = synced if run is not kc else 0
        all_requests[label] = run.requests + run.discovery + extra
        print(
            f"  {label:>13}: {run.wall_s:6.2f} s  drain {run.requests:5d} requests "
            f"({run.per_pod(pods):.2f}/pod), all {all_requests[label]} "
            f"({all_requests[label] / pods:.2f}/pod)  {run.counters}"
        )
        print(
            f"{'':17}all HTTP incl. discovery by agent: {run.http_by_agent}"
            f" (discovery: {run.discovery})"
        )
    floor = (pods + 1) / pods
    polls = kc.counters.get("get pods", 0) / pods
    print(
        f"  kubetrio's floor: one eviction per pod + one cordon patch = {floor:.2f}/pod (its waits"
        " read the informer cache: no GETs). kubectl polls each evicted pod with GET until it"
        f" is gone ({polls:.2f} GETs/pod here: 1 s poll interval, throttled by client-go's"
        f" default 5 qps / burst 10), so <= 1/3 needs kubectl at >= {3 * floor:.2f}/pod."
    )
    pv = await bench_pv(args.pv_pods)
    phases = ", ".join(f"{k} {v:.2f}" for k, v in pv["phase_sums_s"].items())
    print(
        f"(b) {args.pv_pods} volume pods, grace {GRACE_S}s x {SIM_PV.grace_factor}, detach "
        f"{SIM_PV.detach_delay}s, attach {SIM_PV.attach_delay}s: {pv['wall_s']:.2f} s against "
        f"a floor of {pv['floor_s']:.2f} s ({args.pv_pods} x {pv['per_pod_floor_s']:.2f})"
    )
    print(f"    sum of per-pod phases (s): {phases}; requests {pv['counters']}")

    req_ratio = kt.per_pod(pods) / kc.per_pod(pods)
    all_ratio = all_requests["kubetrio"] / all_requests["kubectl"]
    wall_ratio = kt.wall_s / kc.wall_s
    equal_ratio = kteq.wall_s / kc.wall_s
    pv_ratio = pv["wall_s"] / pv["floor_s"]
    print(
        f"ratios: requests/pod kt/kubectl drain {req_ratio:.3f} (target <= 0.333: "
        f"{verdict(req_ratio <= 1 / 3)}), all {all_ratio:.3f}; wall kt/kubectl {wall_ratio:.2f} "
        f"(target <= 1: {verdict(wall_ratio <= 1.0)}), at equal rate limits "
        f"({KUBECTL_QPS:g} qps / burst {KUBECTL_BURST}) {equal_ratio:.2f}; pv wall/floor "
        f"{pv_ratio:.3f} (target <= 1.1: {verdict(pv_ratio <= 1.1)})"
    )
    result = {
        "kt_wall_s": round(kt.wall_s, 3),
        "kt_equal_limits_wall_s": round(kteq.wall_s, 3),
        "kubectl_wall_s": round(kc.wall_s, 3),
        "kt_requests_per_pod": round(kt.per_pod(pods), 3),
        "kubectl_requests_per_pod": round(kc.per_pod(pods), 3),
        "kt_all_requests": all_requests["kubetrio"],
        "kt_equal_limits_all_requests": all_requests[runs[1][0]],
        "kubectl_all_requests": all_requests["kubectl"],
        "wall_ratio": round(wall_ratio, 3),
        "equal_limits_wall_ratio": round(equal_ratio, 3),
        "all_requests_ratio": round(all_ratio, 3),
        "pv_wall_s": round(pv["wall_s"], 3),
        "pv_floor_s": round(pv["floor_s"], 3),
    }
    return result


XS_FIGURES = {
    "wall_s": "wall time (s)",
    "requests_per_pod": "drain requests per pod",
    "sync_requests": "informer sync requests",
}


def cross_server(pods: int, result: dict[str, Any]) -> None:
    """(c): run it, print both servers side by side, add the figures to ``result``."""
    started = time.monotonic()
    xs = both_servers(pods)
    for figures in xs.values():
        figures["requests_per_pod"] = figures["requests"] / pods
    print(
        f"(c) {pods} pods with PodDisruptionBudgets (minAvailable 1 per {XS_GROUP}), the harness "
        f"acting as the kubelet (grace 0 once deletion began), {time.monotonic() - started:.0f} s:"
    )
    print(f"  {'':26}" + "".join(f"{server:>10}" for server in xs))
    for figure, label in XS_FIGURES.items():
        print(f"  {label:<26}" + "".join(f"{xs[server][figure]:10.2f}" for server in xs))
        for server in xs:
            result[f"{server}_pdb_{figure}"] = round(xs[server][figure], 3)
    for server in xs:
        print(
            f"  {server}: drain requests by method {xs[server]['by_method']}, sum of per-pod "
            f"phases (s) {xs[server]['phases_s']}"
        )
    if "real" in xs:
        for figure in ("wall_s", "requests_per_pod"):
            over = xs["real"][figure] / xs["emulator"][figure]
            result[f"real_over_emulator_pdb_{figure}"] = round(over, 3)


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=100, help="pods per drained node in (a)")
    parser.add_argument("--pv-pods", type=int, default=10, help="volume pods in (b)")
    parser.add_argument(
        "--xs-pods", type=int, default=100, help="pods drained on both servers in (c) (0: none)"
    )
    parser.add_argument("--serve-emulator", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_emulator:
        serve_emulator_child(args.serve_emulator)
        return
    if args.xs_pods and not os.environ.get(SHARED):
        available()  # under CI, fail before the work
    result = trio.run(main, args)
    if args.xs_pods:
        cross_server(args.xs_pods, result)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    cli()
