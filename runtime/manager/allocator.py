"""How a long-running manager sets glibc's allocator (``kubetrio run``, ``kubetrio sharder``).

Why: glibc hands a request above its mmap threshold (128 KiB at start) a mapping of its own,
which goes back to the system the moment it is freed. But the threshold moves: whenever such a
mapped block is freed, glibc raises the threshold to that block's size (up to 32 MiB) and the
heap's trim threshold to twice that, expecting the program to ask for as much again soon. A
manager does, on every socket read: the HTTP layer asks for a 256 KiB buffer
(``kubetrio.runtime.http.connection.READ_SIZE``) and keeps what arrived. The first full read
freed lifts the threshold past that size, and from then on every read buffer is carved from the
heap instead. Carved, shrunk and freed while the objects decoded from it are still being
allocated around it, those buffers leave holes the heap cannot hand back, so under churn
the process grows in steps: in ``tests/bench/churn.py`` (2 000 Pods and 200 Secrets created
and deleted, over and over) the live heap (Python's and glibc's) stayed the same to the block
while glibc's free space grew from 1.0 to 4.2 MiB within two minutes, and RSS by 7 % in ten.

``pin_mmap_threshold`` sets the threshold to its start value with ``mallopt``, which also stops
it (and the trim threshold) from moving: the process keeps its start-up behaviour for good.
Large short-lived buffers stay mappings, returned whole when freed; the heap holds only
blocks below 128 KiB. The price is a map and an unmap per large read, which a fresh process pays
anyway until its first large read is freed; ``docs/performance.md`` has the figures.

Only glibc moves its threshold; on other C libraries (musl, macOS) this does nothing. A
``MALLOC_MMAP_THRESHOLD_`` in the environment is the operator's choice and is left alone.

Example::

    from kubetrio.runtime.manager.allocator import pin_mmap_threshold

    pin_mmap_threshold()  # once, early in a manager process
"""

from __future__ import annotations

import ctypes
import os
from typing import Final

__all__ = ["MMAP_THRESHOLD", "pin_mmap_threshold"]

# glibc's mallopt parameter number for the threshold, and the threshold's start value.
_M_MMAP_THRESHOLD: Final = -3
MMAP_THRESHOLD: Final = 128 * 1024
_ENVIRONMENT: Final = "MALLOC_MMAP_THRESHOLD_"


def pin_mmap_threshold() -> bool:
    """Fix glibc's mmap threshold at ``MMAP_THRESHOLD``; whether it was set (False off glibc,
    or when the environment sets it already)."""
    if not _glibc() or _ENVIRONMENT in os.environ:
        return False
    libc = ctypes.CDLL(None)  # the process's own C library
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def _glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError):  # not a name this platform knows
        return False
