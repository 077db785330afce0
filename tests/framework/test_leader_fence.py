"""The elector's fence against the emulator on a MockClock: leadership ends at the renew
deadline of the last success (also when the renew task has not run since), at once when
another identity is seen holding the lease, and a fenced client refuses writes from then on
while reads pass."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
import trio
import trio.testing

from kubetrio.api.coordination import Lease
from kubetrio.api.core import ConfigMap
from kubetrio.emulator import Emulator, FaultRule
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.leaderelection.elector import (
    LeaderElectionOptions,
    LeaderElector,
    LeadershipLost,
)
from kubetrio.runtime.leaderelection.fence import NotLeader
from kubetrio.runtime.manager.manager import Manager

OPTIONS = LeaderElectionOptions(
    namespace="default",
    name="fence-test",
    identity="me",
    lease_duration=15.0,
    renew_deadline=10.0,
    retry_period=2.0,
)


def config_map(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"a": "1"},
    }


class Campaign:
    """An elector running in a nursery; what became of it is kept, not raised."""

    def __init__(self, elector: LeaderElector) -> None:
        self.elector = elector
        self.leading = trio.Event()
        self.ended = trio.Event()
        self.lost: LeadershipLost | None = None
        self.lost_at = 0.0

    async def run(self) -> None:
        async def lead() -> None:
            self.leading.set()
            await trio.sleep_forever()

        try:
            await self.elector.run(lead)
        except LeadershipLost as error:
            self.lost, self.lost_at = error, trio.current_time()
        finally:
            self.ended.set()


async def leading(emu: Emulator, nursery: trio.Nursery) -> tuple[Campaign, Client]:
    client = Client.from_url(emu.url, token=emu.token)
    campaign = Campaign(LeaderElector(client, OPTIONS))
    nursery.start_soon(campaign.run)
    await campaign.leading.wait()
    return campaign, client


async def refused(write: Callable[[], Awaitable[object]]) -> str:
    with pytest.raises(NotLeader) as caught:
        await write()
    return str(caught.value)


async def test_the_fence_fails_the_instant_the_deadline_passes(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    emu.create(config_map("target"))
    async with trio.open_nursery() as nursery:
        campaign, client = await leading(emu, nursery)
        elector = campaign.elector
        fenced = client.fenced(elector.fence())

        def patch() -> Awaitable[ConfigMap]:
            body = {"data": {"a": "2"}}
            return fenced.patch(ConfigMap, "target", body, namespace="default")

        await patch()  # the leader writes
        assert elector.holds_lease()
        # A freeze: the clock jumps to the deadline with no task run in between, so the renew
        # loop has had no chance to notice.
        mock_clock.jump(elector.valid_until - trio.current_time())
        assert elector.is_leader and not elector.holds_lease()
        assert "leader lease default/fence-test is not proven held" in await refused(patch)
        assert await refused(lambda: fenced.delete(ConfigMap, "target", namespace="default"))
        cm = emu.get("v1", "ConfigMap", "target", "default")
        assert cm is not None and cm["data"] == {"a": "2"}, "nothing written after the deadline"
        assert (
            await fenced.get(ConfigMap, "target", namespace="default")
        ).metadata.name == "target"
        assert len((await fenced.list(ConfigMap, namespace="default")).items) == 1
        await campaign.ended.wait()
        assert campaign.lost is not None and "not renewed within 10s" in str(campaign.lost)
        assert not elector.is_leader and not elector.holds_lease()


async def test_the_renew_deadline_counts_from_the_last_success(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        campaign, client = await leading(emu, nursery)
        elector = campaign.elector
        acquired_at = elector.renewed_at
        # Simulated time: one renewal round passes (a renewal every retry period).
        await trio.sleep(OPTIONS.retry_period * 1.5)
        renewed_at = elector.renewed_at
        assert renewed_at > acquired_at, "renewed once"
        # Renewals fail from now on; the last success stays the one just made.
        emu.faults.add(FaultRule(verb="patch", resource="leases", status=500))
        await campaign.ended.wait()
        assert campaign.lost is not None
        # client-go's bound, measured from the write that proved leadership: not a fresh
        # renew_deadline per renewal round (which ended it up to a retry period later).
        assert campaign.lost_at - renewed_at == pytest.approx(OPTIONS.renew_deadline, abs=0.2)
        fenced = client.fenced(elector.fence())
        assert await refused(lambda: fenced.create(ConfigMap, config_map("late")))
        assert emu.get("v1", "ConfigMap", "late", "default") is None


async def test_another_holder_ends_leadership_at_once(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        campaign, client = await leading(emu, nursery)
        lease = emu.get("coordination.k8s.io/v1", "Lease", "fence-test", "default")
        assert lease is not None and lease["spec"]["holderIdentity"] == "me"
        # Someone else took the lease (as after a freeze longer than the lease): the record
        # says so, although our own renew deadline is still far.
        lease["spec"]["holderIdentity"] = "intruder"
        emu.update(lease)
        taken_at = trio.current_time()
        patches = emu.counters.get("patch", "leases")
        await campaign.ended.wait()
        assert campaign.lost is not None and "held by intruder" in str(campaign.lost)
        assert campaign.lost_at - taken_at <= OPTIONS.retry_period + 0.2, "the next renewal"
        assert campaign.lost_at < campaign.elector.renewed_at + OPTIONS.renew_deadline
        assert emu.counters.get("patch", "leases") == patches, "no write to take it back"
        current = await client.get(Lease, "fence-test", namespace="default")
        assert current.spec.holder_identity == "intruder", "not released either: not ours"


async def test_a_resumed_leader_writes_nothing_until_it_renews(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    """A freeze longer than the lease, during which another replica took over: on waking,
    every write is refused at once and leadership ends at the first look at the lease."""
    emu.create(config_map("target"))
    async with trio.open_nursery() as nursery:
        campaign, client = await leading(emu, nursery)
        elector = campaign.elector
        fenced = client.fenced(elector.fence())
        lease = emu.get("coordination.k8s.io/v1", "Lease", "fence-test", "default")
        assert lease is not None
        lease["spec"]["holderIdentity"] = "successor"
        emu.update(lease)
        mock_clock.jump(OPTIONS.lease_duration + 1)  # frozen; the successor took over
        writes = emu.counters.get("patch", "configmaps")
        body = {"data": {"a": "late"}}
        assert await refused(lambda: fenced.patch(ConfigMap, "target", body, namespace="default"))
        await campaign.ended.wait()
        assert campaign.lost is not None
        assert emu.counters.get("patch", "configmaps") == writes, "no write left the process"


async def test_the_manager_fences_its_client_for_leader_only_work(emu: Emulator) -> None:
    client = Client.from_url(emu.url, token=emu.token)
    elected = Manager(
        client,
        metrics_bind_address="0",
        health_probe_bind_address="0",
        leader_election=OPTIONS,
    )
    assert elected.fence is not None and elected.client.fence is elected.fence
    assert elected.unfenced_client is client and client.fence is None
    # The elector's own view of the client: same wire, unfenced, limits of its own.
    assert elected.elector is not None and elected.elector.client.wire is client.wire
    assert elected.elector.client.fence is None
    alone = Manager(client, metrics_bind_address="0", health_probe_bind_address="0")
    assert alone.fence is None and alone.client is client
