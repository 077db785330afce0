"""Sharding: memory per replica and CPU per reconcile for 1, 2, 3, 4 shards against an
unsharded singleton, on the emulator and (with ``KUBEBUILDER_ASSETS``) a real kube-apiserver.

What is compared: the CPU seconds (user + system, from ``/proc``) that the shard processes
spend together per reconciled object, against the singleton's, while the same stream of
changes passes through both. Sharding is meant to spread that work, not to add to it: the
target is the shards' sum within 1.1 x the singleton's. The sharder's CPU (and RSS) is
reported apart: it runs as a process of its own (``runSharder: false`` on the shards, as
``kubetrio sharder`` runs it), since it is a cost of the ring, paid once whatever N is.

``--objects`` ConfigMaps (about 1 KiB of data each) in one namespace. Every process is a
process of its own: the API server (``kubetrio emulator``, or the control plane of
``realserver.py``), this driver, the sharder and each replica (``tests.helpers
.sharding_replica``: the ``stamp`` controller, 4 workers, client rate limit lifted, no
simulated work). Per configuration fresh processes start; once every object is stamped by its
shard (the sharder has assigned them all and each shard reconciled its own), ``want`` is
bumped on every object at ``--rate`` objects a second, the same pace for every configuration,
so each replica sees changes at the rate a live cluster would send them and batching does not
differ with the load the driver imposes, and the run waits until every object is stamped
again; ``--rounds`` times. Reported per replica: RSS after that, once every process has
trimmed its heap as ``kubetrio run`` does once a minute (``VmRSS``), and CPU seconds
spent from the first bump until every object was stamped, of the round whose shards' sum was
least (other work on a shared machine only ever adds CPU); per configuration the shards'
sum per reconcile, the sharder's per reconcile, and the API server's (only the emulator's
process is ours to read). Memory is compared above a floor measured in the same run: the RSS of
a replica and of a sharder watching an empty namespace (the interpreter, kubetrio, a manager),
which no number of shards divides: a shard's RSS above it against the singleton's above it
divided by N, and the sharder's above an idle sharder's.

Splitting one stream of changes over N processes gives each 1/N of the rate, and a process
woken for fewer changes a second spends more CPU on each (every wake-up's fixed costs are
shared by fewer events, and a process that sleeps longer wakes to colder caches). To tell
that from what sharding itself adds, the singleton is also measured at each shard's load:
1/N of the objects bumped at 1/N of the rate. ``cpu_vs_singleton_at_share`` is the shards'
sum against N times that.

Usage: ``python tests/bench/sharding.py [--objects 10000] [--rate 250] [--replicas 1,2,3,4]
[--servers emulator,real] [--quick] [--profile FOLDER]``. Last line: ``RESULT {json}``.
``--profile`` records every replica's and the sharder's stacks during the paced bump with
py-spy (on PATH or beside this interpreter), as collapsed stacks named
``<server>-<process>.txt``: where a shard's CPU goes that the singleton's does not.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/sharding.py``: keep this folder (queue.py!) from shadowing stdlib;
# its helpers (realserver.py) still import, from the end of the path.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parent))

import argparse
import contextlib
import functools
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from realserver import real_server  # noqa: E402

from kubetrio.api.coordination import Lease  # noqa: E402
from kubetrio.api.core import ConfigMap, Namespace  # noqa: E402
from kubetrio.runtime.cache.informer import EventHandler, Informer  # noqa: E402
from kubetrio.runtime.client.typed import Client  # noqa: E402
from kubetrio.runtime.sharding.labels import shard_label  # noqa: E402
from tests.helpers.sharding_replica import LEADER_LEASE, RING, TRIM_EVERY  # noqa: E402

SHARD = shard_label(RING)
REPLICA = [sys.executable, "-m", "tests.helpers.sharding_replica"]
EMULATOR = [sys.executable, "-m", "kubetrio.cmd.main", "emulator"]
PAYLOAD = "x" * 1024
TICK = os.sysconf("SC_CLK_TCK")
NAMESPACE = "default"
TIMEOUT = 900.0


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def sleeps(pid: int) -> int:
    """Times the process blocked waiting (for a socket, a timer): its voluntary context
    switches. Each costs a wake-up, and a process woken for fewer changes a second blocks
    more often per change."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    return 0


@contextlib.contextmanager
def emulator(folder: Path) -> Iterator[tuple[Path, int]]:
    """``kubetrio emulator`` in a process of its own: its kubeconfig and pid."""
    kubeconfig = folder / "emulator.kubeconfig"
    with (folder / "emulator.log").open("w+") as log:
        proc = subprocess.Popen(
            [*EMULATOR, "--kubeconfig-out", str(kubeconfig)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while "kubetrio emulator serving" not in Path(log.name).read_text():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("emulator did not start:\n" + Path(log.name).read_text())
                time.sleep(0.1)  # a process starting on the real clock
            yield kubeconfig, proc.pid
        finally:
            proc.terminate()
            proc.wait()


class Progress:
    """Which objects are stamped with the wanted version by one of the running replicas,
    counted as the driver's informer sees them (no scan of every object per event)."""

    def __init__(self, watched: Informer[ConfigMap]) -> None:
        self.want = ""
        self.names: frozenset[str] = frozenset()
        self.done: set[str] = set()
        self.complete = trio.Event()
        self.total = 0
        watched.add_handler(
            EventHandler(on_add=lambda cm, _initial: self._see(cm), on_update=self._update)
        )
        self.watched = watched

    def expect(self, want: str, names: list[str], total: int) -> None:
        self.want, self.names, self.total = want, frozenset(names), total
        self.complete = trio.Event()
        self.done = set()
        for cm in self.watched.lister.list():
            self._see(cm)

    def _update(self, _old: ConfigMap, new: ConfigMap) -> None:
        self._see(new)

    def _see(self, cm: ConfigMap) -> None:
        name = cm.metadata.name
        if cm.data.get("seen") == self.want and cm.data.get("shard") in self.names:
            self.done.add(name)
            if len(self.done) == self.total:
                self.complete.set()
        else:
            self.done.discard(name)

    async def wait(self, what: str) -> None:
        with trio.move_on_after(TIMEOUT) as scope:
            await self.complete.wait()
        if scope.cancelled_caught:
            raise SystemExit(f"{what}: {len(self.done)}/{self.total} stamped after {TIMEOUT} s")


async def create_objects(client: Client, count: int) -> None:
    limit = trio.Semaphore(16)

    async def create(index: int) -> None:
        async with limit:
            await client.create(
                ConfigMap,
                {"metadata": {"name": f"cm-{index:05}"}, "data": {"want": "0", "pad": PAYLOAD}},
                namespace=NAMESPACE,
            )

    async with trio.open_nursery() as nursery:
        for index in range(count):
            nursery.start_soon(create, index)


async def bump(client: Client, names: list[str], version: str, rate: float) -> float:
    """Patch ``want`` on every object, ``rate`` a second (unpaced when 0); the rate reached."""
    limit = trio.Semaphore(32)
    started = trio.current_time()

    async def patch(name: str) -> None:
        try:
            await client.patch(ConfigMap, name, {"data": {"want": version}}, namespace=NAMESPACE)
        finally:
            limit.release()

    async with trio.open_nursery() as nursery:
        for index, name in enumerate(names):
            if rate:
                await trio.sleep_until(started + index / rate)
            await limit.acquire()
            nursery.start_soon(patch, name)
    return len(names) / (trio.current_time() - started)


@contextlib.asynccontextmanager
async def profiled(pids: dict[str, int], where: tuple[Path, str] | None) -> AsyncIterator[None]:
    """py-spy recording each process while the body runs, into ``where``'s folder, its files
    named with its prefix (nothing when None)."""
    if where is None:
        yield
        return
    folder, prefix = where
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    recorders = [
        await trio.lowlevel.open_process(
            [
                spy,
                "record",
                "--pid",
                str(pid),
                "--format",
                "raw",
                "--rate",
                "250",
                "--nonblocking",
                "-o",
                str(folder / f"{prefix}-{name}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, pid in pids.items()
    ]
    try:
        yield
    finally:
        for recorder in recorders:
            recorder.send_signal(signal.SIGINT)
        for recorder in recorders:
            await recorder.wait()


@contextlib.asynccontextmanager
async def processes(
    commands: dict[str, list[str]], logs: Path
) -> AsyncIterator[dict[str, trio.Process]]:
    """Start each command (named), stop them all (SIGTERM) on exit."""
    started: dict[str, trio.Process] = {}
    async with trio.open_nursery() as nursery:
        for name, command in commands.items():
            with (logs / f"{name}.log").open("ab") as stderr:
                started[name] = await nursery.start(
                    functools.partial(
                        trio.run_process,
                        command,
                        cwd=ROOT,
                        check=False,
                        stdout=subprocess.DEVNULL,
                        stderr=stderr,
                    )
                )
        try:
            yield started
        finally:
            for process in started.values():
                process.terminate()
            for process in started.values():
                await process.wait()


async def paced_rounds(
    client: Client,
    progress: Progress,
    bumped: list[str],
    names: list[str],
    wants: Iterator[int],
    rate: float,
    rounds: int,
    pids: dict[str, int],
    profile: tuple[Path, str] | None,
) -> tuple[list[dict[str, float]], list[float], list[float]]:
    """``rounds`` paced bumps of ``bumped``: per round the CPU seconds of each process (and
    its sleeps, as ``"<name> sleeps"``), the seconds until every object was stamped again,
    and the rate reached. The last round is
    profiled (``--profile``)."""
    cpu: list[dict[str, float]] = []
    seconds: list[float] = []
    reached: list[float] = []
    for round_ in range(rounds):
        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        blocked = {name: sleeps(pid) for name, pid in pids.items()}
        started = time.monotonic()
        want = str(next(wants))
        progress.expect(want, names, len(bumped))
        recording = profile if round_ == rounds - 1 else None
        async with profiled(
            {name: pid for name, pid in pids.items() if name != "server"}, recording
        ):
            reached.append(await bump(client, bumped, want, rate))
            await progress.wait(f"{names}: paced bump of {len(bumped)}")
        seconds.append(time.monotonic() - started)
        figures = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
        for name, pid in pids.items():
            figures[f"{name} sleeps"] = sleeps(pid) - blocked[name]
        cpu.append(figures)
    return cpu, seconds, reached


async def configuration(
    kubeconfig: Path,
    client: Client,
    progress: Progress,
    names_of_objects: list[str],
    replicas: int,
    shares: list[int],
    wants: Iterator[int],
    rate: float,
    rounds: int,
    server_pid: int | None,
    logs: Path,
    profile: tuple[Path, str] | None,
) -> dict[str, Any]:
    """One run: ``replicas`` shards and their sharder (0: the unsharded singleton, which is
    also measured at each of ``shares``: 1/N of the objects bumped at 1/N of the rate, one
    shard's load of N)."""
    objects = len(names_of_objects)
    names = [f"r{replicas}-{i}" for i in range(max(replicas, 1))]
    mode = "shard" if replicas else "plain"
    commands = {name: [*REPLICA, str(kubeconfig), NAMESPACE, name, mode] for name in names}
    sharder = f"sharder-{replicas}"
    if replicas:
        commands[sharder] = [*REPLICA, str(kubeconfig), NAMESPACE, sharder, "sharder"]
    at_share: dict[str, float] = {}
    at_share_sleeps: dict[str, float] = {}

    def per_reconcile(seconds: float, count: int = objects) -> float:
        return round(1000 * seconds / count, 3)

    async with processes(commands, logs) as running:
        started = time.monotonic()
        first = str(next(wants))
        progress.expect(first, names, objects)
        await bump(client, names_of_objects, first, 0)
        await progress.wait(f"{replicas} shards, first pass")
        first_pass_s = time.monotonic() - started
        pids = {name: p.pid for name, p in running.items()}
        if server_pid is not None:
            pids["server"] = server_pid
        where = (profile[0], f"{profile[1]}-{replicas}") if profile else None
        rounds_cpu, bump_s, reached = await paced_rounds(
            client, progress, names_of_objects, names, wants, rate, rounds, pids, where
        )
        await trio.sleep(TRIM_EVERY + 0.5)  # every process trimmed its heap since the run
        rss = {name: rss_mib(p.pid) for name, p in running.items()}
        for share in shares:
            bumped = names_of_objects[: objects // share]
            share_cpu, _, _ = await paced_rounds(
                client, progress, bumped, names, wants, rate / share, rounds, pids, None
            )
            least = min(share_cpu, key=lambda r: r[names[0]])
            at_share[str(share)] = per_reconcile(least[names[0]], len(bumped))
            at_share_sleeps[str(share)] = round(least[f"{names[0]} sleeps"] / len(bumped), 2)
    # Each figure from the round where the shards' sum was least: interference from other
    # work on the machine (caches, the other core's load) only ever adds CPU.
    cpu = min(rounds_cpu, key=lambda r: sum(r[name] for name in names))
    shards_cpu = sum(cpu[name] for name in names)
    per_shard = {n: 0 for n in names}
    for cm in progress.watched.lister.list():
        owner = cm.metadata.labels.get(SHARD) if replicas else names[0]
        if owner in per_shard:
            per_shard[owner] += 1
    return {
        "replicas": replicas,
        "cpu_ms_per_reconcile": per_reconcile(shards_cpu),
        "cpu_ms_per_reconcile_rounds": [
            per_reconcile(sum(r[name] for name in names)) for r in rounds_cpu
        ],
        "cpu_s": [round(cpu[name], 2) for name in names],
        "sleeps_per_reconcile": round(sum(cpu[f"{name} sleeps"] for name in names) / objects, 2),
        "singleton_at_share_cpu_ms_per_reconcile": at_share or None,
        "singleton_at_share_sleeps_per_reconcile": at_share_sleeps or None,
        "sharder_cpu_ms_per_reconcile": per_reconcile(cpu[sharder]) if replicas else None,
        "server_cpu_ms_per_reconcile": per_reconcile(cpu["server"]) if server_pid else None,
        "rss_mib": [round(rss[name], 1) for name in names],
        "rss_mean_mib": round(sum(rss[name] for name in names) / len(names), 1),
        "sharder_rss_mib": round(rss[sharder], 1) if replicas else None,
        "objects_per_shard": list(per_shard.values()),
        "first_pass_s": round(first_pass_s, 1),
        "bump_s": round(max(bump_s), 1),
        "rate_reached": round(min(reached)),
    }


IDLE_NAMESPACE = "sharding-idle"


async def floors(client: Client, kubeconfig: Path, logs: Path) -> dict[str, float]:
    """The RSS of a replica and of a sharder with no object at all, in a namespace of their
    own: the interpreter, kubetrio and a manager's fixed structures, which no sharding divides.
    Measured once each has synced and trimmed its heap."""
    await client.create(Namespace, {"metadata": {"name": IDLE_NAMESPACE}})
    commands = {
        "replica": [*REPLICA, str(kubeconfig), IDLE_NAMESPACE, "idle", "plain"],
        "sharder": [*REPLICA, str(kubeconfig), IDLE_NAMESPACE, "idle-sharder", "sharder"],
    }
    async with processes(commands, logs) as running:
        for lease in (LEADER_LEASE, f"{LEADER_LEASE}-sharder"):
            with trio.fail_after(60):
                while True:
                    found = await client.get_or_none(Lease, lease, namespace=IDLE_NAMESPACE)
                    if found is not None and found.spec.holder_identity:
                        break
                    await trio.sleep(0.2)  # a bench on the real clock: the process starting
        await trio.sleep(TRIM_EVERY + 0.5)
        return {name: round(rss_mib(p.pid), 1) for name, p in running.items()}


async def measure(
    kubeconfig: Path,
    server_pid: int | None,
    objects: int,
    counts: list[int],
    rate: float,
    rounds: int,
    profile: tuple[Path, str] | None,
) -> dict[str, Any]:
    client = Client.from_kubeconfig(str(kubeconfig), qps=0)
    await create_objects(client, objects)
    watched: Informer[ConfigMap] = Informer(client, ConfigMap, namespace=NAMESPACE)
    results = []
    with tempfile.TemporaryDirectory(prefix="kubetrio-sharding-") as folder:
        floor = await floors(client, kubeconfig, Path(folder))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watched.run)
            await watched.wait_for_sync()
            progress = Progress(watched)
            names = sorted(cm.metadata.name for cm in watched.lister.list())
            wants = itertools.count(1)
            for replicas in [0, *counts]:
                result = await configuration(
                    kubeconfig,
                    client,
                    progress,
                    names,
                    replicas,
                    [] if replicas else [n for n in counts if n > 1],
                    wants,
                    rate,
                    rounds,
                    server_pid,
                    Path(folder),
                    profile,
                )
                print(json.dumps(result), flush=True)
                results.append(result)
            nursery.cancel_scope.cancel()
    singleton = results[0]
    singleton["rss_floor_mib"] = floor["replica"]
    singleton["sharder_rss_floor_mib"] = floor["sharder"]
    cached = singleton["rss_mean_mib"] - floor["replica"]
    for result in results[1:]:
        n = result["replicas"]
        # Memory: per shard within 1.2 x (singleton / N) + a constant; the constant is the
        # floor, what a replica holds with no object at all.
        result["rss_vs_singleton_share"] = round(
            result["rss_mean_mib"] / (singleton["rss_mean_mib"] / n), 2
        )
        result["rss_above_floor_vs_singleton_share"] = round(
            (result["rss_mean_mib"] - floor["replica"]) / (cached / n), 2
        )
        # What the sharder holds beyond an idle one: its store, and its connections (up to
        # concurrent_moves of them).
        result["sharder_above_floor_mib"] = round(result["sharder_rss_mib"] - floor["sharder"], 1)
        # CPU: the shards' sum within 1.1 x the singleton's.
        result["cpu_vs_singleton"] = round(
            result["cpu_ms_per_reconcile"] / singleton["cpu_ms_per_reconcile"], 2
        )
        # What sharding adds beyond each replica seeing 1/N of the changes: the shards' sum
        # against N singletons each given one shard's load.
        share = (singleton["singleton_at_share_cpu_ms_per_reconcile"] or {}).get(str(n))
        result["cpu_vs_singleton_at_share"] = (
            round(result["cpu_ms_per_reconcile"] / share, 2) if share else None
        )
    return {"singleton": singleton, "sharded": results[1:]}


def table(name: str, figures: dict[str, Any]) -> str:
    rows = [figures["singleton"], *figures["sharded"]]
    head = ["singleton", *(f"{r['replicas']} shards" for r in rows[1:])]
    lines = [f"{name}: " + " | ".join(head)]

    def row(label: str, cells: list[Any]) -> None:
        lines.append(f"  {label:<34} " + " | ".join("—" if c is None else str(c) for c in cells))

    row("CPU ms / reconcile, shards' sum", [r["cpu_ms_per_reconcile"] for r in rows])
    row("  x singleton", [None, *(r["cpu_vs_singleton"] for r in rows[1:])])
    row("  rounds", [r["cpu_ms_per_reconcile_rounds"] for r in rows])
    row("  per shard, s", [r["cpu_s"] for r in rows])
    row("sleeps / reconcile, shards' sum", [r["sleeps_per_reconcile"] for r in rows])
    shares = rows[0]["singleton_at_share_cpu_ms_per_reconcile"] or {}
    row(
        "singleton at 1/N load, ms / reconcile",
        [None, *(shares.get(str(r["replicas"])) for r in rows[1:])],
    )
    row("  shards' sum x that", [None, *(r["cpu_vs_singleton_at_share"] for r in rows[1:])])
    sleeps = rows[0]["singleton_at_share_sleeps_per_reconcile"] or {}
    row("  its sleeps / reconcile", [None, *(sleeps.get(str(r["replicas"])) for r in rows[1:])])
    row("sharder CPU ms / reconcile", [r["sharder_cpu_ms_per_reconcile"] for r in rows])
    row("server CPU ms / reconcile", [r["server_cpu_ms_per_reconcile"] for r in rows])
    row("RSS per shard, MiB", [r["rss_mib"] for r in rows])
    row(
        f"  above the floor ({rows[0]['rss_floor_mib']}) x singleton's / N",
        [None, *(r["rss_above_floor_vs_singleton_share"] for r in rows[1:])],
    )
    row("sharder RSS, MiB", [r["sharder_rss_mib"] for r in rows])
    row(
        f"  above an idle sharder's ({rows[0]['sharder_rss_floor_mib']})",
        [None, *(r["sharder_above_floor_mib"] for r in rows[1:])],
    )
    row("bump s (rate reached /s)", [f"{r['bump_s']} ({r['rate_reached']})" for r in rows])
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=250.0, help="bumps a second (0: unpaced)")
    parser.add_argument("--rounds", type=int, default=3, help="paced bumps per configuration")
    parser.add_argument("--replicas", default="1,2,3,4")
    parser.add_argument("--servers", default="emulator,real")
    parser.add_argument(
        "--quick", action="store_true", help="2 000 objects, 1 and 2 shards, 2 rounds"
    )
    parser.add_argument("--profile", type=Path, help="py-spy stacks of the bump, into FOLDER")
    args = parser.parse_args()
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    if args.quick:
        args.objects, args.replicas, args.rounds = 2000, "1,2", 2
    counts = [int(n) for n in args.replicas.split(",")]
    servers = args.servers.split(",")
    result: dict[str, Any] = {"objects": args.objects, "rate": args.rate}
    with tempfile.TemporaryDirectory(prefix="kubetrio-sharding-emu-") as folder:
        if "emulator" in servers:
            with emulator(Path(folder)) as (kubeconfig, pid):
                result["emulator"] = trio.run(
                    measure,
                    kubeconfig,
                    pid,
                    args.objects,
                    counts,
                    args.rate,
                    args.rounds,
                    args.profile and (args.profile, "emulator"),
                )
            print(table("emulator", result["emulator"]), flush=True)
    if "real" in servers:
        with real_server() as kubeconfig:
            if kubeconfig is not None:
                result["real"] = trio.run(
                    measure,
                    kubeconfig,
                    None,
                    args.objects,
                    counts,
                    args.rate,
                    args.rounds,
                    args.profile and (args.profile, "real"),
                )
                print(table("real kube-apiserver", result["real"]), flush=True)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
