"""``--gc``: the manager freezes what its caches hold once they synced (and not before), keeps
scanning what arrives later, and puts the collector back when it stops; ``default`` changes
nothing; a bad value stops ``kubetrio run`` with one line naming the flag, variable or field."""

from __future__ import annotations

import functools
import gc
import signal
import subprocess
from pathlib import Path

import pytest
import trio

from kubetrio.api.core import ConfigMap
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informer import EventHandler
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.manager.gctuning import TUNED_THRESHOLD, GcMode
from kubetrio.runtime.manager.manager import Manager
from tests.helpers.cli import PLUGIN, config_map, environment, kubetrio, one_line_error, run_args
from tests.helpers.plugins import install_plugin

CACHED = 200


pytestmark = pytest.mark.usefixtures("restore_gc")


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    """test_cli_run's plugin: the ``stamp`` controller on ConfigMaps, for ``kubetrio run``."""
    return install_plugin(tmp_path / "plugins", PLUGIN, {"stamp": "setup_stamp"})


class Seen:
    """A reconciler that only notes which ConfigMaps it was called for."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.changed = trio.Event()

    async def reconcile(self, key: ObjectKey) -> Result:
        self.names.add(key.name)
        self.changed.set()
        self.changed = trio.Event()
        return Result()


def manager_for(emu: Emulator, mode: GcMode) -> tuple[Manager, Seen, dict[str, list[str]]]:
    """The manager, its reconciler, and one tracked object per ConfigMap its informer added,
    allocated by the informer's handler: during the initial list for what existed before."""
    manager = Manager(
        Client.from_url(emu.url, token=emu.token),
        metrics_bind_address="0",
        health_probe_bind_address="0",
        gc=mode,
    )
    seen = Seen()
    manager.controller("seen").for_(ConfigMap).complete(seen)
    added: dict[str, list[str]] = {}
    manager.cache.informer(ConfigMap).add_handler(
        EventHandler(on_add=lambda obj, _: added.setdefault(obj.metadata.name, [obj.metadata.name]))
    )
    return manager, seen, added


def scanned_ids() -> set[int]:
    """Every object the collector scans: all generations but the frozen one."""
    return {id(o) for o in gc.get_objects()}


async def test_tuned_freezes_what_the_sync_built_and_keeps_scanning_what_comes_later(
    emu: Emulator,
) -> None:
    for i in range(CACHED):
        emu.create(config_map(f"before-{i}"))
    gc.set_threshold(700, 10, 10)
    manager, seen, added = manager_for(emu, "tuned")
    async with trio.open_nursery() as nursery:
        assert gc.get_freeze_count() == 0
        await nursery.start(manager.run)  # returns once the caches synced
        assert gc.get_threshold() == TUNED_THRESHOLD
        assert gc.get_freeze_count() > CACHED
        assert len(added) == CACHED
        scanned = scanned_ids()
        assert not any(id(note) in scanned for note in added.values()), "the sync's: frozen"

        emu.create(config_map("after"))
        with trio.fail_after(30):
            while "after" not in seen.names:
                await seen.changed.wait()
        assert id(added["after"]) in scanned_ids(), "added after the sync: still scanned"
        manager.stop()
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


async def test_default_leaves_the_collector_as_it_was(emu: Emulator) -> None:
    for i in range(CACHED):
        emu.create(config_map(f"before-{i}"))
    gc.set_threshold(700, 10, 10)
    manager, _, added = manager_for(emu, "default")
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        assert gc.get_threshold() == (700, 10, 10)
        assert gc.get_freeze_count() == 0
        scanned = scanned_ids()
        assert len(added) == CACHED and all(id(note) in scanned for note in added.values())
        manager.stop()
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.process
@pytest.mark.slow
async def test_kubetrio_run_applies_its_gc_flag_after_the_sync(
    emu: Emulator, plugin_path: Path
) -> None:
    """The process's own account: one line once its caches synced, with what it froze."""
    for i in range(CACHED):
        emu.create(config_map(f"stamp-{i}", stamp="yes"))
    argv = run_args(emu, "--controllers", "stamp", "--gc", "tuned")
    async with trio.open_nursery() as nursery:
        process = await nursery.start(
            functools.partial(
                trio.run_process,
                argv,
                env=environment(plugin_path),
                check=False,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
        assert process.stderr is not None
        text = ""
        with trio.fail_after(60):
            async for chunk in process.stderr:
                text += chunk.decode()
                if "garbage collector tuned" in text and text.endswith("\n"):
                    break
        lines = text.splitlines()
        synced = next(i for i, line in enumerate(lines) if '"caches synced"' in line)
        tuned = next(i for i, line in enumerate(lines) if "garbage collector tuned" in line)
        assert tuned > synced, "frozen after the sync, not before"
        assert f"young_threshold={TUNED_THRESHOLD[0]}" in lines[tuned]
        frozen = int(lines[tuned].split("frozen_objects=")[1].split()[0])
        assert frozen > CACHED
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            assert await process.wait() == 0


@pytest.mark.process
@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (
            ["--gc", "fast"],
            {},
            'kubetrio: flag --gc (gc): expected one of "default", "tuned", got "fast"',
        ),
        (
            [],
            {"KUBETRIO_GC": "off"},
            "kubetrio: environment variable KUBETRIO_GC (gc): "
            'expected one of "default", "tuned", got "off"',
        ),
    ],
)
async def test_a_bad_gc_value_is_one_line_naming_where_it_came_from(
    args: list[str], env: dict[str, str], expected: str
) -> None:
    with trio.fail_after(60):
        proc = await trio.run_process(
            kubetrio("run", *args),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=environment() | env,
        )
    assert proc.returncode == 2
    assert one_line_error(proc) == expected


@pytest.mark.process
@pytest.mark.slow
async def test_a_bad_gc_field_in_the_config_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "kubetrio.yaml"
    path.write_text("gc: 3\n")
    with trio.fail_after(60):
        proc = await trio.run_process(
            kubetrio("run", "--config", str(path)),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=environment(),
        )
    assert proc.returncode == 2
    assert one_line_error(proc).startswith(f"kubetrio: config file {path}: gc: expected")
