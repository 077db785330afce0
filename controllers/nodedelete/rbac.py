"""What the node-delete controller asks of the API server (``kubetrio-manager-role``): it
watches Nodes and reports on them; the storage nodes it deletes are the backend's, not
Kubernetes objects."""

from __future__ import annotations

from kubetrio.api.core import Node
from kubetrio.runtime import events
from kubetrio.runtime.gen.rbac import Permissions, cached

RBAC = Permissions(cluster=cached(Node.KIND)) + events.RBAC
