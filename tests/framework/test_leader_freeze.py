"""Never two leaders, proven from the API server's audit log: three ``kubetrio run
--leader-elect`` processes under a steady load of writes; the leader is frozen (SIGSTOP) past
its lease until another takes over, then resumed (SIGCONT), for several rounds.

The emulator attributes each request to its manager (the User-Agent ends with the manager's
identity) and records them in the order it answered them. Replaying that log, a write accepted
from a manager while another identity holds the lease (its last accepted Lease write) is
allowed only if it was in flight across the freeze: every fenced write carries, in its
Audit-ID, the ``CLOCK_MONOTONIC`` instant its last fence check passed, and such a write must
have been checked before the test saw every thread of the process stopped.

Some writes are held up in the API server for longer than a takeover (injected latency on a
few ConfigMap patches), so in-flight writes do land after handovers: the replay must tell them
apart from writes sent after the freeze, not merely find none. A manager that was not frozen
(killed at the end, or one that missed a renewal on a loaded machine) may likewise have a slow
write answered after the handover: that is allowed only if the server received it while that
manager held the lease, by the lease writes in the same log.
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import trio

from kubetrio.api.coordination import Lease
from kubetrio.api.core import ConfigMap
from kubetrio.emulator import EmulatorOptions, FaultRule
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.client.typed import FENCED_AUDIT_ID_PREFIX, Client
from kubetrio.sim import serve_world
from kubetrio.testing.controlplane import ControlPlane
from kubetrio.testing.plugin import control_plane_assets
from tests.helpers.cli import FAST_LEASE, PLUGIN, Watcher, config_map, environment, kubetrio
from tests.helpers.plugins import install_plugin

LEASE = "kubetrio-leader"
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
ROUNDS = 3
REAL_ROUNDS = 2  # the real server's run costs a control plane's start; two handovers suffice
LEASE_SECONDS = 4.0  # FAST_LEASE's
LOAD_INTERVAL = 0.05  # a ConfigMap to stamp every 50 ms: writes flow all the time
SLOW_WRITE = 6.0  # seconds a few writes spend in the server: longer than a takeover


@pytest.fixture
def plugins(tmp_path: Path) -> Path:
    return install_plugin(tmp_path / "plugins", PLUGIN, {"stamp": "setup_stamp"})


@dataclass
class Manager:
    process: trio.Process
    log: Path
    started_at: float

    @property
    def pid(self) -> int:
        return self.process.pid

    def identity(self) -> str | None:
        found = re.search(r'"identity": ?"([^"]+)"', self.log.read_text(errors="replace"))
        return found.group(1) if found else None


@dataclass
class Round:
    frozen: str  # the identity frozen
    stopped_at: float  # CLOCK_MONOTONIC once every thread was seen stopped
    resumed_at: float
    takeover: float  # seconds from the stop to another holder in the Lease
    successor: str = ""
    attempted: int = 0  # writes of the frozen manager that reached the server after handover
    accepted: int = 0
    in_flight: int = 0  # of the accepted: checked by the fence before the stop
    refused_locally: int = 0  # reconciles that met NotLeader in the resumed process
    exit_line: str = ""


def all_threads_stopped(pid: int) -> bool:
    tasks = Path(f"/proc/{pid}/task")
    states = []
    for task in tasks.iterdir():
        try:
            stat = (task / "stat").read_text()
        except FileNotFoundError:
            continue  # a thread that ended
        states.append(stat.rsplit(")", 1)[1].split()[0])
    return bool(states) and all(state in ("T", "t") for state in states)


async def freeze(pid: int) -> float:
    """SIGSTOP, then the monotonic instant by which every thread had stopped (no fence check
    of that process can have passed later than this)."""
    os.kill(pid, signal.SIGSTOP)
    with trio.fail_after(5):
        # The kernel offers no event for "stopped": poll /proc.
        while not all_threads_stopped(pid):  # noqa: ASYNC110
            await trio.sleep(0.001)
    return time.monotonic()


def identity_of(user_agent: str) -> str:
    return user_agent.rsplit(" ", 1)[-1]


async def freeze_rounds(
    kubeconfig: Path,
    create: Callable[[dict[str, Any]], Awaitable[object]],
    client: Client,
    plugins: Path,
    tmp_path: Path,
    rounds_wanted: int,
) -> tuple[list[Round], list[Manager]]:
    """Three ``kubetrio run --leader-elect`` on ``kubeconfig`` under a steady load of
    ConfigMaps to stamp (made with ``create``); ``rounds_wanted`` times the leader is frozen
    until another holds the Lease, then resumed: it must exit with its one line. Ends with a
    fresh manager taking over and stopping cleanly."""
    leases = Watcher(Informer(client, Lease, namespace="default"))
    managers: list[Manager] = []
    rounds: list[Round] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(leases.informer.run)

        async def start_manager() -> Manager:
            log = tmp_path / f"manager-{len(managers)}.log"
            args = kubetrio(
                "run",
                "--kubeconfig",
                str(kubeconfig),
                "--metrics-bind-address",
                "127.0.0.1:0",
                "--health-probe-bind-address",
                "127.0.0.1:0",
                "--controllers",
                "stamp",
                "--log-format",
                "json",
                *FAST_LEASE,
            )
            with log.open("wb") as stderr:
                process = await nursery.start(
                    functools.partial(
                        trio.run_process,
                        args,
                        env=environment(plugins),
                        check=False,
                        stdout=subprocess.DEVNULL,
                        stderr=stderr,
                    )
                )
            manager = Manager(process, log, time.monotonic())
            managers.append(manager)
            return manager

        for _ in range(3):
            await start_manager()

        async def load() -> None:
            n = 0
            while True:
                await create(config_map(f"cm-{n:05d}", stamp="yes"))
                n += 1
                await trio.sleep(LOAD_INTERVAL)

        nursery.start_soon(load)

        def holder() -> str:
            lease = leases.informer.lister.get("default", LEASE)
            return (lease.spec.holder_identity or "") if lease is not None else ""

        def by_identity(identity: str) -> Manager:
            for manager in managers:
                if manager.identity() == identity:
                    return manager
            raise AssertionError(f"no manager logged identity {identity}")

        for _ in range(rounds_wanted):
            await leases.wait_for(lambda: holder() != "", seconds=30)
            leader_identity = holder()
            leader = by_identity(leader_identity)
            stopped_at = await freeze(leader.pid)
            frozen = leader_identity
            await leases.wait_for(lambda: holder() not in ("", frozen), seconds=20)  # noqa: B023
            takeover = time.monotonic() - stopped_at
            successor = holder()
            resumed_at = time.monotonic()
            os.kill(leader.pid, signal.SIGCONT)
            with trio.fail_after(15):
                code = await leader.process.wait()
            lines = leader.log.read_text(errors="replace").strip().splitlines()
            assert code == 1, lines[-5:]
            assert not any("Traceback" in line for line in lines), "\n".join(lines)
            rounds.append(
                Round(
                    leader_identity,
                    stopped_at,
                    resumed_at,
                    takeover,
                    successor,
                    refused_locally=sum("not the leader" in line for line in lines),
                    exit_line=lines[-1],
                )
            )
            await start_manager()  # three candidates again

        # A fresh manager takes over: all but the newest are killed outright.
        newest = managers[-1]
        for manager in managers[:-1]:
            if manager.process.returncode is None:
                manager.process.kill()
        # Held, and known to be held by the manager itself (its own acquire answered: the
        # server's record changes before the manager hears back, and a manager stopped while
        # still campaigning has nothing to release). Its renewals wake the wait.
        await leases.wait_for(
            lambda: (
                newest.identity() is not None
                and holder() == newest.identity()
                and "acquired leader lease" in newest.log.read_text(errors="replace")
            ),
            seconds=30,
        )
        newest.process.terminate()
        with trio.fail_after(15):
            assert await newest.process.wait() == 0
        nursery.cancel_scope.cancel()
    return rounds, managers


def check_rounds(report: dict[str, Any], rounds: list[Round]) -> None:
    print("RESULT", json.dumps(report))
    for r in rounds:
        # Woken past its deadline, or seeing the successor first: either way, one line.
        assert r.exit_line.startswith("kubetrio: lease default/kubetrio-leader: "), r.exit_line
        assert r.exit_line.endswith("; exiting so a restart can campaign again"), r.exit_line
    # The server's own log shows each frozen leader's Lease taken by another identity.
    assert report["handed_over"] == sorted(r.frozen for r in rounds), report
    assert report["violations"] == [], report["violations"]


@pytest.mark.process
@pytest.mark.slow
async def test_a_frozen_leader_writes_nothing_after_the_handover(
    plugins: Path, tmp_path: Path
) -> None:
    audit_path = tmp_path / "audit.log"
    async with serve_world(options=EmulatorOptions(audit_log_path=audit_path)) as emu:
        emu.faults.add(
            FaultRule(verb="patch", resource="configmaps", latency=SLOW_WRITE, probability=0.05)
        )

        async def create(doc: dict[str, Any]) -> None:
            emu.create(doc)

        client = Client.from_url(emu.url, token=emu.token)
        rounds, managers = await freeze_rounds(
            emu.kubeconfig_path, create, client, plugins, tmp_path, ROUNDS
        )
    report = replay(audit_path, rounds, {m.identity() or "" for m in managers})
    check_rounds(report, rounds)


@pytest.mark.process
@pytest.mark.slow
async def test_a_frozen_leader_writes_nothing_after_the_handover_on_a_real_server(
    plugins: Path, tmp_path: Path
) -> None:
    """The same on a real kube-apiserver, from its own audit log: the Audit-ID each fenced
    write carries is the one the server logs, the User-Agent names the manager, and the Lease
    writes it accepted say who held it when."""
    with ControlPlane(audit=True, assets=control_plane_assets()) as plane:
        client = Client.from_kubeconfig(str(plane.kubeconfig_path))

        async def create(doc: dict[str, Any]) -> None:
            await client.create(ConfigMap, doc, namespace="default")

        rounds, managers = await freeze_rounds(
            plane.kubeconfig_path, create, client, plugins, tmp_path, REAL_ROUNDS
        )
        report = replay(plane.audit_log_path, rounds, {m.identity() or "" for m in managers})
        lease = await client.get(Lease, LEASE, namespace="default")
    check_rounds(report, rounds)
    # The server's Lease counted every change of holder: each round's, and the newest's
    # taking over at the end; the newest released it when it stopped.
    assert (lease.spec.lease_transitions or 0) >= REAL_ROUNDS + 1, lease.spec
    assert not lease.spec.holder_identity, lease.spec
    # The real server's log saw the handovers: each frozen leader's successor took the Lease.
    assert all(r["takeover_seconds"] >= LEASE_SECONDS - 1 for r in report["rounds"]), report
    assert len(report["accepted_writes_by_manager"]) >= 2, report


def _instant(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp)


def replay(audit_path: Path, rounds: list[Round], identities: set[str]) -> dict[str, Any]:
    """Walk the audit log in the server's order: who holds the lease, and who writes."""
    holder = ""
    violations: list[dict[str, Any]] = []
    other_in_flight = 0  # accepted after a handover, received by the server before it
    stamped_by: dict[str, int] = {}
    round_of = {r.frozen: r for r in rounds}
    handed_over: set[str] = set()
    # Each identity's tenures as the server saw them: [acquired, lost) by its lease writes.
    tenures: dict[str, list[list[datetime]]] = {}
    for line in audit_path.read_text().splitlines():
        event = json.loads(line)
        who = identity_of(event.get("userAgent", ""))
        if who not in identities:
            continue  # the test's own informer
        ref = event.get("objectRef", {})
        code = event["responseStatus"]["code"]
        ok = 200 <= code < 300
        if ref.get("resource") == "leases" and ref.get("name") == LEASE:
            if event["verb"] in WRITE_VERBS and ok:
                if who != holder:
                    at = _instant(event["stageTimestamp"])
                    if holder:
                        tenures[holder][-1][1] = at
                    tenures.setdefault(who, []).append([at, datetime.max.replace(tzinfo=UTC)])
                if holder and who != holder and holder in round_of:
                    handed_over.add(holder)
                    round_of[holder].successor = who
                holder = who
            continue
        if event["verb"] not in WRITE_VERBS:
            continue
        audit_id = event["auditID"]
        assert audit_id.startswith(FENCED_AUDIT_ID_PREFIX), f"an unfenced write: {event}"
        checked_at = int(audit_id[len(FENCED_AUDIT_ID_PREFIX) :].split("-")[0]) / 1e9
        if ok:
            stamped_by[who] = stamped_by.get(who, 0) + 1
        frozen = round_of.get(who)
        if frozen is not None and who in handed_over:
            frozen.attempted += 1
            frozen.accepted += ok
            if ok and checked_at < frozen.stopped_at:
                frozen.in_flight += 1
        if ok and who != holder:
            in_flight = frozen is not None and checked_at < frozen.stopped_at
            # The server had it before the lease changed hands (a leader killed, or too slow
            # to renew, while one of the slow writes was in the server): in flight too.
            received = _instant(event["requestReceivedTimestamp"])
            received_as_holder = any(start <= received < end for start, end in tenures.get(who, []))
            if received_as_holder and not in_flight:
                other_in_flight += 1
            if not (in_flight or received_as_holder):
                violations.append(
                    {"writer": who, "holder": holder, "checked_at": checked_at, "event": event}
                )
    return {
        "rounds": [
            {
                "takeover_seconds": round(r.takeover, 2),
                "lease_seconds": LEASE_SECONDS,
                "attempted_after_handover": r.attempted,
                "accepted_after_handover": r.accepted,
                "accepted_in_flight": r.in_flight,
                "refused_by_fence": r.refused_locally,
                "frozen_seconds": round(r.resumed_at - r.stopped_at, 2),
            }
            for r in rounds
        ],
        "accepted_writes_by_manager": sorted(stamped_by.values()),
        "accepted_in_flight_not_frozen": other_in_flight,
        "handed_over": sorted(handed_over),  # the frozen whose Lease another took, per the log
        "violations": violations,
    }


def _audit(who: str, verb: str, resource: str, name: str, received: str, answered: str) -> str:
    return json.dumps(
        {
            "userAgent": f"kubetrio/v0.1.0 (linux/amd64) {who}",
            "objectRef": {"resource": resource, "name": name},
            "responseStatus": {"code": 200},
            "verb": verb,
            "auditID": f"{FENCED_AUDIT_ID_PREFIX}1000000000-x",
            "requestReceivedTimestamp": f"2026-01-01T00:00:{received}Z",
            "stageTimestamp": f"2026-01-01T00:00:{answered}Z",
        }
    )


def test_replay_allows_a_write_received_before_the_handover_and_only_that(
    tmp_path: Path,
) -> None:
    """Pure logic: ``a`` (never frozen) leads, ``b`` takes the lease at 10 s; a's write
    received at 09 s and answered at 12 s was in flight; one received at 11 s is a violation."""
    log = tmp_path / "audit.log"
    lines = [
        _audit("a", "update", "leases", LEASE, "00.000000", "00.000000"),
        _audit("b", "update", "leases", LEASE, "10.000000", "10.000000"),
        _audit("a", "patch", "configmaps", "slow", "09.000000", "12.000000"),
    ]
    log.write_text("\n".join(lines) + "\n")
    report = replay(log, [], {"a", "b"})
    assert report["violations"] == []
    assert report["accepted_in_flight_not_frozen"] == 1
    lines.append(_audit("a", "patch", "configmaps", "late", "11.000000", "11.500000"))
    log.write_text("\n".join(lines) + "\n")
    [violation] = replay(log, [], {"a", "b"})["violations"]
    assert (violation["writer"], violation["holder"]) == ("a", "b")
