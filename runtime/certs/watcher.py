"""Certificate and key files served by the metrics server, reloaded when they change.

controller-runtime's ``certwatcher``: the files are read once at start (a failure then stops
the manager, naming the files), then re-read on every filesystem event and every 10 s, and a
changed pair replaces the served one; new connections get it, open ones keep theirs. A pair
that fails to load later (a half-written file, a key from another certificate) is logged and
counted and the last good one stays. Counted as ``certwatcher_read_certificate_total`` and
``certwatcher_read_certificate_errors_total``, controller-runtime's names.

The poll runs on trio's clock (tests drive it with a MockClock). The watch is inotify on the
files' folders rather than on the files: a Kubernetes Secret volume swaps a ``..data`` symlink,
and a careful writer renames a new file over the old one; both are events in the folder, and
neither leaves a watch on the file pointing anywhere useful. Without inotify (not Linux) the
poll alone reloads.
"""

from __future__ import annotations

import ssl
import weakref
from pathlib import Path
from typing import Final

import trio
from prometheus_client import CollectorRegistry, Counter

from kubetrio.runtime.certs.serving import CertificateError, ServingPair, server_context
from kubetrio.runtime.util.log import get_logger

__all__ = ["DEFAULT_POLL_INTERVAL", "CertWatcher"]

log = get_logger("kubetrio.certwatcher")

DEFAULT_POLL_INTERVAL: Final = 10.0  # controller-runtime's defaultWatchInterval


# One pair of counters per registry, shared by its watchers (metrics and webhook certificates),
# as controller-runtime's are global.
_COUNTERS: weakref.WeakKeyDictionary[CollectorRegistry, tuple[Counter, Counter]] = (
    weakref.WeakKeyDictionary()
)


def _counters(registry: CollectorRegistry | None) -> tuple[Counter, Counter]:
    if registry is not None and registry in _COUNTERS:
        return _COUNTERS[registry]
    counters = (
        Counter(
            "certwatcher_read_certificate_total",
            "Total number of certificate reads",
            registry=registry,
        ),
        Counter(
            "certwatcher_read_certificate_errors_total",
            "Total number of certificate read errors",
            registry=registry,
        ),
    )
    if registry is not None:
        _COUNTERS[registry] = counters
    return counters


class CertWatcher:
    """The current server context for a certificate file and a key file."""

    def __init__(
        self,
        cert_path: Path,
        key_path: Path,
        *,
        registry: CollectorRegistry | None = None,
        interval: float = DEFAULT_POLL_INTERVAL,
        watch: bool = True,
    ) -> None:
        self.cert_path = cert_path
        self.key_path = key_path
        self.interval = interval
        self.watch = watch
        self._reads, self._errors = _counters(registry)
        self._pair: ServingPair | None = None
        self._context: ssl.SSLContext | None = None
        self.changed = trio.Event()  # set (and replaced) at each reload, for whoever waits

    @property
    def context(self) -> ssl.SSLContext:
        """The context serving the last good pair (``read`` must have succeeded once)."""
        if self._context is None:
            raise RuntimeError("CertWatcher.read() has not loaded a certificate yet")
        return self._context

    def read(self) -> bool:
        """Load the files; True when they hold a pair other than the one served. Raises
        CertificateError naming the files when they cannot serve."""
        self._reads.inc()
        try:
            pair = ServingPair(self._read(self.cert_path), self._read(self.key_path))
            if pair == self._pair:
                return False
            context = server_context(pair, f"{self.cert_path} and {self.key_path}")
        except CertificateError:
            self._errors.inc()
            raise
        self._pair, self._context = pair, context
        self.changed.set()
        self.changed = trio.Event()
        return True

    @staticmethod
    def _read(path: Path) -> bytes:
        try:
            return path.read_bytes()
        except OSError as exc:
            raise CertificateError(f"cannot read {path}: {exc.strerror or exc}") from None

    def reload(self, why: str) -> None:
        """Re-read; a failure is logged and the served pair stays."""
        try:
            if self.read():
                log.info("updated the metrics TLS certificate", cert=str(self.cert_path), on=why)
        except CertificateError as exc:
            log.error("cannot reload the metrics TLS certificate", error=str(exc), on=why)

    async def run(self) -> None:
        """Watch and poll until cancelled (``read`` first: this only keeps it current)."""
        async with trio.open_nursery() as nursery:
            if self.watch:
                nursery.start_soon(self._watch)
            while True:
                await trio.sleep(self.interval)
                self.reload("poll")

    async def _watch(self) -> None:
        try:
            import inotify_simple
        except ImportError:  # pragma: no cover - the dependency is declared
            return
        flags = inotify_simple.flags
        mask = (
            flags.CLOSE_WRITE
            | flags.CREATE
            | flags.DELETE
            | flags.MOVED_TO
            | flags.MOVED_FROM
            | flags.ATTRIB
            | flags.MODIFY
        )
        try:
            notify = inotify_simple.INotify(nonblocking=True)
        except (OSError, AttributeError) as exc:  # no inotify here: the poll does it all
            log.info("no file watch for the metrics certificate, polling", error=str(exc))
            return
        with notify:
            for folder in {self.cert_path.parent, self.key_path.parent}:
                try:
                    notify.add_watch(str(folder), mask)
                except OSError as exc:
                    log.warning("cannot watch", folder=str(folder), error=str(exc))
            while True:
                await trio.lowlevel.wait_readable(notify.fileno())
                if notify.read(timeout=0):
                    self.reload("file event")
