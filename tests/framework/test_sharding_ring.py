"""The consistent-hash ring: deterministic, Go-compatible, even, and minimal on change."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from kubetrio.api.core import ConfigMap
from kubetrio.api.meta import ObjectMeta, OwnerReference
from kubetrio.runtime.sharding.labels import object_key, owner_key
from kubetrio.runtime.sharding.ring import Ring, hash64

KEYS = [f"/ConfigMap/default/cm-{i}" for i in range(3000)]


def test_hash_is_xxhash64_seed_0() -> None:
    # xxHash64's published digests for "" and "a" (seed 0): what Go's xxhash.Sum64String gives.
    assert hash64("") == 0xEF46DB3751D8E999
    assert hash64("a") == 0xD24EC4F1A98C6E5B


def test_same_members_same_owners_whatever_the_order() -> None:
    one, two = Ring(["a", "b", "c"]), Ring(["c", "a", "b"])
    assert [one.owner(k) for k in KEYS] == [two.owner(k) for k in KEYS]


def test_empty_ring_owns_nothing() -> None:
    assert Ring([]).owner("x") is None
    assert not Ring([])


def test_shares_are_even_with_100_tokens() -> None:
    counts = Counter(Ring(["shard-0", "shard-1", "shard-2"]).owner(k) for k in KEYS)
    assert set(counts) == {"shard-0", "shard-1", "shard-2"}
    # 100 virtual tokens keep each share within a third of the fair one.
    assert all(len(KEYS) / 3 * 2 / 3 < n < len(KEYS) / 3 * 4 / 3 for n in counts.values())


members = st.sets(st.text("abcdefghij-0123456789", min_size=1, max_size=12), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(members=members, newcomer=st.text("klmnop", min_size=1, max_size=8))
def test_adding_a_member_moves_keys_only_to_it(members: set[str], newcomer: str) -> None:
    before, after = Ring(members), Ring(members | {newcomer})
    for key in KEYS[:500]:
        old, new = before.owner(key), after.owner(key)
        assert new in (old, newcomer)


@settings(max_examples=40, deadline=None)
@given(members=members.filter(lambda m: len(m) > 1), data=st.data())
def test_removing_a_member_moves_only_its_keys(members: set[str], data: st.DataObject) -> None:
    leaving = data.draw(st.sampled_from(sorted(members)))
    before, after = Ring(members), Ring(members - {leaving})
    for key in KEYS[:500]:
        old = before.owner(key)
        if old != leaving:
            assert after.owner(key) == old


def test_object_keys_follow_the_reference_spelling() -> None:
    meta = ObjectMeta(name="cm", namespace="ns")
    assert object_key(ConfigMap, meta) == "/ConfigMap/ns/cm"
    owned = ObjectMeta(
        name="child-x1",
        namespace="ns",
        owner_references=(
            OwnerReference(api_version="apps/v1", kind="ReplicaSet", name="rs", uid="u"),
            OwnerReference(
                api_version="apps/v1", kind="Deployment", name="d", uid="v", controller=True
            ),
        ),
    )
    assert owner_key(owned) == "apps/Deployment/ns/d"
    assert owner_key(meta) is None
