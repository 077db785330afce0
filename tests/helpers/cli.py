"""``kubetrio run`` as a child process: its command line against an emulator, an environment free
of the developer's settings, the test controllers a plugin contributes, and a watcher that wakes
the test on every change. Shared by every test that starts the manager as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import trio

from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informer import EventHandler, Informer

PLUGIN = textwrap.dedent(
    '''
    """Test controllers contributed through the kubetrio.controllers entry point group."""
    import os

    import trio

    from kubetrio.api.core import ConfigMap
    from kubetrio.runtime.controller.controller import Result


    class Stamp:
        """Annotates each ConfigMap labelled stamp=yes with the pid of the process."""

        def __init__(self, manager):
            self.client = manager.client
            self.lister = manager.cache.informer(ConfigMap, label_selector="stamp=yes").lister

        async def reconcile(self, key):
            obj = self.lister.get(key.namespace, key.name)
            if obj is not None and "stamped-by" not in obj.metadata.annotations:
                await self.client.patch(
                    ConfigMap, key.name,
                    {"metadata": {"annotations": {"stamped-by": str(os.getpid())}}},
                    namespace=key.namespace,
                )
            return Result()


    class Slow:
        """Takes 3 s per ConfigMap labelled slow=yes, marking start and end."""

        def __init__(self, manager):
            self.client = manager.client
            self.lister = manager.cache.informer(ConfigMap, label_selector="slow=yes").lister

        async def mark(self, key, what):
            await self.client.patch(
                ConfigMap, key.name, {"metadata": {"annotations": {what: "yes"}}},
                namespace=key.namespace,
            )

        async def reconcile(self, key):
            obj = self.lister.get(key.namespace, key.name)
            if obj is None or "finished" in obj.metadata.annotations:
                return Result()
            await self.mark(key, "started")
            await trio.sleep(3)
            await self.mark(key, "finished")
            return Result()


    def setup_stamp(manager, config):
        manager.controller("stamp").for_(ConfigMap, label_selector="stamp=yes").complete(
            Stamp(manager)
        )


    def setup_slow(manager, config):
        manager.controller("slow").for_(ConfigMap, label_selector="slow=yes").complete(
            Slow(manager)
        )
    '''
)


# Leader election on a short lease, so handovers and losses happen within a test.
FAST_LEASE = [
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


def kubetrio(*args: str, plugins: Path | None = None) -> list[str]:
    return [sys.executable, "-m", "kubetrio.cmd.main", *args]


def environment(plugins: Path | None = None) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("KUBETRIO_") and k != "KUBECONFIG"
    }
    # Never the developer's ~/.kube/config: --master and a missing --kubeconfig fall back to it.
    env["HOME"] = str(Path(tempfile.gettempdir()) / "kubetrio-tests-have-no-home")
    if plugins is not None:
        env["PYTHONPATH"] = str(plugins)
    return env


def run_args(emu: Emulator, *extra: str) -> list[str]:
    return kubetrio(
        "run",
        # The emulator's kubeconfig: its server and the admin's token (RBAC is on).
        "--kubeconfig",
        str(emu.kubeconfig_path),
        "--metrics-bind-address",
        "127.0.0.1:0",
        "--health-probe-bind-address",
        "127.0.0.1:0",
        *extra,
    )


def config_map(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
    }


class Watcher:
    """An informer whose handler wakes the test when anything changes."""

    def __init__(self, informer: Informer[Any]) -> None:
        self.informer = informer
        self.events: list[Any] = []
        self._changed = trio.Event()
        informer.add_handler(
            EventHandler(
                on_add=lambda obj, _: self._note(obj),
                on_update=lambda _, new: self._note(new),
            )
        )

    def _note(self, obj: Any) -> None:
        self.events.append(obj)
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, condition: Any, seconds: float) -> None:
        with trio.fail_after(seconds):
            while not condition():
                await self._changed.wait()


def one_line_error(proc: subprocess.CompletedProcess[bytes]) -> str:
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1, proc.stderr.decode()
    assert lines[0].startswith("kubetrio: ")
    return lines[0]


async def run_to_exit(argv: list[str], seconds: float) -> subprocess.CompletedProcess[bytes]:
    with trio.fail_after(seconds):
        return await trio.run_process(
            argv, capture_stderr=True, capture_stdout=True, check=False, env=environment()
        )
