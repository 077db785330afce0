"""A campaign the cluster refuses for good (no such namespace, no RBAC on leases) ends the
run at once with one plain error naming what to change, instead of a warning every 2 s."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.leaderelection.elector import LeaderElectionOptions
from kubetrio.runtime.leaderelection.leasefailure import LeaseRefused
from kubetrio.runtime.manager.manager import Manager
from tests.helpers.cli import kubetrio
from tests.helpers.cli_failures import NO_PORTS, QUIET, run_to_exit, the_line
from tests.helpers.rbac import service_account, token


def elected(client: Client, namespace: str) -> Manager:
    options = LeaderElectionOptions(namespace=namespace, name="kubetrio-leader", identity="me")
    return Manager(
        client, metrics_bind_address="0", health_probe_bind_address="0", leader_election=options
    )


async def test_an_identity_without_lease_rights_is_told_what_to_grant(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    await service_account(client, "no-leases")
    manager = elected(Client.from_url(emu.url, token=await token(client, "no-leases")), "default")
    started = trio.current_time()
    with pytest.raises(LeaseRefused) as caught:  # bare, not in an exception group
        await manager.run(handle_signals=False)
    assert trio.current_time() - started < 1, "no retrying what cannot heal"
    assert str(caught.value).startswith(
        "RBAC: the ServiceAccount default/no-leases cannot campaign for lease "
        "default/kubetrio-leader ("
    )
    assert str(caught.value).endswith(
        "; grant it get, create and update on leases.coordination.k8s.io in namespace default"
    )


@pytest.mark.slow
@pytest.mark.process
async def test_a_lease_namespace_that_does_not_exist(emu: Emulator) -> None:
    code, stderr = await run_to_exit(
        kubetrio(
            "run",
            "--kubeconfig",
            str(emu.kubeconfig_path),
            "--controllers",
            "example",
            "--leader-elect",
            "--leader-election-namespace",
            "kubetrio-system",
            *NO_PORTS,
            *QUIET,
        )
    )
    assert code == 1
    line = the_line(stderr)
    assert line.startswith(
        "kubetrio: lease kubetrio-system/kubetrio-leader: namespace kubetrio-system does not "
        'exist (404 NotFound: namespaces "kubetrio-system" not found'
    ), line
    assert line.endswith("; create it or choose another with --leader-election-namespace"), line
