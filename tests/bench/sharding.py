"""Sharding: memory per replica and CPU per reconcile for 1, 2, 3, 4 replicas against an
unsharded singleton, on an in-process emulator (real clock).

``--objects`` ConfigMaps (about 1 KiB of data each) in one namespace. Per configuration,
fresh replica processes (``tests.helpers.sharding_replica``: the ``stamp`` controller, 4
workers, client rate limit lifted, no simulated work) start; once every object is stamped by
its shard (the sharder has assigned them all and each shard reconciled its own), ``want`` is
bumped on every object and the run waits until every object is stamped again. Reported per
replica: RSS after that (``VmRSS``), and CPU seconds (user + system) spent during the bump
divided by the objects it reconciled. The leader also runs the sharder (a metadata-only list
and watch of every object), so its RSS is reported apart: ``sharder_extra_mib`` is the
leader's RSS minus the mean of the other shards'.

Usage: ``python tests/bench/sharding.py [--objects 10000] [--replicas 1,2,3,4]``. Last line:
``RESULT {json}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/sharding.py``: keep this folder from shadowing stdlib.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import functools
import json
import os
import subprocess
import tempfile
import time
from typing import Any

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kubetrio.api.core import ConfigMap  # noqa: E402
from kubetrio.runtime.cache.informer import Informer  # noqa: E402
from kubetrio.runtime.client.typed import Client  # noqa: E402
from kubetrio.runtime.sharding.labels import shard_label  # noqa: E402
from kubetrio.sim import serve_world  # noqa: E402
from kubetrio.testing.waiting import eventually  # noqa: E402
from tests.helpers.sharding_replica import RING  # noqa: E402

SHARD = shard_label(RING)
REPLICA = [sys.executable, "-m", "tests.helpers.sharding_replica"]
PAYLOAD = "x" * 1024
TICK = os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


async def create_objects(client: Client, namespace: str, count: int) -> None:
    send, receive = trio.open_memory_channel[int](count)
    for index in range(count):
        send.send_nowait(index)
    send.close()

    async def writer() -> None:
        async for index in receive:
            await client.create(
                ConfigMap,
                {"metadata": {"name": f"cm-{index:05}"}, "data": {"want": "0", "pad": PAYLOAD}},
                namespace=namespace,
            )

    async with trio.open_nursery() as nursery:
        for _ in range(16):
            nursery.start_soon(writer)


async def bump(client: Client, watched: Informer[ConfigMap], namespace: str, version: str) -> None:
    send, receive = trio.open_memory_channel[str](0)

    async def writer() -> None:
        async for name in receive:
            await client.patch(ConfigMap, name, {"data": {"want": version}}, namespace=namespace)

    async with trio.open_nursery() as nursery:
        for _ in range(16):
            nursery.start_soon(writer)
        async with send:
            for cm in watched.lister.list():
                await send.send(cm.metadata.name)


async def configuration(
    kubeconfig: Path,
    namespace: str,
    client: Client,
    watched: Informer[ConfigMap],
    replicas: int,
    version: int,
    objects: int,
    logs: Path,
) -> dict[str, Any]:
    """One run: ``replicas`` shards (0: the unsharded singleton)."""
    names = [f"r{replicas}-{i}" for i in range(max(replicas, 1))]
    mode = "fast" if replicas else "plain"

    def stamped(want: str) -> None:
        done = 0
        for cm in watched.lister.list():
            if cm.data.get("seen") == want and cm.data.get("shard") in names:
                done += 1
        assert done == objects, f"{done}/{objects} stamped"

    processes: list[trio.Process] = []
    async with trio.open_nursery() as nursery:
        for name in names:
            with (logs / f"{name}.log").open("wb") as stderr:
                process = await nursery.start(
                    functools.partial(
                        trio.run_process,
                        [*REPLICA, str(kubeconfig), namespace, name, mode],
                        cwd=ROOT,
                        check=False,
                        stdout=subprocess.DEVNULL,
                        stderr=stderr,
                    )
                )
            processes.append(process)
        started = time.monotonic()
        first = str(version)
        await bump(client, watched, namespace, first)
        await eventually(lambda: stamped(first), on=[watched], timeout=900, interval=5)
        assigned_s = time.monotonic() - started
        cpu_before = [cpu_seconds(p.pid) for p in processes]
        started = time.monotonic()
        second = str(version + 1)
        await bump(client, watched, namespace, second)
        await eventually(lambda: stamped(second), on=[watched], timeout=900, interval=5)
        bump_s = time.monotonic() - started
        cpu = [cpu_seconds(p.pid) - before for p, before in zip(processes, cpu_before, strict=True)]
        rss = [rss_mib(p.pid) for p in processes]
        per_shard = {
            name: sum(cm.metadata.labels.get(SHARD) == name for cm in watched.lister.list())
            for name in names
        }
        for process in processes:
            process.terminate()
        for process in processes:
            await process.wait()
    leader = max(range(len(rss)), key=rss.__getitem__)
    others = [m for i, m in enumerate(rss) if i != leader]
    return {
        "replicas": replicas,
        "rss_mib": [round(m, 1) for m in rss],
        "rss_max_mib": round(max(rss), 1),
        "rss_others_mean_mib": round(sum(others) / len(others), 1) if others else None,
        "sharder_extra_mib": round(max(rss) - sum(others) / len(others), 1) if others else None,
        "cpu_ms_per_reconcile": round(1000 * sum(cpu) / objects, 3),
        "cpu_s": [round(c, 2) for c in cpu],
        "leader_cpu_share": round(cpu[leader] / sum(cpu), 2) if sum(cpu) else None,
        "objects_per_shard": per_shard if replicas else None,
        "first_pass_s": round(assigned_s, 1),
        "bump_s": round(bump_s, 1),
    }


async def main(objects: int, counts: list[int]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        logs = Path(folder)
        async with serve_world() as emu:
            client = Client.from_url(emu.url, token=emu.token, qps=0)
            namespace = "default"
            await create_objects(client, namespace, objects)
            watched: Informer[ConfigMap] = Informer(client, ConfigMap, namespace=namespace)
            results = []
            async with trio.open_nursery() as nursery:
                nursery.start_soon(watched.run)
                await watched.wait_for_sync()
                version = 1
                for replicas in [0, *counts]:
                    result = await configuration(
                        emu.kubeconfig_path,
                        namespace,
                        client,
                        watched,
                        replicas,
                        version,
                        objects,
                        logs,
                    )
                    print(json.dumps(result), flush=True)
                    results.append(result)
                    version += 2
                nursery.cancel_scope.cancel()
    singleton = results[0]
    for result in results[1:]:
        n = result["replicas"]
        # The target: memory per shard within 1.2 x (singleton / N) plus the sharder's.
        result["rss_vs_singleton_share"] = round(
            (result["rss_others_mean_mib"] or result["rss_max_mib"])
            / (singleton["rss_max_mib"] / n),
            2,
        )
        result["cpu_vs_singleton"] = round(
            result["cpu_ms_per_reconcile"] / singleton["cpu_ms_per_reconcile"], 2
        )
    return {"objects": objects, "singleton": singleton, "sharded": results[1:]}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--replicas", default="1,2,3,4")
    args = parser.parse_args()
    counts = [int(n) for n in args.replicas.split(",")]
    print("RESULT " + json.dumps(trio.run(main, args.objects, counts)))
