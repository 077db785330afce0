"""``kubetrio run`` keeps the traceback of a bug, even one that raises a type the startup
checks anticipate: a ``trio.TooSlowError`` from a controller's own time limit is not the API
server failing to answer, nor is an ``ApiError`` a controller lets escape a misconfigured
cluster. Only the startup checks' failures are one line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import trio

from kubetrio.emulator import Emulator
from tests.helpers.cli import environment, run_args
from tests.helpers.plugins import install_plugin

pytestmark = [pytest.mark.process, pytest.mark.slow]

PLUGIN = textwrap.dedent(
    '''
    import trio

    from kubetrio.api.core import ConfigMap


    class OwnDeadline:
        """A loop with a time limit of its own that it forgets to handle."""

        needs_leader_election = False

        async def run(self):
            with trio.fail_after(1):
                await trio.sleep(5)


    class BadPatch:
        """A loop that lets a 404 from its own patch escape."""

        needs_leader_election = False

        def __init__(self, manager):
            self.client = manager.client

        async def run(self):
            await self.client.patch(ConfigMap, "nowhere", {"data": {"a": "b"}}, namespace="default")


    def setup_deadline(manager, config):
        manager.add(OwnDeadline())


    def setup_patch(manager, config):
        manager.add(BadPatch(manager))
    '''
)


@pytest.mark.parametrize(
    ("controller", "error"),
    [("deadline", "trio.TooSlowError"), ("patch", "kubetrio.runtime.client.errors.ApiError")],
)
async def test_a_bug_keeps_its_traceback(
    emu: Emulator, tmp_path: Path, controller: str, error: str
) -> None:
    plugins = install_plugin(
        tmp_path / "plugins", PLUGIN, {"deadline": "setup_deadline", "patch": "setup_patch"}
    )
    with trio.fail_after(60):
        proc = await trio.run_process(
            run_args(emu, "--controllers", controller, "--log-level", "error"),
            capture_stderr=True,
            check=False,
            env=environment(plugins),
        )
    stderr = proc.stderr.decode()
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in stderr, stderr
    assert error in stderr
    assert "the API server did not answer" not in stderr
