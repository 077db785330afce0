"""Sharding across processes, proven from the API server's audit log.

Three replica processes (``tests.helpers.sharding_replica``) share a ring of ConfigMaps whose
``want`` the test keeps changing. One is killed (SIGKILL), one frozen (SIGSTOP) until its
objects have moved, then resumed (it must exit 1 without writing), two join, one stops on
SIGTERM. After each change every object is reconciled by a live shard; then the audit log is
replayed in the server's order:

* each object's shard writes (stamps and drain acknowledgements) come in runs, one shard after
  another, and between two runs of different shards the sharder wrote the object (it assigned
  it anew): no shard wrote an object another had been given, so no object was written by two
  shards in overlapping terms;
* no shard write is accepted after the shard's Lease was taken over by the sharder, unless its
  fence passed before the shard was frozen (a write in flight across the freeze).
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from kubetrio.api.core import ConfigMap
from kubetrio.emulator import EmulatorOptions
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.client.typed import FENCED_AUDIT_ID_PREFIX, Client
from kubetrio.runtime.sharding.labels import drain_label, shard_label
from kubetrio.sim import serve_world
from kubetrio.testing.controlplane import ControlPlane
from kubetrio.testing.plugin import control_plane_assets
from kubetrio.testing.waiting import eventually
from tests.helpers.sharding_replica import RING

pytestmark = [pytest.mark.process, pytest.mark.slow]

OBJECTS = 30
LEASE = 4.0
# Upper bounds on a loaded machine; what a step took is reported (and in the how-to).
WITHIN = 8 * LEASE
SHARD, DRAIN = shard_label(RING), drain_label(RING)
ROOT = Path(__file__).resolve().parents[2]
WRITES = frozenset({"create", "update", "patch", "delete"})


@dataclass
class Replica:
    name: str
    process: trio.Process
    log: Path
    frozen_at: float | None = None  # time.monotonic() by which every thread had stopped


@dataclass
class Scenario:
    replicas: dict[str, Replica] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


def all_threads_stopped(pid: int) -> bool:
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except FileNotFoundError:
            continue
        states.append(stat.rsplit(")", 1)[1].split()[0])
    return bool(states) and all(state in ("T", "t") for state in states)


async def freeze(pid: int) -> float:
    os.kill(pid, signal.SIGSTOP)
    with trio.fail_after(5):
        # The kernel offers no event for "stopped": poll /proc.
        while not all_threads_stopped(pid):  # noqa: ASYNC110
            await trio.sleep(0.001)
    return time.monotonic()


async def scenario(kubeconfig: Path, namespace: str, client: Client, tmp_path: Path) -> Scenario:
    for index in range(OBJECTS):
        await client.create(
            ConfigMap,
            {"metadata": {"name": f"cm-{index:02}"}, "data": {"want": "0"}},
            namespace=namespace,
        )
    watched: Informer[ConfigMap] = Informer(client, ConfigMap, namespace=namespace)
    result = Scenario()
    replicas = result.replicas

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watched.run)
        await watched.wait_for_sync()

        async def start(name: str) -> None:
            log = tmp_path / f"{name}.log"
            args = [sys.executable, "-m", "tests.helpers.sharding_replica"]
            args += [str(kubeconfig), namespace, name]
            with log.open("wb") as stderr:
                process = await nursery.start(
                    functools.partial(
                        trio.run_process,
                        args,
                        cwd=ROOT,
                        check=False,
                        stdout=subprocess.DEVNULL,
                        stderr=stderr,
                    )
                )
            replicas[name] = Replica(name, process, log)

        async def settled(step: str, version: str, live: set[str], within: float) -> None:
            started = time.monotonic()
            for cm in watched.lister.list():
                await client.patch(
                    ConfigMap, cm.metadata.name, {"data": {"want": version}}, namespace=namespace
                )

            def check() -> None:
                items = watched.lister.list()
                assert len(items) >= OBJECTS
                owners = set()
                for cm in items:
                    if "want" not in cm.data:
                        continue  # kube-root-ca.crt
                    labels = cm.metadata.labels
                    owners.add(labels.get(SHARD))
                    assert labels.get(SHARD) in live, (cm.metadata.name, labels)
                    assert DRAIN not in labels, (cm.metadata.name, labels)
                    assert cm.data.get("seen") == version, (cm.metadata.name, cm.data)
                    assert cm.data.get("shard") == labels[SHARD], (cm.metadata.name, cm.data)
                assert live <= owners, f"shards without objects: {live - owners}"

            await eventually(check, on=[watched], timeout=within)
            result.timings[step] = round(time.monotonic() - started, 2)

        for name in ("shard-a", "shard-b", "shard-c"):
            await start(name)
        await settled("start", "0", {"shard-a", "shard-b", "shard-c"}, 60)

        replicas["shard-b"].process.kill()
        await settled("kill", "1", {"shard-a", "shard-c"}, WITHIN)

        frozen = replicas["shard-c"]
        frozen.frozen_at = await freeze(frozen.process.pid)
        await settled("freeze", "2", {"shard-a"}, WITHIN)
        os.kill(frozen.process.pid, signal.SIGCONT)
        with trio.fail_after(15):
            assert await frozen.process.wait() == 1, frozen.log.read_text()[-2000:]

        await start("shard-d")
        await settled("join", "3", {"shard-a", "shard-d"}, WITHIN)
        await start("shard-e")
        await settled("join-2", "4", {"shard-a", "shard-d", "shard-e"}, WITHIN)

        replicas["shard-a"].process.terminate()
        with trio.fail_after(15):
            assert await replicas["shard-a"].process.wait() == 0
        await settled("leave", "5", {"shard-d", "shard-e"}, WITHIN)

        for name in ("shard-d", "shard-e"):
            replicas[name].process.terminate()
        for name in ("shard-d", "shard-e"):
            with trio.fail_after(15):
                assert await replicas[name].process.wait() == 0
        nursery.cancel_scope.cancel()
    return result


def agent(event: dict[str, Any]) -> str:
    return str(event.get("userAgent", "")).rsplit(" ", 1)[-1]


def replay(audit_path: Path, result: Scenario, namespace: str) -> dict[str, Any]:
    """Walk the audit log in the server's order (see the module's docstring).

    A shard's term ends at the first write of its Lease by another identity after the shard's
    own last write of it: the sharder's takeover. (The sharder also labels live Leases with
    their state; the shard renews after those, so they end nothing.)"""
    names = set(result.replicas)
    events = []
    for line in audit_path.read_text().splitlines():
        event = json.loads(line)
        ref = event.get("objectRef", {})
        ok = 200 <= event["responseStatus"]["code"] < 300
        if event["verb"] in WRITES and ok and ref.get("namespace") == namespace:
            events.append(event)
    last_own: dict[str, int] = {}
    for index, event in enumerate(events):
        ref = event["objectRef"]
        if ref.get("resource") == "leases" and agent(event) == ref.get("name"):
            last_own[ref["name"]] = index
    term_ends: dict[str, int] = {}
    for index, event in enumerate(events):
        ref = event["objectRef"]
        lease = ref.get("name")
        if (
            ref.get("resource") == "leases"
            and lease in names
            and agent(event) != lease
            and index > last_own.get(lease, -1)
        ):
            term_ends.setdefault(lease, index)
    last_writer: dict[str, str] = {}  # object -> the shard that wrote it last
    assigned_since: dict[str, bool] = {}  # object -> a sharder write since that shard's last
    moves = 0
    violations: list[str] = []
    in_flight = 0
    shard_writes = 0
    for index, event in enumerate(events):
        who, ref = agent(event), event["objectRef"]
        if ref.get("resource") != "configmaps":
            continue
        if who in names:  # the sharder, on the leader: a drain or an assignment
            assigned_since[ref["name"]] = True
            continue
        if not who.endswith("/shard"):
            continue
        shard = who.removesuffix("/shard")
        shard_writes += 1
        audit_id = event["auditID"]
        assert audit_id.startswith(FENCED_AUDIT_ID_PREFIX), f"an unfenced shard write: {event}"
        checked_at = int(audit_id[len(FENCED_AUDIT_ID_PREFIX) :].split("-")[0]) / 1e9
        if index > term_ends.get(shard, len(events)):
            frozen_at = result.replicas[shard].frozen_at
            if frozen_at is not None and checked_at < frozen_at:
                in_flight += 1
            else:
                violations.append(f"{shard} wrote {ref.get('name')} after its Lease was taken")
        name = ref["name"]
        previous = last_writer.get(name)
        if previous is not None and previous != shard:
            moves += 1
            if not assigned_since.get(name):
                violations.append(f"{name}: {shard} wrote after {previous}, unassigned between")
        last_writer[name] = shard
        assigned_since[name] = False
    return {
        "shard_writes": shard_writes,
        "moves_seen": moves,
        "taken_over": sorted(term_ends),
        "in_flight_across_freeze": in_flight,
        "violations": violations,
    }


def check(report: dict[str, Any], result: Scenario) -> None:
    print("settle seconds:", result.timings, "audit:", report)
    assert not report["violations"], report["violations"]
    assert {"shard-b", "shard-c"} <= set(report["taken_over"]), report
    assert report["moves_seen"] > 0


async def test_replica_processes_through_kill_freeze_join_and_leave(tmp_path: Path) -> None:
    audit = tmp_path / "audit.log"
    async with serve_world(options=EmulatorOptions(audit_log_path=audit)) as emu:
        client = Client.from_url(emu.url, token=emu.token)
        result = await scenario(emu.kubeconfig_path, "default", client, tmp_path)
    check(replay(audit, result, "default"), result)


async def test_replica_processes_on_a_real_server(tmp_path: Path) -> None:
    with ControlPlane(audit=True, assets=control_plane_assets()) as plane:
        client = Client.from_kubeconfig(str(plane.kubeconfig_path))
        result = await scenario(plane.kubeconfig_path, "default", client, tmp_path)
        report = replay(plane.audit_log_path, result, "default")
    check(report, result)
