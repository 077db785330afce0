"""The pure reconciler helpers: status conditions (``meta.SetStatusCondition`` semantics),
owner references (controller-runtime's rules), and merge patches (RFC 7386, property-tested:
the patch applied to ``before`` gives ``after``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubetrio.api.condition import Condition
from kubetrio.api.core import ConfigMap, Node
from kubetrio.api.meta import ObjectMeta, OwnerReference
from kubetrio.runtime import (
    AlreadyOwnedError,
    apply_merge_patch,
    find_condition,
    is_condition_true,
    is_controlled_by,
    merge_patch,
    new_controller_ref,
    remove_condition,
    set_condition,
    set_controller_reference,
    set_owner_reference,
)

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
T1 = T0 + dt.timedelta(minutes=5)


def test_a_new_condition_is_appended_with_its_transition_time() -> None:
    other = Condition(type="Other", status="True", reason="R", message="", last_transition_time="x")
    out = set_condition((other,), "Ready", "False", "Waiting", "not yet", 3, now=T0)
    assert out[0] is other
    assert out[1] == Condition(
        type="Ready",
        status="False",
        reason="Waiting",
        message="not yet",
        last_transition_time="2026-01-01T00:00:00Z",
        observed_generation=3,
    )


def test_same_status_keeps_the_transition_time_but_takes_the_rest() -> None:
    first = set_condition((), "Ready", "False", "Waiting", "a", 1, now=T0)
    again = set_condition(first, "Ready", "False", "StillWaiting", "b", 2, now=T1)
    ready = find_condition(again, "Ready")
    assert ready is not None
    assert ready.last_transition_time == "2026-01-01T00:00:00Z"
    assert (ready.reason, ready.message, ready.observed_generation) == ("StillWaiting", "b", 2)
    assert set_condition(again, "Ready", "False", "StillWaiting", "b", 2, now=T1) == again


def test_a_status_change_moves_the_transition_time_in_place() -> None:
    first = set_condition((), "Ready", "False", "Waiting", "", now=T0)
    first = set_condition(first, "Synced", "True", "Done", "", now=T0)
    flipped = set_condition(first, "Ready", "True", "Ready", "", now=T1)
    assert [c.type for c in flipped] == ["Ready", "Synced"]  # position kept
    assert flipped[0].last_transition_time == "2026-01-01T00:05:00Z"
    assert is_condition_true(flipped, "Ready") and not is_condition_true(first, "Ready")
    assert not is_condition_true(flipped, "Missing")


def test_remove_condition() -> None:
    both = set_condition(
        set_condition((), "A", "True", "r", "", now=T0), "B", "True", "r", "", now=T0
    )
    assert [c.type for c in remove_condition(both, "A")] == ["B"]
    assert remove_condition(both, "C") == both
    assert find_condition(remove_condition(both, "A"), "A") is None


def test_a_condition_encodes_every_required_field() -> None:
    (ready,) = set_condition((), "Ready", "True", "Ok", "", now=T0)
    assert msgspec.to_builtins(ready) == {
        "type": "Ready",
        "status": "True",
        "reason": "Ok",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def cm(name: str, uid: str = "", namespace: str = "default") -> ConfigMap:
    return ConfigMap(metadata=ObjectMeta(name=name, namespace=namespace, uid=uid))


def test_set_controller_reference_sets_controller_and_block_owner_deletion() -> None:
    owner, child = cm("owner", "u1"), cm("child")
    owned = set_controller_reference(owner, child)
    assert child.metadata.owner_references == ()  # never mutates what it was given
    assert owned.metadata.owner_references == (
        OwnerReference(
            api_version="v1",
            kind="ConfigMap",
            name="owner",
            uid="u1",
            controller=True,
            block_owner_deletion=True,
        ),
    )
    assert owned.metadata.owner_references == (new_controller_ref(owner),)
    assert is_controlled_by(owned, owner)
    assert not is_controlled_by(child, owner)
    # Again for the same owner (a new uid after recreation): replaced, not added.
    again = set_controller_reference(cm("owner", "u2"), owned)
    assert [r.uid for r in again.metadata.owner_references] == ["u2"]


def test_a_second_controller_is_refused_by_name() -> None:
    owned = set_controller_reference(cm("first", "u1"), cm("child"))
    with pytest.raises(
        AlreadyOwnedError, match="already owned by another ConfigMap controller first"
    ):
        set_controller_reference(cm("second", "u2"), owned)
    # A plain owner reference is fine beside the controller.
    both = set_owner_reference(cm("second", "u2"), owned)
    assert [(r.name, r.controller) for r in both.metadata.owner_references] == [
        ("first", True),
        ("second", None),
    ]
    assert is_controlled_by(both, cm("first", "u1"))


def test_owners_the_garbage_collector_could_not_resolve_are_refused() -> None:
    with pytest.raises(ValueError, match="cross-namespace owner references are disallowed"):
        set_controller_reference(cm("owner", "u1", "a"), cm("child", namespace="b"))
    with pytest.raises(ValueError, match="cluster-scoped resource must not have a namespace"):
        set_owner_reference(cm("owner", "u1"), Node(metadata=ObjectMeta(name="n")))
    with pytest.raises(ValueError, match=r"has no metadata\.uid"):
        set_controller_reference(cm("owner"), cm("child"))
    # A cluster-scoped owner of a namespaced object is fine.
    node = Node(metadata=ObjectMeta(name="n", uid="n1"))
    assert is_controlled_by(set_controller_reference(node, cm("child")), node)


def test_merge_patch_of_typed_objects() -> None:
    before = ConfigMap(metadata=ObjectMeta(name="c", labels={"a": "1", "b": "2"}), data={"x": "1"})
    after = msgspec.structs.replace(
        before,
        metadata=msgspec.structs.replace(before.metadata, labels={"a": "1", "c": "3"}),
        data={},
    )
    assert merge_patch(before, after) == {
        "metadata": {"labels": {"b": None, "c": "3"}},
        "data": None,
    }
    assert merge_patch(before, before) == {}


def test_json_types_are_compared_strictly() -> None:
    assert merge_patch({"a": 1}, {"a": True}) == {"a": True}
    assert merge_patch({"a": [1]}, {"a": [1.0]}) == {"a": [1.0]}
    assert merge_patch({"a": {"b": 1}}, {"a": 2}) == {"a": 2}
    assert merge_patch([1], {"a": 1}) == {"a": 1}


# JSON without nulls: RFC 7386 cannot set a value to null (null means "remove").
scalars = st.one_of(
    st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text()
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(max_size=3), json_values, max_size=5)


@pytest.mark.slow
@given(json_objects, json_objects)
def test_applying_the_patch_to_before_gives_after(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    patch = merge_patch(before, after)
    assert canonical(apply_merge_patch(before, patch)) == canonical(after)
    assert (patch == {}) == (canonical(before) == canonical(after))  # minimal when equal


def canonical(value: Any) -> bytes:
    """JSON equality: key order aside, and ``true`` is not ``1``."""
    return msgspec.json.encode(value, order="sorted")
