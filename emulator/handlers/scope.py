"""What a handler is given besides the HTTP request: the ``Target`` (the resource, version,
namespace, name and subresource a URL names, and who asks) and the ``Backend`` every handler
works against. kube-apiserver hands its handlers a ``RequestScope`` for the same reason: the
verbs need the same few things, passed explicitly rather than reached through one large
object."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubetrio.emulator.admission.dispatch import Admission
from kubetrio.emulator.audit import AuditRecord
from kubetrio.emulator.auth import Access
from kubetrio.emulator.auth.users import ANONYMOUS_USER, UserInfo
from kubetrio.emulator.faults import Counters, Faults
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.store import Store


@dataclass(slots=True)
class Target:
    rt: ResourceType
    version: str
    namespace: str | None  # None: all namespaces (or cluster-scoped)
    name: str
    sub: str
    watch_path: bool
    pb: bool = False  # the response is protobuf (negotiated from Accept)
    user: UserInfo = ANONYMOUS_USER  # who asks (authenticated and authorized already)
    audit: AuditRecord | None = None  # where webhooks' audit annotations go


@dataclass(slots=True)
class ApiSettings:
    bookmark_interval: float = 60.0
    server_address: str = "127.0.0.1:0"


# (resource key, namespace, version) -> (the stamp it was made at, the joined item bodies)
ListCache = dict[tuple[str, str | None, str], tuple[object, bytes]]


@dataclass(slots=True)
class Backend:
    """The store and what guards it: access control, admission, injected faults and the
    request counters; the settings, and the unfiltered LIST bodies of unchanged resources,
    reused as the watch cache would be."""

    store: Store
    access: Access
    admission: Admission
    faults: Faults
    counters: Counters
    settings: ApiSettings
    list_cache: ListCache = field(default_factory=dict)
