"""Keeping a Node's labels, annotations and taints in line with its Machine's node template.

MCM's rule: what the template applied last time is remembered in an annotation on the node;
a key that left the template is removed from the node, a key in the template is set, and keys
the template never applied (other controllers', the kubelet's, an operator's) are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubetrio.api.core import Node, Taint
from kubetrio.api.machine import NodeTemplate
from kubetrio.runtime.client.typed import Client

LAST_APPLIED_ANNOTATION = "node.machine.sapcloud.io/last-applied-anno-labels-taints"

_template_decoder = msgspec.json.Decoder(NodeTemplate)


def last_applied(node: Node) -> NodeTemplate:
    """What the template applied last time; an unreadable record counts as nothing applied."""
    raw = node.metadata.annotations.get(LAST_APPLIED_ANNOTATION)
    if not raw:
        return NodeTemplate()
    try:
        return _template_decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return NodeTemplate()


def _taint_key(taint: Taint) -> tuple[str, str]:
    return (taint.key, taint.effect)


def _sync_map(
    current: dict[str, str], wanted: dict[str, str], applied: dict[str, str]
) -> dict[str, str | None]:
    """Merge-patch entries: wanted values that differ, None for keys the template dropped."""
    changes: dict[str, str | None] = {
        key: value for key, value in wanted.items() if current.get(key) != value
    }
    for key in applied:
        if key not in wanted and key in current:
            changes[key] = None
    return changes


@dataclass(slots=True)
class NodeTemplateChange:
    labels: dict[str, str | None] = field(default_factory=dict)
    annotations: dict[str, str | None] = field(default_factory=dict)
    taints: list[dict[str, Any]] | None = None  # the whole new list, when it changes
    record: str = ""  # the new last-applied annotation value

    @property
    def changed(self) -> bool:
        return bool(self.labels or self.annotations or self.taints is not None)

    def merge_patch(self, resource_version: str) -> dict[str, Any]:
        """A merge patch conditional on ``resource_version`` (the taint list is replaced whole,
        so a concurrent change to it must fail the write rather than be lost)."""
        metadata: dict[str, Any] = {
            "resourceVersion": resource_version,
            "annotations": {**self.annotations, LAST_APPLIED_ANNOTATION: self.record},
        }
        if self.labels:
            metadata["labels"] = self.labels
        patch: dict[str, Any] = {"metadata": metadata}
        if self.taints is not None:
            patch["spec"] = {"taints": self.taints}
        return patch


def template_change(node: Node, template: NodeTemplate) -> NodeTemplateChange:
    """What to write so ``node`` carries ``template`` (nothing when it already does)."""
    applied = last_applied(node)
    wanted_meta = template.metadata
    change = NodeTemplateChange(
        labels=_sync_map(node.metadata.labels, wanted_meta.labels, applied.metadata.labels),
        annotations=_sync_map(
            node.metadata.annotations, wanted_meta.annotations, applied.metadata.annotations
        ),
    )
    wanted_taints = {_taint_key(t): t for t in template.spec.taints}
    dropped = {_taint_key(t) for t in applied.spec.taints} - wanted_taints.keys()
    kept = [
        t
        for t in node.spec.taints
        if _taint_key(t) not in dropped and _taint_key(t) not in wanted_taints
    ]
    new_taints = kept + list(wanted_taints.values())
    if sorted(map(_taint_doc, new_taints), key=str) != sorted(
        map(_taint_doc, node.spec.taints), key=str
    ):
        change.taints = [_taint_doc(t) for t in new_taints]
    change.record = msgspec.json.encode(template).decode()
    if change.changed or node.metadata.annotations.get(LAST_APPLIED_ANNOTATION) != change.record:
        change.annotations.setdefault(LAST_APPLIED_ANNOTATION, change.record)
    return change


def _taint_doc(taint: Taint) -> dict[str, Any]:
    doc = msgspec.to_builtins(taint)
    assert isinstance(doc, dict)
    return doc


async def sync_node_template(client: Client, node: Node, template: NodeTemplate) -> bool:
    """Write what ``node`` lacks of ``template``; True when a write was needed. A conflict
    (the node changed since it was read) propagates, to be retried on fresh data."""
    change = template_change(node, template)
    if not change.changed and LAST_APPLIED_ANNOTATION not in change.annotations:
        return False
    await client.patch(Node, node.name, change.merge_patch(node.metadata.resource_version))
    return True
