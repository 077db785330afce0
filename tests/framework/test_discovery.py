"""Discovery before the informers: custom kinds that are not served end ``Manager.run`` at
once, every one of them named, whether their group is missing or only some of its kinds."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from kubetrio.api.core import ConfigMap
from kubetrio.api.machine import Machine, MachineClass
from kubetrio.api.machineset import MachineSet
from kubetrio.api.registry import KindInfo
from kubetrio.cmd.assets import crd_documents
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.discovery import UnservedKinds, check_served
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from tests.helpers.machines import install_crds


def manager_listing(emu: Emulator, *kinds: type) -> Manager:
    manager = Manager(
        Client.from_url(emu.url, token=emu.token),
        metrics_bind_address="0",
        health_probe_bind_address="0",
    )
    for kind in kinds:
        manager.cache.informer(kind, namespace="default")
    return manager


async def test_kinds_missing_from_a_served_group_are_named(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    (machines,) = [crd for crd in crd_documents() if crd["spec"]["names"]["plural"] == "machines"]
    emu.create(machines)
    manager = manager_listing(emu, ConfigMap, Machine, MachineClass, MachineSet)
    started = trio.current_time()
    with pytest.raises(UnservedKinds) as caught:
        await manager.run(handle_signals=False)
    assert trio.current_time() - started < 1
    assert [kind.plural for kind in caught.value.kinds] == ["machineclasses", "machinesets"]
    assert str(caught.value).startswith(
        "CRD not installed: machineclasses.machine.sapcloud.io, "
        "machinesets.machine.sapcloud.io (404 NotFound: machine.sapcloud.io/v1alpha1 does not "
        "list "
    )
    assert emu.counters.get("list", "configmaps") == 0, "no informer started"


async def test_served_kinds_pass_and_builtins_cost_no_request(emu: Emulator) -> None:
    install_crds(emu)
    client = Client.from_url(emu.url, token=emu.token)
    await check_served(client, [Machine.KIND, MachineSet.KIND, ConfigMap.KIND])
    with pytest.raises(UnservedKinds, match=r"^target cluster: CRD not installed: widgets\.ex"):
        await check_served(
            client,
            [ConfigMap.KIND, Machine.KIND, KindInfo("example.com/v1", "Widget", "widgets", True)],
            cluster="target",
        )
