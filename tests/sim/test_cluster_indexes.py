"""The simulated cluster's indexes agree with a brute-force map after any sequence of changes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kubetrio.emulator.store import Key
from kubetrio.sim.cluster.indexes import ClusterIndexes, ReverseIndex

keys = st.tuples(st.sampled_from(["", "ns"]), st.sampled_from(["a", "b", "c", "d"]))
places = st.sampled_from(["", "n1", "n2", "n3"])


@given(st.lists(st.tuples(keys, places)))
def test_reverse_index_matches_the_last_value_of_each_key(puts: list[tuple[Key, str]]) -> None:
    index = ReverseIndex()
    last: dict[Key, str] = {}
    for key, value in puts:
        index.put(key, value)
        last[key] = value
    for value in ("n1", "n2", "n3"):
        assert index.keys(value) == {k for k, v in last.items() if v == value}
    assert index.keys("") == set()


def _obj(key: Key, node: str, owner: str) -> dict[str, Any]:
    refs = [{"controller": True, "uid": owner}] if owner else []
    return {
        "metadata": {"namespace": key[0], "name": key[1], "ownerReferences": refs},
        "spec": {"nodeName": node},
    }


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["pods", "replicasets.apps", "nodes"]),
            keys,
            places,
            places,
            st.booleans(),
        )
    )
)
def test_cluster_indexes_match_the_last_note_of_each_object(
    notes: list[tuple[str, Key, str, str, bool]],
) -> None:
    indexes = ClusterIndexes()
    last: dict[tuple[str, Key], tuple[str, str]] = {}
    for resource, key, node, owner, gone in notes:
        indexes.note(resource, _obj(key, node, owner), gone=gone)
        if resource != "nodes":
            last[(resource, key)] = ("", "") if gone else (node, owner)
    for value in ("n1", "n2", "n3"):
        on = {k for (r, k), (n, _) in last.items() if r == "pods" and n == value}
        assert indexes.pods_by_node.keys(value) == on
        for resource in ("pods", "replicasets.apps"):
            want = {k for (r, k), (_, o) in last.items() if r == resource and o == value}
            assert indexes.controlled[resource].keys(value) == want
    assert "nodes" not in indexes.controlled
