"""Requests authenticated by an exec credential plugin: kubetrio's cached credentials against
pykube-ng's plugin-per-request, on the same emulator, plugin and requests.

``python tests/bench/exec_credentials.py [--requests N]``; last line ``RESULT {json}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/exec_credentials.py``: this folder must not shadow stdlib
# modules, and the e2e helpers (the plugin, the kubeconfig) come from the repository root.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parents[2])

import argparse
import json
import tempfile
import time

import pykube
import trio

from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.typed import Client
from kubetrio.sim import serve_world
from tests.helpers.credentials import (
    V1BETA1,
    admin_account,
    exec_user,
    fresh_token,
    plugin_runs,
    write_kubeconfig,
)

PATH = "/api/v1/namespaces"


async def main(requests: int) -> None:
    async with serve_world() as emu:
        admin = EmuClient(emu.url, emu.token)
        await admin_account(admin, "bench")
        token = await fresh_token(admin, "bench")
        results: dict[str, float] = {"requests": requests}
        with tempfile.TemporaryDirectory() as tmp:
            for who in ("kubetrio", "pykube"):
                state = Path(tmp) / who
                state.mkdir()
                (state / "token").write_text(token)
                (state / "quiet").touch()
                # v1beta1: the newest version pykube-ng runs.
                user = exec_user(state, V1BETA1, interactiveMode="Never")
                path = write_kubeconfig(Path(tmp) / f"{who}.kubeconfig", emu.url, user)
                started = time.perf_counter()
                if who == "kubetrio":
                    kube = Client.from_kubeconfig(str(path), qps=0)
                    for _ in range(requests):
                        await kube.request("GET", PATH)
                else:
                    api = pykube.HTTPClient(pykube.KubeConfig.from_file(str(path)))

                    def send(api: pykube.HTTPClient = api) -> None:
                        for _ in range(requests):
                            api.get(url="namespaces", version="v1").raise_for_status()

                    await trio.to_thread.run_sync(send)
                wall = time.perf_counter() - started
                results[f"{who}_wall_s"] = round(wall, 3)
                results[f"{who}_ms_per_request"] = round(1000 * wall / requests, 2)
                results[f"{who}_plugin_runs"] = plugin_runs(state)
                print(
                    f"{who}: {requests} requests in {wall:.2f}s "
                    f"({1000 * wall / requests:.1f} ms each), plugin runs {plugin_runs(state)}"
                )
    print("RESULT " + json.dumps(results))


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    trio.run(main, parser.parse_args().requests)


if __name__ == "__main__":
    cli()
