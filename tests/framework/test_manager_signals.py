"""``Manager.run()`` from a user's script behaves like ``kubetrio run``: SIGTERM and SIGINT stop
it gracefully (in-flight work finishes, exit 0), a second signal does not wait, and it logs
without being told to."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import trio.testing

from kubetrio.api.core import ConfigMap, Pod
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.manager.manager import Manager
from tests.helpers.cli import Watcher, environment
from tests.helpers.readme import README

README_CONSTRUCTION = "Manager(load_client())"


def readme_script(tmp_path: Path) -> Path:
    """The documentation's controller example as the user would save it; only its ports
    change, to free ones, because tests share this machine's 8080 and 8081."""
    block = re.search(
        r"<!-- readme-controller:start -->\n```python\n(.*?)```\n<!-- readme-controller:end -->",
        README.read_text(),
        re.S,
    )
    assert block is not None, f"{README.name} lost its controller example"
    source = block.group(1)
    assert source.count(README_CONSTRUCTION) == 1, "the example builds its manager elsewhere"
    source = source.replace(
        README_CONSTRUCTION,
        'Manager(load_client(), metrics_bind_address="127.0.0.1:0", '
        'health_probe_bind_address="127.0.0.1:0")',
    )
    script = tmp_path / "labeler.py"
    script.write_text(source)
    return script


class Lines:
    """A process's stderr, read as it comes."""

    def __init__(self, process: trio.Process) -> None:
        assert process.stderr is not None
        self.stream = process.stderr
        self.text = ""

    async def wait_for(self, needle: str, seconds: float = 60) -> None:
        with trio.fail_after(seconds):
            while needle not in self.text:
                chunk = await self.stream.receive_some(1 << 16)
                if not chunk:
                    raise AssertionError(f"stderr ended without {needle!r}:\n{self.text}")
                self.text += chunk.decode()

    async def rest(self) -> str:
        with trio.fail_after(30):
            while chunk := await self.stream.receive_some(1 << 16):
                self.text += chunk.decode()
        return self.text


@pytest.mark.slow
@pytest.mark.process
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_the_readme_example_stops_like_the_binary(
    emu: Emulator, tmp_path: Path, signum: signal.Signals
) -> None:
    script = readme_script(tmp_path)
    env = environment() | {"KUBECONFIG": str(emu.kubeconfig_path), "HOME": str(tmp_path)}
    pods = Watcher(Informer(Client.from_url(emu.url, token=emu.token), Pod))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pods.informer.run)
        process: trio.Process = await nursery.start(
            lambda task_status: trio.run_process(  # noqa: ASYNC105
                [sys.executable, str(script)],
                env=env,
                check=False,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                task_status=task_status,
            )
        )
        stderr = Lines(process)
        # Logging was set up by the manager: the example configures none.
        await stderr.wait_for('msg="caches synced"')
        emu.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"nodeName": "node-3", "containers": [{"name": "c", "image": "i"}]},
            }
        )

        def labelled() -> bool:
            pod = pods.informer.lister.get("default", "p")
            return pod is not None and pod.metadata.labels.get("example.com/node") == "node-3"

        await pods.wait_for(labelled, seconds=60)
        process.send_signal(signum)
        with trio.fail_after(30):
            code = await process.wait()
        text = await stderr.rest()
        nursery.cancel_scope.cancel()
    assert code == 0, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    events = [
        f'msg="signal received, stopping" signal={signum.name}',
        'msg="shutting down" grace_seconds=30',
        'msg="manager stopped"',
    ]
    positions = [text.find(event) for event in events]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), text


class Slow:
    """Takes ``seconds`` (on the test's clock) per ConfigMap, noting starts and finishes."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = trio.Event()
        self.finished: list[str] = []

    async def reconcile(self, key: ObjectKey) -> Result:
        self.started.set()
        await trio.sleep(self.seconds)
        self.finished.append(key.name)
        return Result()


def slow_manager(emu: Emulator, seconds: float) -> tuple[Manager, Slow]:
    manager = Manager(
        Client.from_url(emu.url, token=emu.token),
        metrics_bind_address="0",
        health_probe_bind_address="0",
        graceful_shutdown_timeout=20,
    )
    slow = Slow(seconds)
    manager.controller("slow").for_(ConfigMap).complete(slow)
    return manager, slow


def send_to_self(signum: signal.Signals) -> None:
    # Only once the manager receives it: the default action would end the test run.
    assert getattr(signal.getsignal(signum), "__module__", None) == "trio._signals"
    os.kill(os.getpid(), signum)


async def test_sigterm_lets_in_flight_work_finish_within_the_grace_period(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    manager, slow = slow_manager(emu, seconds=5)
    emu.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    async with trio.open_nursery() as nursery:
        nursery.start_soon(manager.run)
        await slow.started.wait()
        signalled = trio.current_time()
        send_to_self(signal.SIGTERM)
    assert slow.finished == ["c"]
    assert 5 <= trio.current_time() - signalled < 20  # finished, not the grace period ran out
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, "the handler was restored"


async def test_a_second_signal_does_not_wait_for_the_grace_period(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    manager, slow = slow_manager(emu, seconds=600)
    emu.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    async with trio.open_nursery() as nursery:
        nursery.start_soon(manager.run)
        await slow.started.wait()
        signalled = trio.current_time()
        send_to_self(signal.SIGINT)
        await trio.sleep(1)
        send_to_self(signal.SIGINT)
    assert slow.finished == []
    assert trio.current_time() - signalled < 20


async def test_signals_someone_else_handles_are_left_to_them(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """As in ``kubetrio run``, which receives them itself to stop its companions too."""
    manager, slow = slow_manager(emu, seconds=5)
    emu.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    with trio.open_signal_receiver(signal.SIGTERM) as received:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(manager.run)
            await slow.started.wait()
            took = getattr(signal.getsignal(signal.SIGINT), "__module__", None)
            assert took == "trio._signals"  # the manager took the one left to it
            os.kill(os.getpid(), signal.SIGTERM)
            assert await received.__anext__() == signal.SIGTERM
            assert not manager._stop_requested.is_set()
            manager.stop()
