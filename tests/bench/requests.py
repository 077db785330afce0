"""Client CPU per API request: the ways a request can leave a trio program, side by side.

The emulator runs in a child process (``--emulator-child``), so this process's CPU
(``time.process_time()``: user + system, all threads) is the client's alone. Every variant
makes the same requests to the same emulator: ``--objects`` ConfigMap lifecycles of four
requests each (POST, GET, merge PATCH, DELETE, each answered 200/201), ``--concurrency``
lifecycles at a time, after a warm-up round that opens the connections. Variants:

* ``urllib3`` — one ``urllib3.PoolManager`` called directly in a worker thread per request,
  with a bearer token (no requests; a thread hop per request).
* ``iothread`` — fewer thread hops: the same urllib3 pool driven by one long-lived I/O thread
  fed by a queue; answers come back to trio through ``run_sync_soon`` (no thread start, no
  ``to_thread`` bookkeeping; one thread, so the requests are sent one at a time).
* ``wire`` — the trio-native HTTP/1.1 client (``kubetrio.runtime.client.wire`` over
  ``kubetrio.runtime.http``: llhttp's parser on kept-alive trio streams) through the full
  ``Client``; ``wire-raw`` is the same exchange called directly, bytes in and out, to compare
  with the two raw variants.

The ``Client`` variant includes what the client does around the exchange (rate limiter off,
metrics, msgspec decoding of typed ConfigMaps); the raw variants return bytes and skip it, so
they flatter themselves by that much. Printed: CPU µs per request and wall time per variant, and
each variant's CPU over ``urllib3``'s. Last line ``RESULT {json}``.

This comparison is why ``Client`` uses ``wire``: it costs the least CPU per request. Dropping
requests but keeping a thread hop saves part of the cost, and one long-lived I/O thread saves
little more (the hand-off back to trio stays, and one thread serialises the requests); only
without the threads and requests' layers does the cost fall to a fraction. The ``thread``
variant of earlier runs — pykube-ng's ``requests`` session in a worker thread per request,
through the full ``Client`` — is gone with that transport: ``Client`` has the trio-native path
only. The figures, with when and on what machine: ``docs/performance.md``.

``python tests/bench/requests.py [--objects N] [--concurrency C] [--rounds R]``; CI size:
``--objects 300 --rounds 1``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/requests.py``: keep this folder (requests.py, queue.py!) from
# shadowing the libraries of the same names.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import json
import queue
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio
import urllib3

from kubetrio.api.core import ConfigMap
from kubetrio.runtime.client.typed import Client

TOKEN = "kubetrio-bench"
NAMESPACE = "default"
Raw = Callable[[str, str, bytes | None, str], Awaitable[bytes]]


def emulator_child() -> None:
    from kubetrio.emulator import EmulatorOptions
    from kubetrio.sim import serve_world

    async def main() -> None:
        async with serve_world(options=EmulatorOptions(token=TOKEN)) as emu:
            print(f"url={emu.url}", flush=True)
            await trio.sleep_forever()

    trio.run(main)


def configmap(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NAMESPACE}, "data": {"k": "v"}}


async def lifecycle_client(client: Client, name: str) -> None:
    await client.create(ConfigMap, configmap(name))
    await client.get(ConfigMap, name, namespace=NAMESPACE)
    await client.patch(ConfigMap, name, {"data": {"k": "w"}}, namespace=NAMESPACE)
    await client.delete(ConfigMap, name, namespace=NAMESPACE)


async def lifecycle_raw(send: Raw, name: str) -> None:
    base = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    doc = {"apiVersion": "v1", "kind": "ConfigMap", **configmap(name)}
    await send("POST", base, msgspec.json.encode(doc), "application/json")
    await send("GET", f"{base}/{name}", None, "application/json")
    patch = msgspec.json.encode({"data": {"k": "w"}})
    await send("PATCH", f"{base}/{name}", patch, "application/merge-patch+json")
    await send("DELETE", f"{base}/{name}", None, "application/json")


def urllib3_sender(url: str) -> tuple[urllib3.PoolManager, Callable[..., bytes]]:
    pool = urllib3.PoolManager(maxsize=64)
    auth = f"Bearer {TOKEN}"

    def blocking(method: str, path: str, body: bytes | None, content_type: str) -> bytes:
        headers = {"Accept": "application/json", "Authorization": auth}
        if body is not None:
            headers["Content-Type"] = content_type
        response = pool.request(method, url + path, body=body, headers=headers, retries=False)
        if response.status >= 400:
            raise RuntimeError(f"{method} {path}: {response.status}")
        return bytes(response.data)

    return pool, blocking


def urllib3_in_threads(url: str) -> Raw:
    _, blocking = urllib3_sender(url)
    limiter = trio.CapacityLimiter(64)

    async def send(method: str, path: str, body: bytes | None, content_type: str) -> bytes:
        return await trio.to_thread.run_sync(
            blocking, method, path, body, content_type, limiter=limiter
        )

    return send


class IoThread:
    """One long-lived thread sending the requests queued to it; answers are handed back to
    trio with ``run_sync_soon`` (no per-request thread start or round trip)."""

    def __init__(self, url: str) -> None:
        _, self.blocking = urllib3_sender(url)
        self.token = trio.lowlevel.current_trio_token()
        self.jobs: queue.SimpleQueue[tuple[tuple[Any, ...], Callable[[Any], None]] | None] = (
            queue.SimpleQueue()
        )
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self) -> None:
        while (job := self.jobs.get()) is not None:
            args, done = job
            try:
                outcome: Any = self.blocking(*args)
            except Exception as error:
                outcome = error
            self.token.run_sync_soon(done, outcome)

    async def send(self, method: str, path: str, body: bytes | None, content_type: str) -> bytes:
        task = trio.lowlevel.current_task()
        box: list[Any] = []

        def done(outcome: Any) -> None:
            box.append(outcome)
            trio.lowlevel.reschedule(task)

        self.jobs.put(((method, path, body, content_type), done))
        await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.FAILED)
        if isinstance(box[0], Exception):
            raise box[0]
        result: bytes = box[0]
        return result

    def close(self) -> None:
        self.jobs.put(None)


async def measure(
    run_one: Callable[[str], Awaitable[None]], prefix: str, objects: int, concurrency: int
) -> tuple[float, float]:
    """(CPU s, wall s) for ``objects`` lifecycles, after a warm-up round."""
    limiter = trio.CapacityLimiter(concurrency)

    async def one(name: str) -> None:
        async with limiter:
            await run_one(name)

    async def batch(tag: str, n: int) -> None:
        async with trio.open_nursery() as nursery:
            for i in range(n):
                nursery.start_soon(one, f"{prefix}-{tag}-{i}")

    await batch("warm", concurrency)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await batch("run", objects)
    return time.process_time() - cpu0, time.perf_counter() - wall0


async def run(url: str, objects: int, concurrency: int, rounds: int) -> dict[str, Any]:
    wired = Client.from_url(url, token=TOKEN, qps=0)
    raw_threads = urllib3_in_threads(url)
    io_thread = IoThread(url)
    wire = wired.wire

    async def wire_raw(method: str, path: str, body: bytes | None, content_type: str) -> bytes:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        status, _, _, payload = await wire.exchange(method, path, headers, body, read_timeout=30)
        if status >= 400:
            raise RuntimeError(f"{method} {path}: {status}")
        return payload

    variants: dict[str, Callable[[str], Awaitable[None]]] = {
        "urllib3": lambda name: lifecycle_raw(raw_threads, name),
        "iothread": lambda name: lifecycle_raw(io_thread.send, name),
        "wire": lambda name: lifecycle_client(wired, name),
        "wire-raw": lambda name: lifecycle_raw(wire_raw, name),
    }
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    wall: dict[str, list[float]] = {name: [] for name in variants}
    for round_ in range(rounds):  # interleaved, so a busy moment of the machine hits all
        for name, run_one in variants.items():
            spent, took = await measure(run_one, f"{name}{round_}", objects, concurrency)
            cpu[name].append(spent)
            wall[name].append(took)
    io_thread.close()
    requests = 4 * objects * rounds
    cpu_us = {name: sum(v) / requests * 1e6 for name, v in cpu.items()}
    wall_us = {name: sum(v) / requests * 1e6 for name, v in wall.items()}
    return {
        "requests_per_variant": requests,
        "concurrency": concurrency,
        "cpu_us_per_request": {k: round(v, 1) for k, v in cpu_us.items()},
        "wall_us_per_request": {k: round(v, 1) for k, v in wall_us.items()},
        "cpu_over_urllib3": {k: round(v / cpu_us["urllib3"], 3) for k, v in cpu_us.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--emulator-child", action="store_true")
    args = parser.parse_args()
    if args.emulator_child:
        emulator_child()
        return
    child = subprocess.Popen(
        [sys.executable, __file__, "--emulator-child"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        if not line.startswith("url="):
            raise SystemExit(f"emulator child did not start: {line!r}")
        result = trio.run(run, line[4:], args.objects, args.concurrency, args.rounds)
    finally:
        child.terminate()
        child.wait(15)
    for name, us in result["cpu_us_per_request"].items():
        print(
            f"{name:>9}: {us:7.1f} µs CPU/request, {result['wall_us_per_request'][name]:7.1f} "
            f"µs wall/request, CPU {result['cpu_over_urllib3'][name]:.3f} x urllib3"
        )
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
