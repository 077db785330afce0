"""What a storage backend can say no with, typed so the controllers can tell "try again later"
from "already gone" without parsing messages.

Every message is one line that names the storage node (or the request) it is about and carries
the backend's own reason, which is what an operator needs in a log line or an Event.
"""

from __future__ import annotations

# The reasons StorageOS's api-manager gives for its two refusals; used when a backend answers
# with the status but without a readable reason of its own.
IN_USE_REASON = "node still in use"
LOCKED_REASON = "node lock has not yet expired"


class StorageError(Exception):
    """Any failed backend operation. ``reason`` is the backend's own words (or ours)."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


class NodeError(StorageError):
    """A refusal about one storage node, named in the message."""

    default_reason = ""

    def __init__(self, node: str, reason: str = "") -> None:
        reason = reason or self.default_reason
        super().__init__(f"storage node {node}: {reason}", reason)
        self.node = node


class NodeNotFound(NodeError):
    """The backend does not know the node: for a delete, the work is already done."""

    default_reason = "node not found"


class NodeInUse(NodeError):
    """The node is still online or still holds a master volume deployment without replicas."""

    default_reason = IN_USE_REASON


class NodeLocked(NodeError):
    """The node is offline but its lock has not expired yet."""

    default_reason = LOCKED_REASON


class BackendUnavailable(StorageError):
    """No (usable) answer at all: connection refused or reset, timed out, not HTTP."""


class BackendError(StorageError):
    """An answer we cannot act on: an unexpected HTTP status, or a reply that fails validation."""

    def __init__(self, message: str, status: int = 0, reason: str = "") -> None:
        super().__init__(message, reason)
        self.status = status
