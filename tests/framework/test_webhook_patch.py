"""The defaulting webhook's JSON patch: applied to the request object it gives the object the
defaulter returned, and fields the typed view does not know survive it."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import jsonpatch
import msgspec
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrio.api.meta import KubeObject, Model, ObjectMeta
from kubetrio.api.registry import KindInfo
from kubetrio.runtime.webhook.admission import MutatingHandler, decode_patch
from kubetrio.runtime.webhook.builder import mutating_path, validating_path
from kubetrio.runtime.webhook.patch import json_patch, replay, view
from kubetrio.runtime.webhook.review import AdmissionRequest, GroupVersionKind


class Inner(Model, kw_only=True):
    name: str = ""
    count: int = 0
    tags: tuple[str, ...] = ()


class Spec(Model, kw_only=True):
    replicas: int = 0
    mode: str = ""
    inner: Inner = msgspec.field(default_factory=Inner)
    items: tuple[Inner, ...] = ()
    selector: dict[str, str] = {}


class Thing(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = KindInfo("example.com/v1", "Thing", "things", True)
    spec: Spec = msgspec.field(default_factory=Spec)


small = st.text("abc", max_size=3)
inners = st.builds(Inner, name=small, count=st.integers(0, 3), tags=st.tuples(small) | st.just(()))
specs = st.builds(
    Spec,
    replicas=st.integers(0, 3),
    mode=small,
    inner=inners,
    items=st.lists(inners, max_size=3).map(tuple),
    selector=st.dictionaries(small, small, max_size=2),
)
things = st.builds(
    Thing,
    metadata=st.builds(ObjectMeta, name=small, labels=st.dictionaries(small, small, max_size=2)),
    spec=specs,
)
# Where unknown fields go: the object, metadata, spec, spec.inner (JSON paths of dicts).
UNKNOWN_PARENTS = ((), ("metadata",), ("spec",), ("spec", "inner"))
unknown_values = st.integers() | st.text(max_size=3) | st.lists(st.integers(), max_size=2)


def at(doc: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def with_unknowns(thing: Thing, unknowns: dict[int, Any]) -> tuple[dict[str, Any], list[Any]]:
    """The thing's JSON with an unknown field under each chosen parent (made if missing)."""
    raw: dict[str, Any] = msgspec.to_builtins(thing)
    placed = []
    for index, value in unknowns.items():
        parent_path = UNKNOWN_PARENTS[index]
        parent = raw
        for key in parent_path:
            parent = parent.setdefault(key, {})
        parent[f"x-unknown-{index}"] = value
        placed.append((parent_path, f"x-unknown-{index}", value))
    return raw, placed


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    original=things,
    changed=things,
    fields=st.sets(st.sampled_from(["labels", "replicas", "mode", "inner", "items", "selector"])),
    unknowns=st.dictionaries(st.integers(0, len(UNKNOWN_PARENTS) - 1), unknown_values),
)
def test_patch_applied_to_the_input_gives_the_returned_object(
    original: Thing, changed: Thing, fields: set[str], unknowns: dict[int, Any]
) -> None:
    raw, placed = with_unknowns(original, unknowns)
    request_raw = copy.deepcopy(raw)
    typed = msgspec.json.decode(msgspec.json.encode(raw), type=Thing)
    before = view(typed)
    # The defaulter: takes some fields from another random object, in place.
    if "labels" in fields:
        typed.metadata.labels = changed.metadata.labels
    for name in fields - {"labels"}:
        setattr(typed.spec, name, getattr(changed.spec, name))
    after = view(typed)

    operations = json_patch(raw, replay(raw, before, after))
    patched = jsonpatch.apply_patch(raw, operations)

    assert raw == request_raw  # the request object itself is left alone
    assert msgspec.json.decode(msgspec.json.encode(patched), type=Thing) == typed
    for parent_path, key, value in placed:
        if parent_path == () or at(after, parent_path) is not None:
            assert at(patched, parent_path)[key] == value, (parent_path, key, operations)
    if before == after:
        assert operations == []


def test_a_struct_left_at_its_defaults_keeps_its_unknown_fields() -> None:
    raw = {"spec": {"inner": {"x-new": 1}}}
    typed = msgspec.convert(raw, Thing)
    before = view(typed)
    typed.spec.inner.count = 2
    operations = json_patch(raw, replay(raw, before, view(typed)))
    assert operations == [{"op": "add", "path": "/spec/inner/count", "value": 2}]


def test_a_field_set_back_to_its_default_is_removed() -> None:
    raw = {"spec": {"mode": "fast", "x-new": 1}}
    typed = msgspec.convert(raw, Thing)
    before = view(typed)
    typed.spec.mode = ""
    operations = json_patch(raw, replay(raw, before, view(typed)))
    assert operations == [{"op": "remove", "path": "/spec/mode"}]


async def test_the_handler_answers_the_patch_base64_encoded() -> None:
    async def default(obj: Thing, request: AdmissionRequest) -> Thing:
        return msgspec.structs.replace(obj, spec=msgspec.structs.replace(obj.spec, replicas=1))

    raw = {"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"x": True}}
    request = AdmissionRequest(
        uid="u",
        kind=GroupVersionKind(group="example.com", version="v1", kind="Thing"),
        operation="CREATE",
        object=msgspec.Raw(msgspec.json.encode(raw)),
    )
    response = await MutatingHandler(Thing, default).handle(request)
    assert response.allowed and response.patch_type == "JSONPatch"
    assert decode_patch(response) == [{"op": "add", "path": "/spec/replicas", "value": 1}]
    await trio.lowlevel.checkpoint()


def test_paths_are_controller_runtimes() -> None:
    assert mutating_path(Thing) == "/mutate-example-com-v1-thing"
    assert validating_path(Thing) == "/validate-example-com-v1-thing"

    class Pod(KubeObject, kw_only=True):
        KIND: ClassVar[KindInfo] = KindInfo("v1", "Pod", "pods", True)

    assert mutating_path(Pod) == "/mutate--v1-pod"
