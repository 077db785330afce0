"""Leader takeover time: three ``kubetrio run --leader-elect --controllers example`` processes
against an in-process emulator (real clock), under a steady load of ConfigMaps to hash; the
leader is frozen (SIGSTOP, resumed once another holds the lease) or killed (SIGKILL), for
``--rounds`` rounds; a fresh manager replaces it each time.

Per round: seconds from the stop (once every thread is seen stopped) to the moment the test's
informer sees another holder in the Lease, and from the old holder's last renewal (its
``renewTime``; same host, same wall clock) to then. client-go's rules bound the latter by
``retry·(1+1.2)`` (until a follower next looks and sees the last renewal) ``+ lease`` (it
counts from when it saw it) ``+ retry·(1+1.2)`` (until it next tries): followers never trust
another replica's clock, so up to two jittered polls are on top of the lease.

Usage: ``python tests/bench/leader_takeover.py [--lease 15 --renew 10 --retry 2] [--rounds 5]
[--kill]``. Last line: ``RESULT {json}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/leader_takeover.py``: keep this folder from shadowing stdlib.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import datetime as dt
import functools
import json
import os
import re
import signal
import statistics
import subprocess
import tempfile
import time
from typing import Any

import trio

from kubetrio.api.coordination import Lease
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.client.typed import Client
from kubetrio.sim import serve_world

JITTER = 1.2  # client-go's JitterFactor for leader election retries


def stopped(pid: int) -> bool:
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        except FileNotFoundError:
            continue
    return bool(states) and all(s in ("T", "t") for s in states)


def wall(micro: str) -> float:
    return dt.datetime.strptime(micro, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC).timestamp()


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="kubetrio-takeover-"))
    async with serve_world() as emu:
        client = Client.from_url(emu.url, token=emu.token)
        leases: Informer[Lease] = Informer(client, Lease, namespace="default")
        changed = trio.Event()

        def note(*_: Any) -> None:
            nonlocal changed
            changed.set()
            changed = trio.Event()

        leases.add_handler(EventHandler(on_add=note, on_update=note))

        def lease() -> Lease | None:
            return leases.lister.get("default", "kubetrio-leader")

        def holder() -> str:
            current = lease()
            return (current.spec.holder_identity or "") if current is not None else ""

        async def until(condition: Any, seconds: float) -> None:
            with trio.fail_after(seconds):
                while not condition():
                    await changed.wait()

        processes: dict[str, trio.Process] = {}
        rounds: list[dict[str, float]] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(leases.run)

            async def start_manager(n: int) -> None:
                log = workdir / f"manager-{n}.log"
                argv = [
                    sys.executable, "-m", "kubetrio.cmd.main", "run",
                    "--kubeconfig", str(emu.kubeconfig_path),
                    "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
                    "--controllers", "example", "--log-format", "json",
                    "--leader-elect", "--leader-election-namespace", "default",
                    "--leader-elect-lease-duration", f"{args.lease}s",
                    "--leader-elect-renew-deadline", f"{args.renew}s",
                    "--leader-elect-retry-period", f"{args.retry}s",
                ]  # fmt: skip
                with log.open("wb") as stderr:
                    process = await nursery.start(
                        functools.partial(
                            trio.run_process,
                            argv,
                            check=False,
                            stdout=subprocess.DEVNULL,
                            stderr=stderr,
                        )
                    )
                with trio.fail_after(60):
                    while not (found := re.search(r'"identity": ?"([^"]+)"', log.read_text())):  # noqa: ASYNC110
                        await trio.sleep(0.05)
                processes[found.group(1)] = process

            async def load() -> None:
                n = 0
                while True:
                    emu.create(
                        {
                            "apiVersion": "v1",
                            "kind": "ConfigMap",
                            "metadata": {
                                "name": f"load-{n:05d}",
                                "namespace": "default",
                                "labels": {"kubetrio.io/example": "true"},
                            },
                            "data": {"n": str(n)},
                        }
                    )
                    n += 1
                    await trio.sleep(0.1)

            for n in range(3):
                await start_manager(n)
            nursery.start_soon(load)
            for n in range(args.rounds):
                await until(lambda: holder() in processes, 120)
                old = holder()
                process = processes.pop(old)
                if args.kill:
                    process.kill()
                    gone_at = time.monotonic()
                else:
                    os.kill(process.pid, signal.SIGSTOP)
                    while not stopped(process.pid):  # noqa: ASYNC110
                        await trio.sleep(0.001)
                    gone_at = time.monotonic()
                last = lease()
                assert last is not None and last.spec.renew_time
                last_renewal = wall(last.spec.renew_time)
                await until(lambda: holder() not in ("", old), 120)  # noqa: B023
                seen_at, seen_wall = time.monotonic(), time.time()
                if not args.kill:
                    os.kill(process.pid, signal.SIGCONT)
                await process.wait()
                rounds.append(
                    {
                        "from_stop": round(seen_at - gone_at, 2),
                        "from_last_renewal": round(seen_wall - last_renewal, 2),
                        "exit_code": float(process.returncode or 0),
                    }
                )
                print(f"round {n}: {rounds[-1]}", flush=True)
                await start_manager(3 + n)
            for process in processes.values():
                process.terminate()
            nursery.cancel_scope.cancel()
    poll = args.retry * (1 + JITTER)
    from_stop = [r["from_stop"] for r in rounds]
    from_renewal = [r["from_last_renewal"] for r in rounds]
    return {
        "mode": "kill" if args.kill else "freeze",
        "lease": args.lease,
        "renew_deadline": args.renew,
        "retry": args.retry,
        "rounds": rounds,
        "from_stop_median": statistics.median(from_stop),
        "from_stop_max": max(from_stop),
        "from_last_renewal_max": max(from_renewal),
        "bound_lease_plus_one_poll": args.lease + poll,
        "bound_from_last_renewal": args.lease + 2 * poll,
        "within_bound": max(from_renewal) <= args.lease + 2 * poll,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lease", type=float, default=15.0)
    parser.add_argument("--renew", type=float, default=10.0)
    parser.add_argument("--retry", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kill", action="store_true", help="SIGKILL instead of SIGSTOP/SIGCONT")
    result = trio.run(bench, parser.parse_args())
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
