"""Poison objects: an object the server accepts but the typed view cannot decode stays out of
the cache, is reported, and never stops the informer; the cache follows its fix or deletion.

Real API servers validate custom resources against the CRD schema, so poison objects come from
a CRD looser than kubetrio's view: here the Machine CRD with ``x-kubernetes-preserve-unknown-
fields`` on the whole object, which lets ``spec.class`` be a string.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect
import pytest
import trio
import trio.testing
import yaml
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from kubetrio.api.machine import Machine, MachineClass
from kubetrio.emulator import Emulator, FaultRule
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.cache.metrics import NAME
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.manager.manager import Manager
from kubetrio.sim import serve_world
from tests.helpers.kube import IO_AUTOJUMP
from tests.helpers.manager import http_get, scrape

CRD_DIR = Path(__file__).resolve().parents[2] / "config" / "crd"
MACHINE_API = "machine.sapcloud.io/v1alpha1"


def install_loose_crd(emu: Emulator, name: str) -> None:
    """Install the project's CRD ``name`` with a schema that keeps any field of any type."""
    crd = yaml.safe_load((CRD_DIR / f"machine.sapcloud.io_{name}.yaml").read_text())
    for version in crd["spec"]["versions"]:
        version.pop("subresources", None)  # status written with the object, like any field
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


def names(informer: Informer[Any]) -> set[str]:
    names = {m.metadata.name for m in informer.lister.list("default")}
    return {name for name in names if not name.startswith("marker-")}


def machine_class(name: str) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "MachineClass",
        "metadata": {"name": name, "namespace": "default"},
        "provider": "sim",
    }


class Barrier:
    """Waits until the informer has processed everything written so far: it writes a marker
    object and waits for its add (a watch delivers in order)."""

    def __init__(
        self, emu: Emulator, informer: Informer[Any], doc: Callable[[str], dict[str, Any]] = machine
    ) -> None:
        self.emu = emu
        self.doc = doc
        self.kind = informer.kind.KIND.kind
        self.count = 0
        self.seen: set[str] = set()
        self.arrived = trio.Event()
        informer.add_handler(EventHandler(on_add=self._on_add))

    def _on_add(self, obj: Any, initial: bool) -> None:
        self.seen.add(obj.metadata.name)
        self.arrived.set()
        self.arrived = trio.Event()

    async def __call__(self) -> None:
        self.count += 1
        marker = f"marker-{self.count}"
        self.emu.create(self.doc(marker))
        while marker not in self.seen:
            await self.arrived.wait()
        self.emu.delete(MACHINE_API, self.kind, marker, "default")


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


# -- fuzz: no field of any type stops an informer ------------------------------------------

Path_ = tuple[str | int, ...]


def field_paths(struct: type[Any], depth: int = 6) -> list[Path_]:
    """Every JSON path into a typed view's fields (through nested structs, optional structs
    and the first element of lists of structs), metadata excepted: the server owns that."""

    def walk(info: Any, prefix: Path_, depth: int) -> list[Path_]:
        if isinstance(info, msgspec.inspect.UnionType):
            return [p for t in info.types for p in walk(t, prefix, depth)]
        if isinstance(info, (msgspec.inspect.ListType, msgspec.inspect.VarTupleType)):
            return walk(info.item_type, (*prefix, 0), depth)
        if not isinstance(info, msgspec.inspect.StructType) or depth == 0:
            return []
        found: list[Path_] = []
        for f in info.fields:
            if prefix == () and f.encode_name == "metadata":
                continue
            found.append((*prefix, f.encode_name))
            found.extend(walk(f.type, (*prefix, f.encode_name), depth - 1))
        return found

    return sorted(set(walk(msgspec.inspect.type_info(struct), (), depth)), key=str)


VIEWS: dict[str, tuple[type[Any], Callable[[str], dict[str, Any]]]] = {
    "Machine": (Machine, machine),
    "MachineClass": (MachineClass, machine_class),
}
PATHS = [(kind, path) for kind, (view, _) in VIEWS.items() for path in field_paths(view)]
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from(["name", "kind", "a"]), st.integers(0, 3), max_size=2),
)
WRITES = st.lists(
    st.tuples(st.sampled_from(PATHS), VALUES, st.sampled_from(["x", "y"])), min_size=1, max_size=4
)


def put(doc: dict[str, Any], path: Path_, value: Any) -> None:
    """Set ``value`` at ``path``, making containers (dicts, one-element lists) on the way."""
    node: Any = doc
    for step, following in zip(path, (*path[1:], None), strict=True):
        if following is None:
            break
        child = [{}] if isinstance(following, int) else {}
        if isinstance(step, int):
            if not isinstance(node, list) or not node or not isinstance(node[0], (dict, list)):
                node[:] = [child] if isinstance(node, list) else node
            node = node[0]
        else:
            if not isinstance(node.get(step), (dict, list)) or (
                isinstance(following, int) != isinstance(node.get(step), list)
            ):
                node[step] = child
            node = node[step]
    last = path[-1]
    if isinstance(last, int):
        node[:] = [value]
    else:
        node[last] = value


def fits(view: type[Any], doc: dict[str, Any]) -> bool:
    try:
        msgspec.json.decode(msgspec.json.encode(doc), type=view)
    except msgspec.ValidationError:
        return False
    return True


async def fuzz_example(writes: list[tuple[tuple[str, Path_], Any, str]]) -> None:
    async with serve_world() as emu:
        install_loose_crd(emu, "machines")
        install_loose_crd(emu, "machineclasses")
        client = Client.from_kubeconfig(str(emu.kubeconfig_path))
        informers = {kind: Informer(client, view) for kind, (view, _) in VIEWS.items()}
        barriers = {k: Barrier(emu, i, VIEWS[k][1]) for k, i in informers.items()}
        with trio.fail_after(120):
            async with trio.open_nursery() as nursery:
                for informer in informers.values():
                    nursery.start_soon(informer.run)
                    await informer.wait_for_sync()
                for (kind, path), value, name in writes:
                    current = emu.get(MACHINE_API, kind, name, "default")
                    doc = copy.deepcopy(current) if current else VIEWS[kind][1](name)
                    put(doc, path, value)
                    if current:
                        emu.update(doc)
                    else:
                        emu.create(doc)
                for kind, (view, _) in VIEWS.items():
                    await barriers[kind]()  # the watch went on past every write
                    informer = informers[kind]
                    stored = [emu.get(MACHINE_API, kind, name, "default") for name in ("x", "y")]
                    good = {d["metadata"]["name"] for d in stored if d and fits(view, d)}
                    bad = {d["metadata"]["name"] for d in stored if d and not fits(view, d)}
                    event(f"{kind}: {len(bad)} undecodable")
                    assert names(informer) == good
                    assert {k.name for k in informer.undecodable} == bad
                    for name in good | bad:
                        emu.delete(MACHINE_API, kind, name, "default")
                    await barriers[kind]()  # deleting a poison object heals the cache
                    assert names(informer) == set() and not informer.undecodable
                nursery.cancel_scope.cancel()


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(writes=WRITES)
# Inputs that once wedged a controller, kept as fixed examples so every run tries them.
@example(
    writes=[
        (("Machine", ("spec", "class")), "small", "x"),
        (("Machine", ("spec", "providerID")), 7, "y"),
        (("Machine", ("spec", "nodeTemplate", "spec", "taints", 0, "key")), 1, "x"),
        (("MachineClass", ("providerSpec",)), "a string", "x"),
    ]
)
def test_no_field_of_any_type_stops_an_informer(
    writes: list[tuple[tuple[str, Path_], Any, str]],
) -> None:
    trio.run(fuzz_example, writes, clock=trio.testing.MockClock(autojump_threshold=IO_AUTOJUMP))
