"""``kubetrio run`` as a process: plugins, signals, leader election, clear failures."""

from __future__ import annotations

import functools
import signal
import subprocess
from pathlib import Path

import pytest
import trio
import yaml

from kubetrio.api.coordination import Lease
from kubetrio.api.core import ConfigMap
from kubetrio.emulator import Emulator, FaultRule
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.client.typed import Client
from tests.helpers.cli import (
    FAST_LEASE,
    PLUGIN,
    Watcher,
    config_map,
    environment,
    kubetrio,
    one_line_error,
    run_args,
    run_to_exit,
)
from tests.helpers.machines import install_crds
from tests.helpers.plugins import install_plugin
from tests.helpers.rbac import service_account, token

pytestmark = [pytest.mark.process, pytest.mark.slow]


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    """A 'third-party package' on PYTHONPATH: a module plus dist-info with entry points."""
    return install_plugin(
        tmp_path / "plugins", PLUGIN, {"stamp": "setup_stamp", "slow": "setup_slow"}
    )


OUTAGE = 600.0


async def test_bad_config_file_flag_and_unreachable_server(tmp_path: Path) -> None:
    bad_file = tmp_path / "bad.yaml"
    bad_file.write_text("leaderElection:\n  leaseDurration: 15s\n")
    proc = await trio.run_process(
        kubetrio("run", "--config", str(bad_file)),
        capture_stderr=True,
        capture_stdout=True,
        check=False,
        env=environment(),
    )
    assert proc.returncode == 2
    assert "leaseDurration" in one_line_error(proc)

    proc = await trio.run_process(
        kubetrio("run", "--node-delete-workers", "-3"),
        capture_stderr=True,
        capture_stdout=True,
        check=False,
        env=environment(),
    )
    assert proc.returncode == 2
    assert "--node-delete-workers" in one_line_error(proc)

    proc = await trio.run_process(
        kubetrio(
            "run",
            "--master",
            "http://127.0.0.1:9",
            "--controllers",
            "example",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
        ),
        capture_stderr=True,
        capture_stdout=True,
        check=False,
        env=environment(),
    )
    assert proc.returncode == 1
    assert "no response from the API server" in one_line_error(proc)


async def test_sigterm_lets_a_slow_reconcile_finish(emu: Emulator, plugin_path: Path) -> None:
    client = Client.from_url(emu.url, token=emu.token)
    watcher = Watcher(Informer(client, ConfigMap))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watcher.informer.run)
        process = await nursery.start(
            functools.partial(
                trio.run_process,
                run_args(emu, "--controllers", "slow", "--graceful-shutdown-timeout", "20s"),
                env=environment(plugin_path),
                check=False,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
        emu.create(config_map("slow-one", slow="yes"))

        def annotated(what: str) -> bool:
            obj = watcher.informer.lister.get("default", "slow-one")
            return obj is not None and what in obj.metadata.annotations

        await watcher.wait_for(lambda: annotated("started"), seconds=30)
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(20):
            code = await process.wait()
        assert code == 0
        assert annotated("finished"), "the in-flight reconcile was allowed to finish"
        nursery.cancel_scope.cancel()


async def test_leader_election_fails_over_without_two_leaders(
    emu: Emulator, plugin_path: Path
) -> None:
    lease_args = ["--controllers", "stamp", *FAST_LEASE]
    client = Client.from_url(emu.url, token=emu.token)
    maps = Watcher(Informer(client, ConfigMap))
    leases = Watcher(Informer(client, Lease, namespace="default"))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(maps.informer.run)
        nursery.start_soon(leases.informer.run)
        processes = [
            await nursery.start(
                functools.partial(
                    trio.run_process,
                    run_args(emu, *lease_args),
                    env=environment(plugin_path),
                    check=False,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            for _ in range(2)
        ]
        by_pid = {p.pid: p for p in processes}
        created = 0

        async def keep_creating() -> None:
            nonlocal created
            while True:
                emu.create(config_map(f"cm-{created:04d}", stamp="yes"))
                created += 1
                await trio.sleep(0.2)

        nursery.start_soon(keep_creating)

        def stampers() -> list[int]:
            stamped = sorted(
                (
                    obj
                    for obj in maps.informer.lister.list()
                    if "stamped-by" in obj.metadata.annotations
                ),
                key=lambda obj: int(obj.metadata.resource_version),
            )
            return [int(obj.metadata.annotations["stamped-by"]) for obj in stamped]

        await maps.wait_for(lambda: len(stampers()) >= 5, seconds=30)
        leader = stampers()[0]
        assert set(stampers()) == {leader}, "only the leader acts"
        lease = leases.informer.lister.get("default", "kubetrio-leader")
        assert lease is not None and lease.spec.lease_transitions == 0
        first_holder = lease.spec.holder_identity

        by_pid[leader].kill()
        await leases.wait_for(
            lambda: (
                (lease := leases.informer.lister.get("default", "kubetrio-leader")) is not None
                and lease.spec.holder_identity not in (first_holder, None, "")
            ),
            seconds=15,
        )
        # How soon (client-go's bound) is tests/bench/leader_takeover.py's figure (--kill).
        follower = next(pid for pid in by_pid if pid != leader)
        await maps.wait_for(lambda: follower in stampers(), seconds=15)
        sequence = stampers()
        switch = sequence.index(follower)
        assert set(sequence[:switch]) == {leader} and set(sequence[switch:]) == {follower}, (
            "writes of the two managers interleave: two leaders acted at once"
        )
        lease = leases.informer.lister.get("default", "kubetrio-leader")
        assert lease is not None and lease.spec.lease_transitions == 1
        by_pid[follower].terminate()
        with trio.fail_after(15):
            assert await by_pid[follower].wait() == 0
        nursery.cancel_scope.cancel()


async def test_missing_crds_end_the_run_at_once_naming_the_crd(emu: Emulator) -> None:
    # Within run_to_exit's 60 s, well under the 120 s cache sync timeout: the first 404 is final
    # (allowing for a slow interpreter start on a loaded machine).
    # Warnings off: stderr then holds exactly what the process ends with.
    argv = run_args(emu, "--controllers", "machine", "--log-level", "error")
    proc = await run_to_exit(argv, seconds=60)
    assert proc.returncode == 1
    line = one_line_error(proc)  # no traceback, no exception group
    assert line.startswith("kubetrio: CRD not installed: machine"), line
    assert ".machine.sapcloud.io (404 NotFound" in line


async def test_a_service_account_that_cannot_list_gets_the_rbac_line(
    emu: Emulator, client: EmuClient, tmp_path: Path
) -> None:
    install_crds(emu)
    await service_account(client, "kubetrio")
    kubeconfig = yaml.safe_load(emu.kubeconfig_path.read_text())
    kubeconfig["users"][0]["user"]["token"] = await token(client, "kubetrio")
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    argv = kubetrio(
        "run",
        "--kubeconfig",
        str(path),
        "--controllers",
        "machine",
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
        "--log-level",
        "error",
    )
    proc = await run_to_exit(argv, seconds=60)
    assert proc.returncode == 1
    line = one_line_error(proc)
    assert line.startswith("kubetrio: RBAC: the ServiceAccount default/kubetrio cannot list "), line
    assert 'User "system:serviceaccount:default:kubetrio" cannot list resource' in line


async def test_a_leader_that_loses_its_lease_in_an_api_outage_exits_with_one_line(
    emu: Emulator,
) -> None:
    install_crds(emu)
    argv = run_args(
        emu,
        "--controllers",
        "machine",
        *FAST_LEASE,
        "--kube-api-timeout",
        "1s",
    )
    leases = Watcher(Informer(Client.from_url(emu.url, token=emu.token), Lease))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(leases.informer.run)
        process = await nursery.start(
            functools.partial(
                trio.run_process,
                argv,
                env=environment(),
                check=False,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
        await leases.wait_for(
            lambda: leases.informer.lister.get("default", "kubetrio-leader") is not None, 30
        )
        emu.faults.add(FaultRule(latency=OUTAGE))  # every request hangs past its timeout
        with trio.fail_after(30):
            code = await process.wait()
        stderr = (await process.stderr.receive_some(1 << 20)).decode()
        nursery.cancel_scope.cancel()
    assert code == 1
    assert "Traceback" not in stderr and "ExceptionGroup" not in stderr, stderr
    last = stderr.splitlines()[-1]
    assert last.startswith("kubetrio: lea"), stderr
    assert last.endswith("; exiting so a restart can campaign again"), stderr
