"""Template hashing: which MachineSet holds which template (MCM's ``ComputeHash``,
``EqualIgnoreHash``, the ``machine-template-hash`` label and the set's name).

The hash is FNV-1a (32 bit) like MCM's, taken over the template's canonical JSON rather than Go's
struct dump, so values differ from MCM's; nothing compares them across implementations — a set
is found by template equality, the hash only names it and keeps its selector disjoint.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import msgspec

TEMPLATE_HASH_LABEL = "machine-template-hash"
# Kubernetes' ``rand.SafeEncodeString`` alphabet: no vowels, no look-alikes, so no words.
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_ENCODED_HASH_LIMIT = 5
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def fnv1a_32(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def template_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """The decimal hash of a template; a collision count makes a fresh one after a name clash."""
    data = msgspec.json.encode(template, order="sorted")
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(8, "little")
    return str(fnv1a_32(data))


def safe_encode(text: str) -> str:
    return "".join(_SAFE_ALPHABET[ord(char) % len(_SAFE_ALPHABET)] for char in text)


def set_name(deployment: str, hash_value: str) -> str:
    """``<deployment>-<first 5 encoded hash characters>`` as MCM names a deployment's sets."""
    return f"{deployment}-{safe_encode(hash_value)[:_ENCODED_HASH_LIMIT]}"


def _comparable(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template minus what MCM updates in place on the current set instead of rolling:
    the hash label, nodeTemplate, machineConfiguration and the class kind."""
    result = copy.deepcopy(dict(template))
    metadata = dict(result.get("metadata") or {})
    metadata.pop("creationTimestamp", None)
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != TEMPLATE_HASH_LABEL}
    metadata["labels"] = labels
    result["metadata"] = {k: v for k, v in metadata.items() if v not in ({}, None)}
    spec = dict(result.get("spec") or {})
    spec.pop("nodeTemplate", None)
    spec.pop("machineConfiguration", None)
    machine_class = dict(spec.get("class") or {})
    machine_class.pop("kind", None)
    spec["class"] = machine_class
    result["spec"] = spec
    return result


def equal_ignore_hash(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    """Two templates are the same revision when they differ only in what ``_comparable``
    drops (MCM's ``EqualIgnoreHash``)."""
    return _comparable(first) == _comparable(second)


def with_hash_label(template: Mapping[str, Any], hash_value: str) -> dict[str, Any]:
    result = copy.deepcopy(dict(template))
    metadata = result.setdefault("metadata", {})
    metadata["labels"] = {**(metadata.get("labels") or {}), TEMPLATE_HASH_LABEL: hash_value}
    return result


def without_hash_label(template: Mapping[str, Any]) -> dict[str, Any]:
    """A set's template as a deployment holds it (rollback copies it back)."""
    result = copy.deepcopy(dict(template))
    metadata = result.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("labels"), dict):
        metadata["labels"].pop(TEMPLATE_HASH_LABEL, None)
    return result
