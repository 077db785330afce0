"""``kubetrio run --control-kubeconfig A --target-kubeconfig B``: the process against two API
servers (two emulators served in the test's run, real time), and its one-line failures."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import requests
import trio

from kubetrio.api.machine import PHASE_RUNNING, Machine
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.client.typed import Client
from kubetrio.sim import serve_world
from kubetrio.sim.cloud import SimulatedCloud
from tests.helpers.cli import Watcher, environment, kubetrio, one_line_error, run_to_exit
from tests.helpers.kube import Kubectl, kubectl_env
from tests.helpers.machines import install_crds, machine_doc, seed_class

pytestmark = [pytest.mark.process, pytest.mark.slow]


@pytest.fixture
async def target() -> AsyncIterator[Emulator]:
    async with serve_world() as e:
        yield e


def two_cluster_args(control: Emulator, target: Emulator, *extra: str) -> list[str]:
    return kubetrio(
        "run",
        "--control-kubeconfig",
        str(control.kubeconfig_path),
        "--target-kubeconfig",
        str(target.kubeconfig_path),
        # The target's cloud: its VMs join the target cluster.
        "--sim-cloud-url",
        target.extension(SimulatedCloud).url,
        "--controllers",
        "machine",
        "--metrics-bind-address",
        "127.0.0.1:0",
        "--health-probe-bind-address",
        "127.0.0.1:0",
        "--log-format",
        "json",
        *extra,
    )


async def log_lines(stream: trio.abc.ReceiveStream) -> AsyncIterator[dict[str, Any]]:
    """The process's JSON log lines, as they come."""
    buffer = b""
    async for chunk in stream:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.startswith(b"{"):
                yield json.loads(line)


@pytest.mark.kubectl
async def test_run_against_a_control_and_a_target_cluster_comes_up_ready(
    emu: Emulator, target: Emulator, kubectl_binary: str, tmp_path: Path
) -> None:
    control = emu
    kubectl_control = Kubectl(kubectl_binary, kubectl_env(control, tmp_path / "control"))
    kubectl_target = Kubectl(kubectl_binary, kubectl_env(target, tmp_path / "target"))
    install_crds(control)
    seed_class(control)  # boots at once: the VM joins the target cluster within the test
    machines = Watcher(Informer(Client.from_url(control.url, token=control.token), Machine))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(machines.informer.run)
        process = await trio.lowlevel.open_process(
            two_cluster_args(
                control, target, "--leader-elect", "--leader-election-namespace", "default"
            ),
            env=environment(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert process.stderr is not None
        try:
            address = ""
            with trio.fail_after(60):
                async for line in log_lines(process.stderr):
                    if line.get("msg") == "serving http":
                        address = line["addresses"][0]
                    if line.get("msg") == "acquired leader lease":  # after the caches synced
                        break
            ready = await trio.to_thread.run_sync(
                lambda: requests.get(f"http://{address}/readyz?verbose", timeout=10)
            )
            assert ready.status_code == 200, ready.text
            assert "[+]informers ok" in ready.text
            assert "[+]informers-target ok" in ready.text

            control.create(machine_doc("m-1"))

            def running() -> bool:
                machine = machines.informer.lister.get("default", "m-1")
                return machine is not None and machine.phase == PHASE_RUNNING

            await machines.wait_for(running, seconds=60)
            assert control.counters.get("list", "nodes") == 0  # (kubectl's lists come next)
            assert target.counters.get("list", "machines") == 0
            # kubectl, an independent client, sees the Machine in one and its Node in the other.
            listed = await kubectl_control.json("get", "machines")
            assert [m["metadata"]["name"] for m in listed["items"]] == ["m-1"]
            node = await kubectl_target.json("get", "node", "m-1")
            assert (
                node["spec"]["providerID"]
                == machines.informer.lister.get("default", "m-1").spec.provider_id
            )
            assert (await kubectl_control.json("get", "nodes"))["items"] == []
            assert (await kubectl_target.run("get", "machines", check=False)).returncode != 0
            # MCM keeps its leader lease in the control cluster.
            lease = ("coordination.k8s.io/v1", "Lease", "kubetrio-leader", "default")
            assert control.get(*lease) is not None
            assert target.get(*lease) is None
        finally:
            process.terminate()
            with trio.fail_after(30):
                await process.wait()
        nursery.cancel_scope.cancel()
    assert process.returncode == 0


async def test_an_unreachable_target_cluster_is_one_line_naming_it(
    emu: Emulator, tmp_path: Path
) -> None:
    unreachable = tmp_path / "target-kubeconfig"
    unreachable.write_text(
        emu.kubeconfig_path.read_text().replace(f":{emu.port}", ":9")  # nothing listens there
    )
    argv = kubetrio(
        "run",
        "--kubeconfig",
        str(emu.kubeconfig_path),
        "--target-kubeconfig",
        str(unreachable),
        "--controllers",
        "machine",
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
    )
    proc = await run_to_exit(argv, seconds=60)
    assert proc.returncode == 1
    line = one_line_error(proc)
    assert line.startswith("kubetrio: target cluster: "), line
    assert "no response from the API server" in line


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--target-kubeconfig", "/nowhere/kubeconfig"],
            "kubetrio: flag --target-kubeconfig (target.kubeconfig): kubeconfig file "
            '"/nowhere/kubeconfig" does not exist',
        ),
        (
            ["--target-kubeconfig", "none"],
            'kubetrio: flag --target-kubeconfig (target.kubeconfig): "none" (no target cluster) '
            "is not supported",
        ),
        (
            ["--target-kube-api-qps", "5"],
            "kubetrio: flag --target-kube-api-qps (target.qps): the target cluster is the "
            "control cluster here",
        ),
        (
            ["--embedded", "--control-context", "seed"],
            "kubetrio: --control-kubeconfig, --target-kubeconfig and their contexts: not with "
            "--embedded",
        ),
    ],
)
async def test_bad_cluster_settings_are_one_line_naming_the_flag(
    flags: list[str], message: str
) -> None:
    proc = await run_to_exit(kubetrio("run", *flags), seconds=60)
    assert proc.returncode == 2
    assert one_line_error(proc).startswith(message), proc.stderr.decode()
