"""The garbage-collection parts of ObjectMeta validation, one call for the store's writes."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.gc.ownerrefs import check_owner_references
from kubetrio.emulator.gc.policy import check_gc_finalizers


def check_gc_metadata(group: str, kind: str, name: str, md: dict[str, Any]) -> None:
    check_owner_references(group, kind, name, md)
    check_gc_finalizers(group, kind, name, md)
