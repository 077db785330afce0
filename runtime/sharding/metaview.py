"""Metadata-only views of a kind: what the sharder lists and watches.

The sharder needs an object's name, namespace, labels, owner references and resourceVersion,
never its spec or status. A view holding only ``metadata`` makes the decoder skip the rest, so
the sharder's store costs a metadata's worth per object whatever the kind's size.
"""

from __future__ import annotations

import functools
from typing import cast

import msgspec

from kubetrio.api.meta import KubeObject, kind_of


@functools.cache
def metadata_view(kind: type[KubeObject]) -> type[KubeObject]:
    """A ``KubeObject`` subclass addressing ``kind`` on the server and holding only metadata."""
    info = kind_of(kind)
    view = msgspec.defstruct(
        f"{info.kind}Metadata",
        [],
        bases=(KubeObject,),
        namespace={"KIND": info, "__doc__": f"{info.kind}: metadata only."},
        module=__name__,
        kw_only=True,
    )
    return cast(type[KubeObject], view)
