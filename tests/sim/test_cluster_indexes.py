"""The simulated cluster's indexes agree with a brute-force map after any sequence of changes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kubetrio.emulator.store import Key
from kubetrio.sim.cluster.indexes import ClusterIndexes, ReverseIndex
from kubetrio.sim.cluster.objects import active, pod_ready

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


# A pod's state as the counts see it: (phase, Ready, being deleted).
states = st.tuples(
    st.sampled_from(["Pending", "Running", "Succeeded"]), st.booleans(), st.booleans()
)


def _obj(key: Key, node: str, owner: str, state: tuple[str, bool, bool]) -> dict[str, Any]:
    phase, ready, deleting = state
    refs = [{"controller": True, "uid": owner}] if owner else []
    md: dict[str, Any] = {"namespace": key[0], "name": key[1], "ownerReferences": refs}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    ready_condition = {"type": "Ready", "status": "True" if ready else "False"}
    return {
        "metadata": md,
        "spec": {"nodeName": node},
        "status": {"phase": phase, "conditions": [ready_condition]},
    }


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["pods", "replicasets.apps", "nodes"]),
            keys,
            places,
            places,
            states,
            st.booleans(),
        )
    )
)
def test_cluster_indexes_match_the_last_note_of_each_object(
    notes: list[tuple[str, Key, str, str, tuple[str, bool, bool], bool]],
) -> None:
    indexes = ClusterIndexes()
    last: dict[tuple[str, Key], tuple[str, str, dict[str, Any] | None]] = {}
    for resource, key, node, owner, state, gone in notes:
        obj = _obj(key, node, owner, state)
        indexes.note(resource, obj, gone=gone)
        if resource != "nodes":
            last[(resource, key)] = ("", "", None) if gone else (node, owner, obj)
    pods = {k: (o, obj) for (r, k), (_, o, obj) in last.items() if r == "pods" and obj}
    for value in ("n1", "n2", "n3"):
        on = {k for (r, k), (n, _, _) in last.items() if r == "pods" and n == value}
        assert indexes.pods_by_node.keys(value) == on
        for resource in ("pods", "replicasets.apps"):
            want = {k for (r, k), (_, o, _) in last.items() if r == resource and o == value}
            assert indexes.controlled[resource].keys(value) == want
        counted = {k for k, (o, obj) in pods.items() if o == value and active(obj)}
        assert indexes.active_pods.keys(value) == counted
        ready = {k for k in counted if pod_ready(pods[k][1])}
        assert indexes.ready_pods.keys(value) == ready
    assert "nodes" not in indexes.controlled
