"""What an admission webhook costs a write: Machine creates per second through the emulator,
without and with the machine controller's validating webhook (``--webhooks``).

Each run gets a fresh emulator (the machine CRDs installed) and the same client and the same
Machines, created ``--concurrency`` at a time; with the webhook, a manager in the same process
serves only the Machine validator (no controllers, so nothing else competes) and the generated
``ValidatingWebhookConfiguration`` points the emulator at it (``as_url``, its self-signed CA).
Every create is then one AdmissionReview over TLS from the emulator to the manager, as
kube-apiserver makes it. The two runs alternate ``--rounds`` times; the figure is the ratio of
the median throughputs (with ÷ without), with the TLS connections the emulator opened to the
webhook (it keeps them alive, as kube-apiserver does: about ``--concurrency``, not one per
create).

    python tests/bench/webhooks.py [--machines 400] [--rounds 3] [--quick]

Last line: ``RESULT {json}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/webhooks.py``: keep this folder from shadowing stdlib modules.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import argparse
import json
import statistics
import time
from typing import Any

import trio

from kubetrio.api.machine import Machine
from kubetrio.cmd.assets import crd_documents
from kubetrio.cmd.webhooks import documents
from kubetrio.controllers.machine import webhooks
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.webhook.manifest import as_url
from kubetrio.sim import serve_world


def machine(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "machine.sapcloud.io/v1alpha1",
        "kind": "Machine",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "class": {"kind": "MachineClass", "name": "small"},
            "machineConfiguration": {"drainTimeout": "5m"},
        },
    }


async def creates(client: Client, count: int, concurrency: int, prefix: str = "m") -> float:
    """Creates per second of ``count`` machines, ``concurrency`` in flight."""
    names = iter(range(count))

    async def worker() -> None:
        for i in names:
            await client.create(Machine, machine(f"{prefix}{i}"), namespace="default")

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(worker)
    return count / (time.perf_counter() - started)


async def install(emu: Emulator, manager: Manager | None) -> None:
    for crd in crd_documents():
        emu.create(crd)
    if manager is not None:
        ca = manager.webhooks.ca_pem
        assert ca is not None
        base = f"https://127.0.0.1:{manager.bound_ports['webhook']}"
        for doc in documents(["machine"], "kubetrio-system"):
            emu.create(as_url(doc, base, ca))


async def one_run(count: int, concurrency: int, with_webhook: bool) -> tuple[float, int, int]:
    async with serve_world() as emu:
        client = Client.from_url(emu.url, token=emu.token, registry=None, qps=0)
        async with trio.open_nursery() as nursery:
            manager = None
            if with_webhook:
                manager = Manager(
                    client,
                    metrics_bind_address="0",
                    health_probe_bind_address="0",
                    webhook_bind_address="127.0.0.1:0",
                )
                webhooks.register(manager, ["sim"])
                await nursery.start(manager.run)
            await install(emu, manager)
            await creates(client, 5, 1, "warm")  # warm up: connections, the CRD's decoders
            rate = await creates(client, count, concurrency)
            reviews = 0
            if manager is not None:
                reviews = int(
                    manager.registry.get_sample_value(
                        "controller_runtime_webhook_requests_total",
                        {
                            "webhook": "/validate-machine-sapcloud-io-v1alpha1-machine",
                            "code": "200",
                        },
                    )
                    or 0
                )
                manager.stop()
        connections = getattr(emu.api.admission, "connections", None)
        return rate, reviews, connections.opened if connections is not None else -1


async def main(count: int, rounds: int, concurrency: int) -> dict[str, Any]:
    plain: list[float] = []
    hooked: list[float] = []
    reviews = opened = 0
    for _ in range(rounds):
        plain.append((await one_run(count, concurrency, False))[0])
        rate, reviews, opened = await one_run(count, concurrency, True)
        hooked.append(rate)
    assert reviews == count + 5, f"every create was reviewed once: {reviews} reviews"
    without, with_ = statistics.median(plain), statistics.median(hooked)
    return {
        "machines": count,
        "concurrency": concurrency,
        "rounds": rounds,
        "creates_per_s_without": round(without, 1),
        "creates_per_s_with": round(with_, 1),
        "ratio_with_over_without": round(with_ / without, 3),
        "ms_added_per_create": round((1 / with_ - 1 / without) * 1000 * concurrency, 2),
        # TLS connections the emulator opened to the webhook in the last run (-1: not counted)
        "webhook_connections": opened,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="100 machines, one round")
    options = parser.parse_args()
    if options.quick:
        options.machines, options.rounds = 100, 1
    outcome = trio.run(main, options.machines, options.rounds, options.concurrency)
    print(
        f"creates/s without webhook {outcome['creates_per_s_without']}, with "
        f"{outcome['creates_per_s_with']}: ratio {outcome['ratio_with_over_without']}"
    )
    print("RESULT " + json.dumps(outcome), flush=True)
