"""The testing kit as a user meets it: its fixtures, ``run_manager``, ``install_crds`` and the
cache waits, around a tiny controller of the user's own (a greeting ConfigMap per labelled
ConfigMap) defined here."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from kubetrio.api.core import ConfigMap, Node, Secret
from kubetrio.api.machine import Machine
from kubetrio.api.meta import ObjectMeta
from kubetrio.cmd.assets import crd_documents
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.util.ownerrefs import set_controller_reference
from kubetrio.sim.cluster import SimulatedCluster
from kubetrio.testing import (
    Kubectl,
    eventually,
    install_crds,
    run_manager,
    wait_for,
    wait_gone,
)

# -- the user's controller ----------------------------------------------------------------


class Greeter:
    """For each ConfigMap labelled ``greet=yes``: a ConfigMap ``<name>-greeting`` it owns."""

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.configmaps = manager.cache.informer(ConfigMap).lister

    async def reconcile(self, key: ObjectKey) -> Result:
        source = self.configmaps.get(key.namespace, key.name)
        if source is None or source.metadata.labels.get("greet") != "yes":
            return Result()
        text = f"hello {source.data.get('who', 'world')}"
        name = f"{key.name}-greeting"
        existing = self.configmaps.get(key.namespace, name)
        if existing is None:
            greeting = ConfigMap(
                metadata=ObjectMeta(name=name, namespace=key.namespace), data={"text": text}
            )
            await self.client.create(ConfigMap, set_controller_reference(source, greeting))
        elif existing.data.get("text") != text:
            await self.client.patch(
                ConfigMap, name, {"data": {"text": text}}, namespace=key.namespace
            )
        return Result()


def greeter(manager: Manager, config: Any) -> None:
    """The ``setup(manager, config)`` a ``kubetrio run --controllers`` plugin exports."""
    manager.controller("greeter").for_(ConfigMap).owns(ConfigMap).complete(Greeter(manager))


def source(name: str, who: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": {"greet": "yes"}},
        "data": {"who": who},
    }


# -- fixtures and helpers -----------------------------------------------------------------


@pytest.mark.kubectl
async def test_the_fixtures_share_the_mock_clock(
    emulator: Emulator, kube_client: Client, kubectl: Kubectl
) -> None:
    clock = trio.lowlevel.current_clock()
    assert isinstance(clock, trio.testing.MockClock)  # without naming mock_clock
    await kube_client.create(ConfigMap, source("a", "kit"))
    listed = await kubectl.json("get", "configmap", "a")
    assert listed["data"] == {"who": "kit"}
    assert emulator.get("v1", "ConfigMap", "a", "default") is not None
    simulated = trio.current_time()
    await trio.sleep(3600)  # an hour on the mock clock asserted above, no wall time
    assert trio.current_time() - simulated >= 3600


async def test_controller_reconciles_and_waits_wake_on_changes(
    emulator: Emulator, kube_client: Client
) -> None:
    async with run_manager(emulator, greeter) as manager:
        await kube_client.create(ConfigMap, source("a", "ada"))
        greeting = await wait_for(manager, ConfigMap, "a-greeting")
        assert greeting.data == {"text": "hello ada"}
        await kube_client.patch(ConfigMap, "a", {"data": {"who": "bob"}}, namespace="default")
        await wait_for(
            manager, ConfigMap, "a-greeting", condition=lambda c: c.data["text"] == "hello bob"
        )

        async def both_greeted() -> None:
            names = {c.metadata.name for c in manager.cache.informer(ConfigMap).lister.list()}
            assert {"b-greeting", "c-greeting"} <= names

        await kube_client.create(ConfigMap, source("b", "b"))
        await kube_client.create(ConfigMap, source("c", "c"))
        await eventually(both_greeted)  # the manager's informers by default
        await kube_client.delete(ConfigMap, "c-greeting", namespace="default")
        await wait_for(manager, ConfigMap, "c-greeting")  # the controller puts it back
        await kube_client.delete(ConfigMap, "b", namespace="default")
        await wait_gone(manager, ConfigMap, "b")


async def test_wait_for_timeout_names_the_object_and_shows_it(
    emulator: Emulator, kube_client: Client
) -> None:
    async with run_manager(emulator, greeter) as manager:
        await kube_client.create(ConfigMap, source("a", "ada"))
        start = trio.current_time()
        with pytest.raises(AssertionError) as failure:
            await wait_for(
                manager, ConfigMap, "a-greeting", condition=lambda c: "never" in c.data, timeout=600
            )
        message = str(failure.value)
        assert message.startswith(
            "timed out after 600s waiting for ConfigMap default/a-greeting to satisfy"
        )
        assert "hello ada" in message  # the last object seen
        with pytest.raises(AssertionError, match="ConfigMap default/a to be gone; last seen"):
            await wait_gone(manager, ConfigMap, "a", timeout=60)
        with pytest.raises(
            AssertionError, match="ConfigMap default/nope to exist; last seen: None"
        ):
            await wait_for(manager.cache, ConfigMap, "nope", timeout=60)
        assert trio.current_time() - start >= 600 + 60 + 60  # each timeout waited out in full


@pytest.mark.slow
async def test_eventually_re_raises_the_last_assertion(
    emulator: Emulator, kube_client: Client
) -> None:
    async with run_manager(emulator, greeter) as manager:
        seen: list[int] = []

        def count_greetings() -> None:
            greetings = manager.cache.informer(ConfigMap).lister.list("default")
            seen.append(len(greetings))
            assert len(greetings) == 5, f"{len(greetings)} configmaps"

        await kube_client.create(ConfigMap, source("a", "ada"))
        with pytest.raises(AssertionError, match="2 configmaps"):
            await eventually(count_greetings, timeout=120)
        assert len(seen) >= 2  # re-run on changes, not once
        with pytest.raises(AssertionError, match="stayed false"):
            await eventually(lambda: False, on=manager, timeout=5)


async def test_eventually_re_checks_on_its_interval_what_no_informer_caches(
    emulator: Emulator, kube_client: Client
) -> None:
    """A Secret written later changes none of the manager's informers (it caches ConfigMaps):
    only the interval's re-check can see it."""
    async with run_manager(emulator, greeter) as manager, trio.open_nursery() as nursery:
        secret = {"metadata": {"name": "late", "namespace": "default"}}

        async def write_later() -> None:
            await trio.sleep(10)
            await kube_client.create(Secret, secret)

        async def secret_written() -> None:
            names = {
                s.metadata.name for s in (await kube_client.list(Secret, namespace="default")).items
            }
            assert "late" in names

        nursery.start_soon(write_later)
        start = trio.current_time()
        await eventually(secret_written, on=manager, timeout=60, interval=2)
        assert 10 <= trio.current_time() - start <= 10 + 2 + 1


async def test_eventually_needs_informers_outside_run_manager() -> None:
    with pytest.raises(TypeError, match="on= is required"):
        await eventually(lambda: True)


class Boom(Exception):
    pass


async def test_a_controller_crash_fails_the_test_with_its_error(emulator: Emulator) -> None:
    class Crashing:
        needs_leader_election = False

        async def run(self) -> None:
            await trio.sleep(10)
            raise Boom("the controller crashed")

    def crashing(manager: Manager, config: Any) -> None:
        manager.add(Crashing())

    start = trio.current_time()
    with pytest.raises(Boom, match="the controller crashed"):
        async with run_manager(emulator, crashing) as manager:
            await wait_for(manager, ConfigMap, "never", timeout=3600)
    assert trio.current_time() - start < 3600  # the crash ended the wait, not its timeout


async def test_setups_get_the_config(emulator: Emulator) -> None:
    got: list[Any] = []
    async with run_manager(emulator, lambda m, c: got.append(c), config={"k": 1}) as manager:
        assert manager.cache.synced
    assert got == [{"k": 1}]


async def test_install_crds_from_dicts_and_files_then_served(
    emulator: Emulator, kube_client: Client, tmp_path: Any
) -> None:
    import yaml

    machine_crd, *others = crd_documents()
    path = tmp_path / "crds.yaml"
    path.write_text(yaml.safe_dump_all(others))
    await install_crds(kube_client, machine_crd, path)
    await install_crds(kube_client, machine_crd)  # already there: fine
    body = {
        "apiVersion": "machine.sapcloud.io/v1alpha1",
        "kind": "Machine",
        "metadata": {"name": "m", "namespace": "default"},
        "spec": {"class": {"kind": "MachineClass", "name": "small"}},
    }
    created = await kube_client.create(Machine, body)
    assert created.metadata.name == "m"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap"}))
    with pytest.raises(ValueError, match="kind 'ConfigMap', not a CustomResourceDefinition"):
        await install_crds(kube_client, path)


async def test_install_crds_from_a_declared_kind(kube_client: Client) -> None:
    """A class goes through the CRD generator; the next create is served at once."""
    from tests.helpers.greeting import Greeting

    await install_crds(kube_client, Greeting)
    body = {"metadata": {"name": "hi", "namespace": "default"}, "spec": {"name": "you"}}
    created = await kube_client.create(Greeting, body)
    assert (created.spec.style, created.spec.repeat) == ("casual", 1)  # the schema's defaults


@pytest.mark.kubetrio(simulated_cluster=True)
async def test_simulated_cluster_marker(emulator: Emulator, kube_client: Client) -> None:
    async with run_manager(emulator, lambda m, c: m.cache.informer(Node)) as manager:
        await kube_client.create(
            ConfigMap, {"metadata": {"name": "x", "namespace": "default"}, "data": {}}
        )
        await wait_for(manager, ConfigMap, "x")
    assert emulator.extension(SimulatedCluster)


async def test_without_the_marker_no_simulated_cluster(emulator: Emulator) -> None:
    with pytest.raises(LookupError, match="the emulator serves no SimulatedCluster"):
        emulator.extension(SimulatedCluster)
