"""The complete controller example (docs/writing-controllers.md) and the README's demo command
work as printed."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import trio.testing

from kubetrio.api.core import Pod
from kubetrio.controllers import BUILTIN_CONTROLLERS
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informer import EventHandler
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from tests.helpers.kube import Kubectl
from tests.helpers.readme import readme_controller


async def test_documented_controller_labels_scheduled_pods(
    emu: Emulator, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    example = readme_controller(tmp_path)
    client = Client.from_kubeconfig(str(emu.kubeconfig_path))
    manager = Manager(client, metrics_bind_address="0", health_probe_bind_address="0")
    example.setup(manager, None)
    labelled = trio.Event()
    pods = manager.cache.informer(Pod)

    def check(_: Pod, new: Pod) -> None:
        if new.metadata.labels.get(example.LABEL) == "node-7":
            labelled.set()

    pods.add_handler(EventHandler(on_update=check))
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        emu.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"nodeName": "node-7", "containers": [{"name": "c", "image": "i"}]},
            }
        )
        with trio.fail_after(30):
            await labelled.wait()
        manager.stop()


def test_readme_has_the_first_visit_and_links_into_the_site() -> None:
    """The README is the way in: the set-up and the two commands, and links to pages that
    exist (the site's build checks the links between pages)."""
    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    for command in (
        "python3 -m venv .venv && .venv/bin/pip install -e '.[test]'",
        ".venv/bin/kubetrio run --embedded",
        ".venv/bin/python -m pytest -n 4",
    ):
        assert command in readme, command
    links = re.findall(r"\]\((docs/[^)#]*)", readme)
    assert "docs/tutorial.md" in links and "docs/quickstart.md" in links, links
    assert [link for link in links if not (root / link).exists()] == []


@pytest.mark.kubectl
@pytest.mark.process
@pytest.mark.slow
async def test_readme_run_command(tmp_path: Path, kubectl_binary: str) -> None:
    """``kubetrio run --embedded``: prints a kubeconfig kubectl can use, creates the demo's
    MachineDeployment, runs the scenario and with ``--keep-running`` stays up for kubectl until
    SIGINT (Ctrl-C), then exits 0, the deployment's two machines and their nodes all that is
    left. (The scenario's output is checked in tests/cli/test_demo.py.)"""
    command = [
        sys.executable,
        "-m",
        "kubetrio.cmd.main",
        "run",
        "--embedded",
        "--embedded-dir",
        str(tmp_path / "cluster"),
        "--keep-running",
        "--metrics-bind-address",
        "127.0.0.1:0",
        "--health-probe-bind-address",
        "0",
    ]
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            lambda task_status: trio.run_process(  # noqa: ASYNC105
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                check=False,
                task_status=task_status,
            )
        )
        assert process.stdout is not None
        output = b""
        with trio.fail_after(60):
            async for chunk in process.stdout:
                output += chunk
                if b"kubeconfig: " in output and b"\n" in output.split(b"kubeconfig: ", 1)[1]:
                    break
        kubeconfig = output.split(b"kubeconfig: ", 1)[1].split(b"\n", 1)[0].decode()
        kubectl = Kubectl(kubectl_binary, {"KUBECONFIG": kubeconfig, "HOME": str(tmp_path)})
        with trio.fail_after(60):
            while True:
                if "demo" in await kubectl.out("get", "machinedeployments", "-n", "default"):
                    break
                await trio.sleep(0.2)
        assert "demo-sim" in await kubectl.out("get", "machineclasses", "-n", "default")
        if "machine" in BUILTIN_CONTROLLERS:
            # The scenario ends with the summary; the cluster stays up with what it left.
            with trio.fail_after(60):
                async for chunk in process.stdout:
                    output += chunk
                    if b"the embedded cluster stays up" in output:
                        break
            # How soon (the README's minute) is tests/bench/machines.py's figure (--demo).
            text = output.decode()
            # 2 + 2 machines of the first class, 4 rolled in and updated in place, 1
            # replacement; 2 stay.
            assert "summary machines=9 running=9 updated_in_place=4 failed=1 deleted=7" in text, (
                text
            )
            kept = re.findall(r"^summary machine=(\S+) .* outcome=kept$", text, re.M)
            assert len(kept) == 2, text
            deployments = await kubectl.out("get", "machinedeployments", "-n", "default")
            assert re.search(r"demo\s+2\s+2\s+2", deployments), deployments
            machines = await kubectl.out("get", "machines", "-n", "default")
            nodes = await kubectl.out("get", "nodes", "-o", "name")
            assert sorted(nodes.split()) == sorted(f"node/{name}" for name in kept), nodes
            for name in kept:
                assert re.search(name + r"\s+Running", machines), machines
            assert len(machines.strip().splitlines()) == 1 + 2, machines
        process.send_signal(signal.SIGINT)
        with trio.fail_after(30):
            assert await process.wait() == 0
        nursery.cancel_scope.cancel()
