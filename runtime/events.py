"""Kubernetes Events: how controllers tell users what happened to an object.

Recording must never fail a reconcile (an event is information, not state), so errors are
logged and swallowed. Messages are truncated to the API's 1 kB limit.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from kubetrio.api.core import Event, EventSource, ObjectReference
from kubetrio.api.meta import KubeObject, ObjectMeta, format_time
from kubetrio.runtime.client import Client
from kubetrio.runtime.errors import ApiError
from kubetrio.runtime.log import get_logger
from kubetrio.runtime.rbac import Permissions, on

log = get_logger("kubetrio.events")

MAX_MESSAGE = 1024

# What a controller recording events needs: each goes to the namespace of its object (the
# ``default`` namespace for cluster-scoped ones), so anywhere. Recording only ever creates.
RBAC = Permissions(cluster=(on(Event.KIND, "create"),))


class EventRecorder:
    def __init__(self, client: Client, component: str, host: str = "") -> None:
        self.client = client
        self.component = component
        self.host = host

    async def record(self, obj: KubeObject, type_: str, reason: str, message: str) -> None:
        """``type_`` is "Normal" or "Warning"; ``reason`` is UpperCamelCase, short."""
        kind = obj.KIND
        now = format_time(datetime.now(UTC))
        namespace = obj.metadata.namespace or "default"
        event = Event(
            metadata=ObjectMeta(
                name=f"{obj.metadata.name}.{uuid.uuid4().hex[:16]}", namespace=namespace
            ),
            involved_object=ObjectReference(
                api_version=kind.api_version,
                kind=kind.kind,
                namespace=obj.metadata.namespace,
                name=obj.metadata.name,
                uid=obj.metadata.uid,
                resource_version=obj.metadata.resource_version,
            ),
            reason=reason,
            message=message[:MAX_MESSAGE],
            type=type_,
            count=1,
            first_timestamp=now,
            last_timestamp=now,
            source=EventSource(component=self.component, host=self.host),
            reporting_component=self.component,
        )
        try:
            await self.client.create(Event, event, namespace=namespace)
        except ApiError as error:
            log.warning("could not record event", reason=reason, error=str(error))
