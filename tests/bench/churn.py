"""Memory under churn: does the manager's RSS stay flat while the objects it watches come and go
for minutes on end?

What is compared: the RSS of one ``kubetrio run`` (every built-in controller, as
``memory.py`` starts it) at the end of the run against its RSS after the first minute of churn
(by then its heap has held one cycle's objects once) — the same manager, the same cluster state
at every reading (every 30 s, each after a whole cycle). A cycle creates ``--pods`` Pods (the
manager caches every Pod: its drains read them) and ``--secrets`` Secrets in the machine
namespace (cached too: class secrets), waits until the API server has them all, then deletes
them all. Each reading is taken once the cycle's objects are gone, so what was cached is
freed; growth over the run is memory the process kept: a leak, or heap that fragmentation
never hands back. The emulator (``kubetrio emulator``) runs in its own process.

    python tests/bench/churn.py [--minutes 10] [--pods 2000] [--secrets 200]
    # last line: RESULT {json}; growth = last reading / the first after a minute

Not in ``all.py``: its point is the length of the run.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/churn.py``: keep this folder (queue.py!) from shadowing stdlib;
# its helpers (memory.py) still import, from the end of the path.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parent))

import argparse
import json
import tempfile
import time

import msgspec
import trio
from memory import READY_LINE, emulator, install_crds, manager_command, running

from kubetrio.runtime.client.typed import Client

NAMESPACE = "default"
# Growth of the last reading over the first that still counts as flat.
FLAT = 1.05
READ_EVERY = 30.0  # seconds between RSS readings (each after a whole cycle)
WARM_UP = 60.0


def pod(name: str) -> bytes:
    return msgspec.json.encode(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"churn": "yes"}},
            "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
        }
    )


def secret(name: str) -> bytes:
    return msgspec.json.encode(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "labels": {"churn": "yes"}},
            "stringData": {"userData": "#cloud-config\n" + "x" * 512},
        }
    )


async def cycle(client: Client, number: int, pods: int, secrets: int) -> None:
    """Create the cycle's objects, then delete them all and wait until none is left."""
    base = f"/api/v1/namespaces/{NAMESPACE}"
    writes = trio.Semaphore(16)

    async def post(path: str, body: bytes) -> None:
        async with writes:
            await client.request("POST", path, body=body)

    async with trio.open_nursery() as nursery:
        for i in range(pods):
            nursery.start_soon(post, f"{base}/pods", pod(f"churn-{number}-{i}"))
        for i in range(secrets):
            nursery.start_soon(post, f"{base}/secrets", secret(f"churn-{number}-{i}"))
    for kind in ("pods", "secrets"):
        await client.request(
            "DELETE",
            f"{base}/{kind}",
            params={"labelSelector": "churn=yes", "gracePeriodSeconds": "0"},
        )
    for kind in ("pods", "secrets"):
        while True:
            listed = msgspec.json.decode(
                await client.request(
                    "GET", f"{base}/{kind}", params={"labelSelector": "churn=yes", "limit": "1"}
                )
            )
            if not listed["items"]:
                break
            await trio.sleep(0.2)  # a benchmark on the real clock: the server's deletions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to churn")
    parser.add_argument("--pods", type=int, default=2000, help="Pods per cycle")
    parser.add_argument("--secrets", type=int, default=200, help="Secrets per cycle")
    args = parser.parse_args()
    readings: list[tuple[float, float]] = []
    number = 0
    with tempfile.TemporaryDirectory(prefix="kubetrio-churn-") as tmp:
        workdir = Path(tmp)
        with emulator(workdir) as (kubeconfig, services):
            install_crds(kubeconfig)
            command = manager_command(kubeconfig, services)
            with running(command, workdir / "kubetrio.log") as manager:
                manager.wait_for(READY_LINE)
                client = Client.from_kubeconfig(str(kubeconfig), qps=0)
                started = time.monotonic()
                number = 0
                while (elapsed := time.monotonic() - started) < args.minutes * 60:
                    trio.run(cycle, client, number, args.pods, args.secrets)
                    number += 1
                    if readings and elapsed - readings[-1][0] < READ_EVERY:
                        continue
                    rss = manager.memory()["VmRSS"]
                    readings.append((round(elapsed, 1), round(rss, 2)))
                    print(f"cycle {number:4d} at {elapsed:6.1f}s: RSS {rss:6.1f} MiB", flush=True)
                warnings = sum(" level=warn" in line for line in manager._lines)
    # The first reading past WARM_UP is the baseline: by then the heap has grown to hold a whole
    # cycle's objects once, which it keeps for the next cycle (that is reuse, not a leak).
    first = next((rss for at, rss in readings if at >= WARM_UP), readings[0][1])
    last = readings[-1][1]
    growth = last / first
    verdict = "flat" if growth <= FLAT else "GROWING"
    print(
        f"{number} cycles of {args.pods} pods and {args.secrets} secrets in "
        f"{readings[-1][0]:.0f}s: RSS {readings[0][1]:.1f} at start, {first:.1f} after a minute, "
        f"{last:.1f} at the end (x{growth:.3f}, {verdict}; "
        f"peak {max(r for _, r in readings):.1f}); manager warnings {warnings}",
        flush=True,
    )
    result = {
        "cycles": number,
        "pods_per_cycle": args.pods,
        "secrets_per_cycle": args.secrets,
        "readings": readings,
        "start_rss_mib": readings[0][1],
        "warm_rss_mib": first,
        "last_rss_mib": last,
        "growth": round(growth, 4),
        "warnings": warnings,
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
