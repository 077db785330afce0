"""What the storage GC asks of the API server (``kubetrio-manager-role``): the Nodes that
exist, to find the backend's nodes without one."""

from __future__ import annotations

from kubetrio.api.core import Node
from kubetrio.runtime.gen.rbac import Permissions, cached

RBAC = Permissions(cluster=cached(Node.KIND))
