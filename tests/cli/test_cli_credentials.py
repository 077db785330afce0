"""``kubetrio run`` with credentials that last: a manager authenticated by an exec plugin
starts it once for all its requests (lists, watches, lease renewals), and credentials that
cannot be had are one line, not a traceback."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from kubetrio.api.coordination import Lease
from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.client.typed import Client
from tests.helpers.credentials import (
    V1,
    admin_account,
    exec_user,
    fresh_token,
    plugin_runs,
    write_kubeconfig,
)

pytestmark = [pytest.mark.process, pytest.mark.slow]

LEASE_FLAGS = [
    "--leader-elect",
    "--leader-election-namespace",
    "default",
    "--leader-elect-lease-duration",
    "4s",
    "--leader-elect-renew-deadline",
    "3s",
    "--leader-elect-retry-period",
    "0.5s",
]


def kubetrio_run(kubeconfig: Path | None, *extra: str) -> list[str]:
    config = ["--kubeconfig", str(kubeconfig)] if kubeconfig is not None else []
    return [
        sys.executable,
        "-m",
        "kubetrio.cmd.main",
        "run",
        *config,
        "--controllers",
        "example",
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
        *extra,
    ]


def environment(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KUBETRIO_", "KUBERNETES_")) and k != "KUBECONFIG"
    }
    return {**env, **extra}


async def test_a_manager_runs_its_exec_plugin_once(
    emu: Emulator, client: EmuClient, tmp_path: Path
) -> None:
    state = tmp_path / "plugin"
    state.mkdir()
    await admin_account(client, "manager")
    (state / "token").write_text(await fresh_token(client, "manager"))
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", emu.url, exec_user(state, V1))
    renewals = 0
    renewed = trio.Event()

    def on_update(_: Lease, __: Lease) -> None:
        nonlocal renewals
        renewals += 1
        if renewals >= 4:
            renewed.set()

    leases = Informer(Client.from_url(emu.url, token=emu.token), Lease, namespace="default")
    leases.add_handler(EventHandler(on_update=on_update))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(leases.run)
        process = await nursery.start(
            functools.partial(
                trio.run_process,
                kubetrio_run(kubeconfig, *LEASE_FLAGS),
                env=environment(),
                check=False,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
        with trio.fail_after(30):
            await renewed.wait()
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(20):
            assert await process.wait() == 0
        nursery.cancel_scope.cancel()
    assert plugin_runs(state) == 1


async def test_credentials_that_cannot_be_had_are_one_line(tmp_path: Path) -> None:
    user = {
        "exec": {
            "apiVersion": V1,
            "command": "no-such-login",
            "interactiveMode": "Never",
            "installHint": "pip install cloud-login",
        }
    }
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:9", user)
    missing = await trio.run_process(
        kubetrio_run(kubeconfig), capture_stderr=True, check=False, env=environment()
    )
    assert missing.returncode == 1
    [line] = missing.stderr.decode().splitlines()
    assert line.startswith(  # then the request that needed them, e.g. (GET /version)
        "kubetrio: getting credentials: exec plugin: executable no-such-login not found; "
        "pip install cloud-login ("
    )
    # In a pod (the service variables set) whose ServiceAccount token is not mounted.
    pod_env = environment(
        HOME=str(tmp_path), KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT="9"
    )
    unmounted = await trio.run_process(
        kubetrio_run(None), capture_stderr=True, check=False, env=pod_env
    )
    assert unmounted.returncode == 1
    assert unmounted.stderr.decode().splitlines() == [
        "kubetrio: token file /var/run/secrets/kubernetes.io/serviceaccount/token: "
        "No such file or directory"
    ]
