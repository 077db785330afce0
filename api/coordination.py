"""coordination.k8s.io/v1 Lease, the lock behind leader election."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from kubetrio.api.meta import KubeObject, Model
from kubetrio.api.registry import KindInfo, lookup


class LeaseSpec(Model, kw_only=True):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int | None = None


class Lease(KubeObject, kw_only=True):
    KIND: ClassVar[KindInfo] = lookup("coordination.k8s.io/v1", "Lease")
    spec: LeaseSpec = msgspec.field(default_factory=LeaseSpec)
