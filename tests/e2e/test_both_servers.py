"""The framework's own behaviour, proven on the emulator and on a real kube-apiserver in the
same run (``api_server`` runs each test on both): when the two disagree, the real one is right
and the emulator is fixed or its gaps table says why."""

from __future__ import annotations

from pathlib import Path

import trio

from kubetrio.api.core import ConfigMap, Pod
from kubetrio.api.machine import Machine
from kubetrio.cmd.assets import crd_documents
from kubetrio.runtime import Manager
from kubetrio.runtime.cache.informer import EventHandler
from kubetrio.testing import install_crds, run_manager, wait_for, wait_gone
from kubetrio.testing.servers import ApiServer

from .test_readme import readme_controller


async def test_the_readme_controller_labels_scheduled_pods(
    api_server: ApiServer, tmp_path: Path
) -> None:
    example = readme_controller(tmp_path)
    client = api_server.client()
    async with run_manager(api_server, example.setup) as manager:
        labelled = trio.Event()

        def check(_: Pod, new: Pod) -> None:
            if new.metadata.labels.get(example.LABEL) == "node-7":
                labelled.set()

        manager.cache.informer(Pod).add_handler(EventHandler(on_update=check))
        pod = {
            "metadata": {"name": "p"},
            "spec": {"nodeName": "node-7", "containers": [{"name": "c", "image": "i"}]},
        }
        await client.create(Pod, pod, namespace=api_server.namespace)
        with trio.fail_after(30):
            await labelled.wait()


def _cache_configmaps(manager: Manager, _config: object) -> None:
    manager.cache.informer(ConfigMap)


async def test_an_informer_sees_creates_updates_and_deletes(api_server: ApiServer) -> None:
    client, namespace = api_server.client(), api_server.namespace
    async with run_manager(api_server, _cache_configmaps) as manager:
        await client.create(
            ConfigMap, {"metadata": {"name": "c"}, "data": {"a": "1"}}, namespace=namespace
        )
        await wait_for(manager, ConfigMap, "c", namespace, condition=lambda c: c.data == {"a": "1"})
        await client.patch(ConfigMap, "c", {"data": {"a": "2"}}, namespace=namespace)
        await wait_for(manager, ConfigMap, "c", namespace, condition=lambda c: c.data == {"a": "2"})
        await client.delete(ConfigMap, "c", namespace)
        await wait_gone(manager, ConfigMap, "c", namespace)


async def test_the_shipped_crds_are_served_and_typed_objects_round_trip(
    api_server: ApiServer,
) -> None:
    client, namespace = api_server.client(), api_server.namespace
    await install_crds(client, *crd_documents())
    machine = {
        "metadata": {"name": "m", "labels": {"pool": "a"}},
        "spec": {"class": {"kind": "MachineClass", "name": "small"}, "providerID": "sim:///m"},
    }
    created = await client.create(Machine, machine, namespace=namespace)
    read = await client.get(Machine, "m", namespace)
    assert read == created
    assert read.spec.provider_id == "sim:///m" and read.metadata.labels == {"pool": "a"}
