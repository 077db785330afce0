"""The simulated cluster's indexes agree with a brute-force map after any sequence of moves."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kubetrio.runtime.emulator.cluster.indexes import Controlled, PodsByNode
from kubetrio.runtime.emulator.store import Key

keys = st.tuples(st.sampled_from(["", "ns"]), st.sampled_from(["a", "b", "c", "d"]))
places = st.sampled_from(["", "n1", "n2", "n3"])


@given(st.lists(st.tuples(keys, places)))
def test_pods_by_node_matches_the_last_move_of_each_pod(moves: list[tuple[Key, str]]) -> None:
    index = PodsByNode()
    last: dict[Key, str] = {}
    for key, node in moves:
        index.move(key, node)
        last[key] = node
    for node in ("n1", "n2", "n3"):
        assert index.keys_on(node) == {k for k, n in last.items() if n == node}
    assert index.keys_on("") == set()
    rebuilt = PodsByNode()
    rebuilt.rebuild(last.items())
    for node in ("n1", "n2", "n3"):
        assert rebuilt.keys_on(node) == index.keys_on(node)


@given(st.lists(st.tuples(st.sampled_from(["pods", "replicasets.apps"]), keys, places)))
def test_controlled_matches_the_last_owner_of_each_object(
    notes: list[tuple[str, Key, str]],
) -> None:
    index = Controlled(frozenset({"pods", "replicasets.apps"}))
    last: dict[tuple[str, Key], str] = {}
    for resource, key, owner in notes:
        index.note(resource, key, owner)
        last[(resource, key)] = owner
    for resource in ("pods", "replicasets.apps"):
        for owner in ("n1", "n2", "n3"):
            want = {k for (r, k), o in last.items() if r == resource and o == owner}
            assert index.keys(resource, owner) == want
