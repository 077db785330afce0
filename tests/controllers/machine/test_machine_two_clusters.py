"""MCM's two clusters end to end: Machines, classes and their Secrets in the control cluster,
Nodes, Pods, drains and bootstrap tokens in the target cluster (whose simulated cloud boots the
VMs that join it) — two emulators in one trio run, on one clock."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.testing
from prometheus_client.parser import text_string_to_metric_families

from kubetrio.api.core import ConfigMap, Node, Pod, Secret
from kubetrio.api.machine import PHASE_PENDING, PHASE_RUNNING
from kubetrio.cmd.clusters import cluster_clients
from kubetrio.cmd.config import ManagerConfig, add_config_flags, load_config
from kubetrio.controllers.clusters import TARGET
from kubetrio.controllers.machine.bootstrap import TOKEN_NAMESPACE, token_secret_name
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machine.setup import setup
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager, process_registry
from kubetrio.sim import serve_world
from kubetrio.sim.cloud import SimulatedCloud
from kubetrio.sim.cluster import ClusterSimulation
from tests.helpers.machines import MACHINE_API, Harness, install_crds, machine_doc, seed_class
from tests.helpers.manager import http_get
from tests.helpers.simcluster import replicaset

FAST = ClusterSimulation(pod_start_delay=0.05, grace_factor=0.01)

# What only the target cluster may be asked about, and what only the control cluster.
TARGET_ONLY = {"nodes", "pods", "volumeattachments", "persistentvolumes", "poddisruptionbudgets"}
CONTROL_ONLY = {"machines", "machineclasses"}


@asynccontextmanager
async def two_cluster_machines(control: Emulator, target: Emulator) -> AsyncIterator[Harness]:
    """The machine controller on a manager whose primary cluster is ``control`` and whose
    target cluster is ``target``, both clients reporting to the manager's registry."""
    registry = process_registry()
    client = Client.from_url(control.url, token=control.token, registry=registry)
    manager = Manager(
        client,
        registry=registry,
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="127.0.0.1:0",
    )
    manager.add_cluster(TARGET, Client.from_url(target.url, token=target.token, registry=registry))
    # The target's cloud: its VMs join the target cluster.
    cloud = target.extension(SimulatedCloud).url
    config = ManagerConfig(machine=MachineOptions(sim_cloud_url=cloud), workers={"machine": 5})
    ctx = setup(manager, config)
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        yield Harness(control, client, manager, ctx)
        manager.stop()


def resources(emu: Emulator) -> set[str]:
    """Every resource the emulator was asked about (subresources under their resource)."""
    return {key.split(" ", 1)[1].split("/")[0] for key in emu.counters.snapshot()}


def event_kinds(emu: Emulator) -> set[str]:
    """The kinds of the objects the Events in ``emu`` are about."""
    return {
        entry.obj["involvedObject"]["kind"]
        for namespace in ("default", TOKEN_NAMESPACE)
        for entry in emu.store.iter(emu.resource("events"), namespace)
    }


def web_pods_on(h: Harness, node: str) -> list[Pod]:
    return [
        p
        for p in h.ctx.drainer.cache.pods.list()
        if p.spec.node_name == node and not p.deleting and p.status.phase == "Running"
    ]


async def rest_client_hosts(h: Harness) -> dict[str, float]:
    """``rest_client_requests_total`` summed per host."""
    text = (await http_get(h.manager, "/metrics")).text
    hosts: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name == "rest_client_requests":
            for sample in family.samples:
                if sample.name == "rest_client_requests_total":
                    host = sample.labels["host"]
                    hosts[host] = hosts.get(host, 0) + sample.value
    return hosts


async def test_a_machine_lives_in_control_and_its_node_in_target(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with (
        serve_world() as control,
        serve_world(simulate=FAST) as target,
        two_cluster_machines_after_crds(control, target) as h,
    ):
        target.create(replicaset("web", 2))  # Pending until a node joins
        control.create(machine_doc("m-1"))
        pending = await h.wait_phase("m-1", PHASE_PENDING)
        token = token_secret_name("m-1", "default")
        assert target.get("v1", "Secret", token, TOKEN_NAMESPACE) is not None
        assert control.get("v1", "Secret", token, TOKEN_NAMESPACE) is None
        assert pending.spec.provider_id in {
            vm.provider_id for vm in target.extension(SimulatedCloud).vms.values()
        }

        running = await h.wait_phase("m-1", PHASE_RUNNING)
        assert running.status.last_operation.description.startswith(
            "Machine m-1 successfully joined the cluster in "
        )
        assert target.get("v1", "Node", "m-1") is not None
        assert control.get("v1", "Node", "m-1") is None
        assert target.get("v1", "Secret", token, TOKEN_NAMESPACE) is None  # served its purpose
        await h.wait_pods(lambda: len(web_pods_on(h, "m-1")) == 2)

        evictions_before = target.counters.get("create", "pods", "eviction")
        control.delete(MACHINE_API, "Machine", "m-1", "default")
        await h.wait_gone("m-1")
        assert target.counters.get("create", "pods", "eviction") - evictions_before == 2
        assert target.extension(SimulatedCloud).vms == {}
        assert await h.ctx.target.get_or_none(Node, "m-1") is None
        assert web_pods_on(h, "m-1") == []

        # Events stay beside their objects: the Machine's in control, the drained Node's in
        # target.
        assert event_kinds(control) == {"Machine"}
        assert event_kinds(target) == {"Node"}

        # Each cluster was asked only about its own kinds.
        assert resources(control) & TARGET_ONLY == set(), control.counters.snapshot()
        assert resources(target) & CONTROL_ONLY == set(), target.counters.snapshot()
        assert resources(control) >= CONTROL_ONLY
        assert {"nodes", "pods"} <= resources(target)
        assert await h.ctx.target.get_or_none(Secret, "small-secret", namespace="default") is None

        # Rest-client metrics tell the two API servers apart by host.
        hosts = await rest_client_hosts(h)
        assert set(hosts) == {control.url.split("//")[1], target.url.split("//")[1]}, hosts
        assert all(count > 0 for count in hosts.values())
        print(
            f"requests: control={control.counters.total()} target={target.counters.total()} "
            f"rest_client={hosts}"
        )


@asynccontextmanager
async def two_cluster_machines_after_crds(
    control: Emulator, target: Emulator, **class_options: Any
) -> AsyncIterator[Harness]:
    """The CRDs and the class (with its Secret) in the control cluster only."""
    install_crds(control)
    seed_class(control, bootSeconds=30, **class_options)
    async with two_cluster_machines(control, target) as h:
        yield h


async def test_each_cluster_has_its_own_client_and_rate_limit(
    mock_clock: trio.testing.MockClock,
) -> None:
    """A throttled target cluster does not slow the control cluster's requests down."""
    async with serve_world() as control, serve_world() as target:
        parser = argparse.ArgumentParser()
        add_config_flags(parser)
        flags = [
            *("--control-kubeconfig", str(control.kubeconfig_path)),
            *("--target-kubeconfig", str(target.kubeconfig_path)),
            *("--target-kube-api-qps", "1", "--target-kube-api-burst", "1"),
        ]
        config = load_config(parser.parse_args(flags), {}, ["machine"])
        control_client, target_client = cluster_clients(config)
        assert target_client is not None
        assert control_client.host != target_client.host

        async def six_requests(client: Client) -> float:
            started = trio.current_time()
            for _ in range(6):
                await client.list(ConfigMap, namespace="default")
            return trio.current_time() - started

        assert await six_requests(control_client) < 1  # client.qps 20, burst 30
        assert 4.9 <= await six_requests(target_client) <= 6  # one token, then one a second
        assert control.counters.get("list", "configmaps") == 6
        assert target.counters.get("list", "configmaps") == 6
