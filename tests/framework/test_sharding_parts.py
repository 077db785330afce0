"""Sharding's parts on their own: options, shard states from Leases, the builder option."""

from __future__ import annotations

import sys

import pytest
import trio
import trio.testing

from kubetrio.api.coordination import Lease, LeaseSpec
from kubetrio.api.core import ConfigMap, Secret
from kubetrio.api.meta import OwnerReference
from kubetrio.runtime.cache.informer import Informer
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.leaderelection.elector import micro_time
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.sharding.labels import drain_label, object_key, owner_key, shard_label
from kubetrio.runtime.sharding.metaview import Placement, placement_view
from kubetrio.runtime.sharding.options import ShardingOptions
from kubetrio.runtime.sharding.shards import ORPHAN_AFTER, LeaseObserver, ShardState
from kubetrio.testing.servers import ApiServer


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"ring": ""}, "sharding.ring"),
        ({"ring": "a/b"}, "sharding.ring"),
        ({"ring": "x" * 64}, "sharding.ring"),
        ({"namespace": ""}, "sharding.namespace"),
        ({"shard_id": "Upper"}, "sharding.shard_id"),
        ({"shard_id": "-x"}, "sharding.shard_id"),
        ({"renew_deadline": 20.0}, "lease_duration > renew_deadline"),
        ({"sync_period": 0.0}, "sharding.sync_period"),
        ({"concurrent_moves": 0}, "sharding.concurrent_moves"),
    ],
)
def test_bad_options_name_the_field(options: dict[str, object], field: str) -> None:
    given: dict[str, object] = {"ring": "r", "namespace": "ns", "shard_id": "s-0", **options}
    with pytest.raises(ValueError, match=field):
        ShardingOptions(**given)  # type: ignore[arg-type]


def test_shard_id_defaults_to_the_host_name() -> None:
    assert ShardingOptions(ring="r", namespace="ns").shard_id


STAMP = [""]


def lease(name: str, holder: str | None, renewed: int = 0, stamp: str = "") -> Lease:
    body = Lease(
        spec=LeaseSpec(
            holder_identity=holder,
            lease_duration_seconds=10,
            renew_time=stamp or STAMP[0],
            acquire_time=stamp or STAMP[0],
            lease_transitions=renewed,
        )
    )
    body.metadata.name = name
    return body


async def test_states_follow_what_this_process_observed(
    mock_clock: trio.testing.MockClock,
) -> None:
    observer = LeaseObserver()
    STAMP[0] = micro_time()  # the same record every call: only the observer's clock moves
    start = trio.current_time()
    assert observer.shard(lease("a", "a"), start).state is ShardState.READY
    # Unchanged for less than its duration: still ready; then uncertain (to take over).
    assert observer.shard(lease("a", "a"), start + 9).state is ShardState.READY
    assert observer.shard(lease("a", "a"), start + 10).state is ShardState.UNCERTAIN
    # A renewal (any change of the record) starts the count again.
    renewed = observer.shard(lease("a", "a", renewed=1), start + 11)
    assert renewed.state is ShardState.READY
    assert renewed.next_change == 10
    # Released or taken over: dead at once, orphaned a minute later.
    assert observer.shard(lease("a", ""), start + 12).state is ShardState.DEAD
    taken = observer.shard(lease("a", "kubetrio-sharder"), start + 13)
    assert taken.state is ShardState.DEAD
    assert not taken.state.available
    assert observer.shard(lease("a", "kubetrio-sharder"), start + 13 + ORPHAN_AFTER).state is (
        ShardState.ORPHANED
    )


def sharded_manager() -> Manager:
    client = Client.from_url("http://127.0.0.1:1")
    options = ShardingOptions(ring="r", namespace="ns", shard_id="s-0")
    return Manager(client, sharding=options)


def test_sharded_needs_sharding_options() -> None:
    manager = Manager(Client.from_url("http://127.0.0.1:1"))
    with pytest.raises(ValueError, match=r"sharded\(\) needs the manager's sharding options"):
        manager.controller("c").for_(ConfigMap).sharded()


class Nothing:
    async def reconcile(self, key: object) -> object:
        raise AssertionError("not called")


def test_sharded_controller_selects_its_shard_and_runs_on_every_replica() -> None:
    manager = sharded_manager()
    controller = (
        manager.controller("c")
        .for_(ConfigMap, label_selector="app=x")
        .owns(Secret)
        .sharded()
        .complete(Nothing())  # type: ignore[arg-type]
    )
    selectors = [source.informer.label_selector for source in controller.sources]
    assert selectors == [f"app=x,{shard_label('r')}=s-0", f"{shard_label('r')}=s-0"]
    assert controller.needs_shard_lease and not controller.needs_leader_election
    assert manager.shard is not None
    assert [(k.kind, k.controlled, k.label_selector) for k in manager.shard.kinds] == [
        (ConfigMap, False, "app=x"),
        (Secret, True, None),
    ]


def test_a_kind_reconciled_and_owned_is_one_owned_reconciled_kind() -> None:
    manager = sharded_manager()
    manager.controller("a").for_(ConfigMap).sharded().complete(Nothing())  # type: ignore[arg-type]
    manager.controller("b").for_(Secret).owns(ConfigMap).sharded().complete(Nothing())  # type: ignore[arg-type]
    assert manager.shard is not None
    kinds = {k.kind: (k.controlled, k.reconciled, k.drains) for k in manager.shard.kinds}
    assert kinds == {ConfigMap: (True, True, True), Secret: (False, False, True)}


def test_a_kind_is_sharded_one_way() -> None:
    manager = sharded_manager()
    manager.controller("a").for_(ConfigMap).sharded().complete(Nothing())  # type: ignore[arg-type]
    builder = manager.controller("b").for_(Secret).owns(ConfigMap, namespace="x").sharded()
    with pytest.raises(ValueError, match="other namespaces or selectors"):
        builder.complete(Nothing())  # type: ignore[arg-type]


async def test_a_placement_keeps_only_what_assignment_reads(api_server: ApiServer) -> None:
    """The sharder's per-object record: the sharding labels of every ring and the controller
    owner (without its uid) survive decoding; other labels, owners and metadata do not."""
    client = api_server.client()
    namespace = api_server.namespace
    owner = await client.create(ConfigMap, {"metadata": {"name": "owner"}}, namespace=namespace)
    other = await client.create(ConfigMap, {"metadata": {"name": "other"}}, namespace=namespace)
    labels = {
        shard_label("r"): "s-1",
        drain_label("r"): "true",
        shard_label("another"): "s-2",
        "app": "web",
    }

    def ref(to: ConfigMap, controller: bool) -> dict[str, object]:
        meta = to.metadata
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": meta.name,
            "uid": meta.uid,
            "controller": controller,
            "blockOwnerDeletion": True,
        }

    await client.create(
        ConfigMap,
        {
            "metadata": {
                "name": "owned",
                "labels": labels,
                "annotations": {"note": "dropped"},
                "ownerReferences": [ref(other, False), ref(owner, True)],
            }
        },
        namespace=namespace,
    )
    view = placement_view(ConfigMap)
    informer = Informer(client, view, namespace=namespace)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(informer.run)
        await informer.wait_for_sync()
        nursery.cancel_scope.cancel()
    placed = informer.lister.get(namespace, "owned")
    assert placed is not None
    meta = placed.metadata
    assert isinstance(meta, Placement)
    assert meta.labels == {key: value for key, value in labels.items() if key != "app"}
    assert meta.owner_references == (
        OwnerReference(api_version="v1", kind="ConfigMap", name="owner", uid="", controller=True),
    )
    assert meta.resource_version and meta.namespace == namespace
    assert owner_key(meta) == f"/ConfigMap/{namespace}/owner"
    assert object_key(ConfigMap, meta) == f"/ConfigMap/{namespace}/owned"
    assert meta.namespace is sys.intern(namespace)  # shared by every cached object
    plain = informer.lister.get(namespace, "other")
    assert plain is not None and plain.metadata.controller_ref() is None
