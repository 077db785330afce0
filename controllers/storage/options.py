"""The storage-node controllers' options (the ``storage`` section of the manager's
configuration): one definition for ``nodedelete`` and ``storagegc``, with StorageOS
api-manager's defaults."""

from __future__ import annotations

import msgspec

from kubetrio.controllers.storage.backend import DEFAULT_CSI_DRIVER
from kubetrio.runtime.util.duration import Duration
from kubetrio.runtime.util.options import Name, Options

__all__ = ["DEFAULT_DELETE_TIMEOUT", "StorageOptions"]

DEFAULT_DELETE_TIMEOUT = Duration(20)


class StorageOptions(Options, kw_only=True, frozen=True):
    """StorageOS api-manager's names where it has them. Unset ``backend_url``: no backend, and
    the controllers are not started."""

    csi_driver: Name = DEFAULT_CSI_DRIVER
    backend_url: str | None = msgspec.field(default=None, name="backendURL")
    delete_timeout: Duration = DEFAULT_DELETE_TIMEOUT
    gc_delay: Duration = Duration(30)  # 0 means StorageOS's 10 s
    gc_interval: Duration = Duration(3600)  # 0 disables the periodic GC
