"""A machine soak: N machines created, a workload spread over their nodes, then every machine
deleted — once on a healthy API server and once with injected faults — on the caller's trio
clock, and what was left behind counted from the emulator's own store (not the controller's
cache, which could be as wrong as the controller).

Used by ``test_machine_soak.py`` (small, in the suite) and ``tests/bench/soak.py`` (larger).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from kubetrio.api.machine import PHASE_RUNNING
from kubetrio.controllers.machine.bootstrap import TOKEN_NAMESPACE
from kubetrio.controllers.machine.status import deletion_step
from kubetrio.emulator import Emulator, EmulatorOptions
from kubetrio.emulator.faults import FaultRule
from kubetrio.sim import serve_world
from kubetrio.sim.cluster import ClusterSimulation
from kubetrio.sim.cluster.nodelifecycle import ORPHAN_QUARANTINE
from tests.helpers.machines import (
    MACHINE_API,
    Harness,
    install_crds,
    machine_doc,
    machine_manager,
    seed_class,
)

FAST = ClusterSimulation(pod_start_delay=0.05, grace_factor=0.01)
BOOT_SECONDS = 10
PODS_PER_MACHINE = 2
WATCH_CUT_AFTER = 5.0  # every watch stream is cut after this many seconds (a flaky LB)


def fault_rules() -> list[FaultRule]:
    """A quarter of the API requests fail, across every kind of failure a real API
    server or the network in front of it produces; each rule rolls on its own (seeded)."""
    return [
        FaultRule(status=500, probability=0.08),
        FaultRule(status=503, probability=0.07),
        FaultRule(status=429, retry_after=1, probability=0.07),
        FaultRule(verb="patch", status=409, probability=0.12),
        FaultRule(verb="list", status=410, probability=0.05),
        FaultRule(verb="watch", status=410, probability=0.2),
        FaultRule(latency=0.5, probability=0.2),
        FaultRule(verb="watch", cut_watch_after=WATCH_CUT_AFTER),
    ]


def failure_probability(rules: list[FaultRule], verb: str, resource: str, sub: str) -> float:
    """The chance that ``rules`` answer one request with an injected status: each matching rule
    rolls on its own, and any status rule that hits fails the request (the first one names the
    status). The soak's rules match on the verb alone, so namespace and name play no part."""
    missed = 1.0
    for rule in rules:
        if rule.status is not None and rule.matches(verb, resource, sub, "", ""):
            missed *= 1.0 - rule.probability
    return 1.0 - missed


@dataclass
class SoakFigures:
    """What one soak run measured; seconds are on the run's trio clock."""

    machines: int
    faults: bool
    running: int = 0  # machines that reached Running
    completed: int = 0  # machines that were Running and then gone
    create_s: float = 0.0  # first create → last Running
    delete_s: float = 0.0  # first delete → last gone
    orphan_vms: int = 0  # VMs left at the simulated cloud
    stuck_finalizers: int = 0  # Machines left (deleting, held by a finalizer)
    tokens_left: int = 0  # bootstrap-token Secrets left in kube-system
    nodes_left: int = 0
    pods_on_gone_nodes: int = 0  # pods still bound to a Node that no longer exists
    requests: int = 0  # API requests (watches aside) the emulator served
    injected: dict[int, int] = field(default_factory=dict)  # failures answered, by status
    failed: int = 0  # of ``requests``, those answered with an injected failure
    # What the fault rules predict for the requests this run made (its own mix of verbs, which
    # varies from run to run): the mean of ``failed`` and its standard deviation. Each request
    # rolls afresh whatever came before, so ``failed`` strays from the mean as a sum of
    # independent rolls does.
    expected_failed: float = 0.0
    failed_sd: float = 0.0
    # Machine-seconds spent in each deletion step (the step its lastOperation hands over to):
    # where a slow deletion's time went.
    step_seconds: dict[str, float] = field(default_factory=dict)
    # Failed deletion steps recorded on machines, by what failed (names and numbers elided).
    step_failures: Counter[str] = field(default_factory=Counter)
    watches: int = 0  # watch requests (each stream cut after WATCH_CUT_AFTER with faults)

    @property
    def seconds(self) -> float:
        return self.create_s + self.delete_s

    @property
    def failed_fraction(self) -> float:
        return self.failed / self.requests if self.requests else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "machines": self.machines,
            "faults": self.faults,
            "running": self.running,
            "completed": self.completed,
            "create_s": round(self.create_s, 1),
            "delete_s": round(self.delete_s, 1),
            "seconds": round(self.seconds, 1),
            "orphan_vms": self.orphan_vms,
            "stuck_finalizers": self.stuck_finalizers,
            "tokens_left": self.tokens_left,
            "nodes_left": self.nodes_left,
            "pods_on_gone_nodes": self.pods_on_gone_nodes,
            "requests": self.requests,
            "watches": self.watches,
            "failed_fraction": round(self.failed_fraction, 3),
            "expected_failed": round(self.expected_failed, 1),
            "failed_sd": round(self.failed_sd, 1),
            "injected": {str(k): v for k, v in sorted(self.injected.items())},
            "step_seconds": {k: round(v, 1) for k, v in sorted(self.step_seconds.items())},
            "step_failures": dict(self.step_failures.most_common()),
        }


def objects(emu: Emulator, plural: str, group: str = "", ns: str | None = None) -> list[Any]:
    return [e.obj for e in emu.store.iter(emu.resource(plural, group), ns)]


def _web(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }


def _step_of(last: dict[str, Any]) -> str:
    """A deletion step's short name, and whether its last attempt failed."""
    step = deletion_step(last.get("description", "")) or "not terminating yet"
    return step + (" (failed)" if last.get("state") == "Failed" else "")


def _gist(description: str) -> str:
    """A failure's description without the names and numbers that make each one unique."""
    text = re.sub(r"\(\w+ /[^)]*\)", "", description)
    text = re.sub(r"(soak|web)-[a-z0-9-]+", "X", text)
    return re.sub(r"\d+(\.\d+)?", "N", text)[:160]


async def _until(h: Harness, done: Callable[[], bool], deadline: float) -> bool:
    return await h.ctx.machine_changes.wait_until(done, deadline)


async def soak(
    machines: int, *, faults: bool, seed: int = 1, within: float = 3600.0, workers: int = 5
) -> SoakFigures:
    """One run on a fresh emulator; returns its figures (never raises on a shortfall: the
    caller asserts, so a bench can report what a failing run left behind)."""
    figures = SoakFigures(machines, faults)
    names = [f"soak-{i:03d}" for i in range(machines)]
    async with serve_world(options=EmulatorOptions(fault_seed=seed), simulate=FAST) as emu:
        install_crds(emu)
        seed_class(emu, bootSeconds=BOOT_SECONDS)
        async with machine_manager(emu, workers=workers) as h:
            await h.manager.cache.wait_for_sync()
            emu.counters.reset()
            if faults:
                for rule in fault_rules():
                    emu.faults.add(rule)
                emu.faults.cut_watches()  # the streams opened before the faults get cut too
            deadline = trio.current_time() + within
            started = trio.current_time()
            for name in names:
                emu.create(machine_doc(name))

            def running() -> int:
                return sum(
                    1 for n in names if (m := h.machine(n)) is not None and m.phase == PHASE_RUNNING
                )

            await _until(h, lambda: running() == machines, deadline)
            figures.running = running()
            figures.create_s = trio.current_time() - started

            # A workload on the nodes, placed by the simulated scheduler (the simulated world is
            # a client of the emulator too: its requests meet the faults as a kubelet's would).
            emu.create(_web(machines * PODS_PER_MACHINE))
            await h.wait_pods(
                lambda: (
                    sum(1 for p in h.ctx.drainer.cache.pods.list("default") if p.spec.node_name)
                    >= machines * PODS_PER_MACHINE
                ),
                within=max(1.0, deadline - trio.current_time()),
            )

            steps: dict[str, tuple[str, float]] = {}  # machine -> (step, since)

            def track(rt: Any, ev: Any) -> None:
                if rt.kind != "Machine":
                    return
                obj = ev.entry.obj
                name, now = obj["metadata"]["name"], trio.current_time()
                last = obj.get("status", {}).get("lastOperation", {})
                step = "gone" if ev.type == "DELETED" else _step_of(last)
                before = steps.get(name)
                if before is not None and before[0] != step:
                    figures.step_seconds[before[0]] = (
                        figures.step_seconds.get(before[0], 0.0) + now - before[1]
                    )
                if before is None or before[0] != step:
                    steps[name] = (step, now)
                    if step.endswith("(failed)"):
                        figures.step_failures[_gist(last.get("description", ""))] += 1

            unsubscribe = emu.store.subscribe(track)
            started = trio.current_time()
            for name in names:
                emu.delete(MACHINE_API, "Machine", name, "default")
            await _until(h, lambda: all(h.machine(n) is None for n in names), deadline)
            figures.delete_s = trio.current_time() - started
            unsubscribe()
            figures.completed = sum(1 for n in names if h.machine(n) is None)
            figures.requests = sum(
                n for key, n in emu.counters.snapshot().items() if not key.startswith("watch ")
            )
            figures.watches = sum(
                n for key, n in emu.counters.snapshot().items() if key.startswith("watch ")
            )
            for (verb, status), n in emu.faults.injected.items():
                figures.injected[status] = figures.injected.get(status, 0) + n
                if verb != "watch":
                    figures.failed += n
            if faults:
                variance = 0.0
                for key, n in emu.counters.snapshot().items():
                    verb, target = key.split(" ", 1)
                    if verb == "watch":
                        continue
                    resource, _, sub = target.partition("/")
                    chance = failure_probability(emu.faults.rules, verb, resource, sub)
                    figures.expected_failed += n * chance
                    variance += n * chance * (1.0 - chance)
                figures.failed_sd = math.sqrt(variance)
            emu.faults.clear()
            # Pods the kubelet of a deleted node never finished are the pod garbage collector's
            # once its quarantine is over, as in a cluster: count what is left after that.
            await trio.sleep(ORPHAN_QUARANTINE + 5)
            vms = await h.ctx.drivers.get("sim").list_machines(
                h.ctx.classes.get("default", "small"), {}
            )
        figures.orphan_vms = len(vms)
        figures.stuck_finalizers = len(objects(emu, "machines", "machine.sapcloud.io"))
        figures.tokens_left = sum(
            1
            for s in objects(emu, "secrets", ns=TOKEN_NAMESPACE)
            if s.get("type") == "bootstrap.kubernetes.io/token"
        )
        nodes = {n["metadata"]["name"] for n in objects(emu, "nodes")}
        figures.nodes_left = len(nodes)
        figures.pods_on_gone_nodes = sum(
            1
            for p in objects(emu, "pods", ns="default")
            if p["spec"].get("nodeName") and p["spec"]["nodeName"] not in nodes
        )
    return figures
