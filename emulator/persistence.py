"""``--state FILE``: the store written atomically (temp file + rename), debounced after writes
and once more on shutdown, and read back on start so resourceVersions keep increasing."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import trio

from kubetrio.emulator.store import Store

log = logging.getLogger(__name__)
FORMAT_VERSION = 1


def encode_state(store: Store) -> bytes:
    parts = [
        b'{"version":'
        + str(FORMAT_VERSION).encode()
        + b',"resourceVersion":'
        + str(store.rv).encode()
        + b',"objects":['
    ]
    items = [
        b'{"resource":' + msgspec.json.encode(key) + b',"object":' + entry.raw + b"}"
        for key, entry in store.snapshot()
    ]
    parts.append(b",\n".join(items))
    parts.append(b"]}\n")
    return b"".join(parts)


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_state(store: Store, path: Path) -> bool:
    """Restore ``path`` into an empty store; False when there is no state yet."""
    if not path.exists():
        return False
    data: Any = msgspec.json.decode(path.read_bytes())
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        raise ValueError(f"{path}: not a kubetrio emulator state file (version {FORMAT_VERSION})")
    store.rv = store.origin_rv = int(data["resourceVersion"])
    skipped = 0
    for item in data["objects"]:
        rt = store.types.by_key(item["resource"])
        if rt is None:
            skipped += 1
            continue
        store.load(rt, item["object"])
    if skipped:
        log.warning("state restore skipped objects of unknown resources count=%d", skipped)
    return True


class Persister:
    def __init__(self, store: Store, path: Path, debounce: float = 0.5) -> None:
        self.store = store
        self.path = path
        self.debounce = debounce
        self._dirty = trio.Event()
        self._written = trio.Event()
        self.writes = 0

    def mark_dirty(self) -> None:
        self._dirty.set()

    async def run(self) -> None:
        while True:
            await self._dirty.wait()
            await trio.sleep(self.debounce)
            self._dirty = trio.Event()
            data = encode_state(self.store)
            await trio.to_thread.run_sync(write_atomically, self.path, data)
            self._note_write()

    def _note_write(self) -> None:
        self.writes += 1
        done, self._written = self._written, trio.Event()
        done.set()

    async def wait_written(self, count: int = 1) -> None:
        """Until at least ``count`` writes have completed."""
        while self.writes < count:
            await self._written.wait()

    def flush(self) -> None:
        """Write synchronously now (shutdown)."""
        write_atomically(self.path, encode_state(self.store))
        self._note_write()
