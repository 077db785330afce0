"""Poison objects: an object the server accepts but the typed view cannot decode stays out of
the cache, is reported, and never stops the informer; the cache follows its fix or deletion.

Real API servers validate custom resources against the CRD schema, so poison objects come from
a CRD looser than kubetrio's view: here the Machine CRD with ``x-kubernetes-preserve-unknown-
fields`` on the whole object, which lets ``spec.class`` be a string.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
import yaml
from prometheus_client import CollectorRegistry

from kubetrio.api.machine import Machine
from kubetrio.runtime.client import Client
from kubetrio.runtime.controller import Result
from kubetrio.runtime.emulator import Emulator, FaultRule
from kubetrio.runtime.informer import EventHandler, Informer
from kubetrio.runtime.informer_metrics import NAME
from kubetrio.runtime.manager import Manager
from kubetrio.runtime.queue import ObjectKey

from .test_manager import http_get, scrape

CRD_DIR = Path(__file__).resolve().parents[2] / "config" / "crd"
MACHINE_API = "machine.sapcloud.io/v1alpha1"


def install_loose_crd(emu: Emulator, name: str) -> None:
    """Install the project's CRD ``name`` with a schema that keeps any field of any type."""
    crd = yaml.safe_load((CRD_DIR / f"machine.sapcloud.io_{name}.yaml").read_text())
    for version in crd["spec"]["versions"]:
        version["schema"] = {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        }
    emu.create(crd)


def machine(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "Machine",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"class": {"kind": "MachineClass", "name": "small"}, **spec},
    }


def replace_spec(emu: Emulator, name: str, **spec: Any) -> None:
    current = emu.get(MACHINE_API, "Machine", name, "default")
    assert current is not None
    current = copy.deepcopy(current)
    current["spec"] = spec
    emu.update(current)


def names(informer: Informer[Machine]) -> set[str]:
    names = {m.metadata.name for m in informer.lister.list("default")}
    return {name for name in names if not name.startswith("marker-")}


class Barrier:
    """Waits until the informer has processed everything written so far: it writes a marker
    object and waits for its add (a watch delivers in order)."""

    def __init__(self, emu: Emulator, informer: Informer[Machine]) -> None:
        self.emu = emu
        self.count = 0
        self.seen: set[str] = set()
        self.arrived = trio.Event()
        informer.add_handler(EventHandler(on_add=self._on_add))

    def _on_add(self, obj: Machine, initial: bool) -> None:
        self.seen.add(obj.metadata.name)
        self.arrived.set()
        self.arrived = trio.Event()

    async def __call__(self) -> None:
        self.count += 1
        marker = f"marker-{self.count}"
        self.emu.create(machine(marker))
        while marker not in self.seen:
            await self.arrived.wait()
        self.emu.delete(MACHINE_API, "Machine", marker, "default")


async def test_poison_object_is_kept_out_and_the_watch_goes_on(
    emu: Emulator, mock_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    install_loose_crd(emu, "machines")
    emu.create(machine("good"))
    emu.create(machine("bad-from-start") | {"spec": {"class": "a string"}})
    informer = Informer(Client.from_kubeconfig(str(emu.kubeconfig_path)), Machine)
    caught_up = Barrier(emu, informer)
    caplog.set_level(logging.WARNING, "kubetrio.informer")
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(informer.run)
            await informer.wait_for_sync()
            # LIST: the poison item alone is skipped, with the field path in the report.
            assert names(informer) == {"good"}
            poison = informer.undecodable[ObjectKey("default", "bad-from-start")]
            assert "$.spec.class" in poison.error

            # WATCH: an object turning bad leaves the cache (its older good version no longer
            # fits), and the watch goes on: the barrier's marker objects keep arriving.
            emu.create(machine("turns-bad"))
            await caught_up()
            assert names(informer) == {"good", "turns-bad"}
            replace_spec(emu, "turns-bad", providerID=7)
            await caught_up()
            assert names(informer) == {"good"}
            turned = informer.undecodable[ObjectKey("default", "turns-bad")]
            assert "$.spec.providerID" in turned.error

            # Fixed → back in the cache; deleted → forgotten. No restart.
            replace_spec(emu, "turns-bad", providerID="sim://1")
            emu.delete(MACHINE_API, "Machine", "bad-from-start", "default")
            await caught_up()
            assert names(informer) == {"good", "turns-bad"}
            assert not informer.undecodable

            # A relist of an unchanged poison object does not log it again.
            replace_spec(emu, "turns-bad", nodeTemplate="not an object")
            await caught_up()
            relists = informer.relists
            emu.faults.add(FaultRule(verb="watch", resource="machines", status=410, count=1))
            emu.faults.cut_watches()
            await caught_up()
            assert informer.relists > relists
            assert list(informer.undecodable) == [ObjectKey("default", "turns-bad")]
            assert names(informer) == {"good"}
            nursery.cancel_scope.cancel()
    logged = [r.getMessage() for r in caplog.records if "undecodable" in r.getMessage()]
    # bad-from-start once, turns-bad once per bad resourceVersion (two), none on the relist.
    assert len(logged) == 3, logged
    assert all("$.spec." in line for line in logged)


class SeenMachines:
    """A reconciler that notes each machine it found in the cache."""

    def __init__(self, manager: Manager) -> None:
        self.lister = manager.cache.informer(Machine).lister
        self.seen: set[str] = set()
        self.changed = trio.Event()

    async def reconcile(self, key: ObjectKey) -> Result:
        if self.lister.get(key.namespace, key.name) is not None:
            self.seen.add(key.name)
            self.changed.set()
            self.changed = trio.Event()
        return Result()


async def test_manager_reports_poison_objects_and_keeps_reconciling(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_loose_crd(emu, "machines")
    emu.create(machine("bad") | {"spec": {"class": "a string"}})
    manager = Manager(
        Client.from_kubeconfig(str(emu.kubeconfig_path), registry=None),
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="127.0.0.1:0",
        registry=CollectorRegistry(),
    )
    rec = SeenMachines(manager)
    manager.controller("machines").for_(Machine).complete(rec)
    undecodable = (NAME, (("kind", "Machine"),))
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(manager.run)
            await manager.serving.wait()
            emu.create(machine("good"))
            while "good" not in rec.seen:
                await rec.changed.wait()
            assert (await scrape(manager))[undecodable] == 1
            ready = await http_get(manager, "/readyz?verbose")
            assert ready.status_code == 200  # the other machines are served: still ready
            assert "[+]informers ok: 1 undecodable object(s)" in ready.text
            assert "Machine default/bad" in ready.text and "$.spec.class" in ready.text

            replace_spec(emu, "bad", **{"class": {"name": "small"}})  # fixed: reconciled
            while "bad" not in rec.seen:
                await rec.changed.wait()
            assert (await scrape(manager))[undecodable] == 0
            assert "[+]informers ok\n" in (await http_get(manager, "/readyz?verbose")).text
            manager.stop()
