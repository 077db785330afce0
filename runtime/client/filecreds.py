"""Credentials read from files that rotate: bearer-token files and client certificates.

A projected ServiceAccount token is replaced by the kubelet well before it expires; a
``tokenFile`` or a client certificate may be renewed by a sidecar. As client-go does, a token
file is re-read once its last reading is older than a minute less ten seconds of leeway
(``NewCachedFileTokenSource``), at once after a 401, and a failed re-read keeps the last good
token; certificate files are re-read every five minutes (``CertCallbackRefreshDuration``).

Python's ``ssl`` loads a client certificate only from files, once per new connection. Each
certificate/key pair is therefore written to a private folder under a name derived from its
content: a rotated pair has new paths, so the client (whose connections are kept per pair of
paths) opens fresh connections with it, while requests already under way finish on the old ones.
"""

from __future__ import annotations

import hashlib
import shutil
import ssl
import tempfile
import threading
import weakref
from pathlib import Path

from kubetrio.runtime.client.execplugin import CredentialError
from kubetrio.runtime.client.threadclock import ThreadClock
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.credentials")

# client-go: fileTokenSource's period and cachingTokenSource's leeway.
TOKEN_FILE_PERIOD = 60.0
TOKEN_FILE_LEEWAY = 10.0
# client-go: CertCallbackRefreshDuration.
CERT_FILE_PERIOD = 300.0


def read_token_file(path: Path) -> str:
    try:
        token = path.read_text().strip()
    except OSError as error:
        raise CredentialError(f"token file {path}: {error.strerror or error}") from None
    if not token:
        raise CredentialError(f"token file {path}: empty")
    return token


class FileToken:
    """A bearer token kept in a file, re-read at most every 50 s or after a 401."""

    def __init__(self, path: Path, clock: ThreadClock, initial: str = "") -> None:
        """Reads the file now (a configuration error is better found at start), unless an
        ``initial`` token is given, as a kubeconfig's ``token`` beside its ``tokenFile``."""
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        self.reads = 0
        if initial:
            # client-go reads the file on first use even then; the token is the fallback.
            self._token, self._read_at = initial, float("-inf")
        else:
            self._token, self._read_at = read_token_file(path), clock.monotonic()
            self.reads = 1

    def _fresh(self, now: float) -> bool:
        return now < self._read_at + TOKEN_FILE_PERIOD - TOKEN_FILE_LEEWAY

    def token(self) -> str:
        if self._fresh(self.clock.monotonic()):
            return self._token
        with self._lock:
            now = self.clock.monotonic()
            if self._fresh(now):
                return self._token
            self.reads += 1
            try:
                self._token = read_token_file(self.path)
            except CredentialError as error:
                # The last good token may still be valid: use it rather than fail.
                log.error("unable to rotate token", error=str(error))
            # Either way, not again before the period is over.
            self._read_at = now
            return self._token

    def refresh_after_unauthorized(self, used: str, sent_at: float) -> bool:
        """The server refused ``used`` (sent at monotonic ``sent_at``): re-read the file
        unless it was read since. True when it now holds a different token."""
        with self._lock:
            if self._read_at <= sent_at:
                self._read_at = float("-inf")
        return self.token() != used


class PemStore:
    """Certificate/key pairs as files, named by their content, in a folder only we can read
    (removed when the store is collected or the process exits)."""

    def __init__(self) -> None:
        self._folder: Path | None = None  # made on first use: most users have no certificate
        self._lock = threading.Lock()
        self._paths: dict[str, tuple[str, str]] = {}

    def _ensure_folder(self) -> Path:
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="kubetrio-client-cert-"))
            weakref.finalize(self, shutil.rmtree, self._folder, True)
        return self._folder

    def put(self, cert_pem: bytes, key_pem: bytes, what: str) -> tuple[str, str]:
        """Paths of this pair; ``what`` names its origin in the error if they do not match."""
        digest = hashlib.sha256(cert_pem + b"\0" + key_pem).hexdigest()[:32]
        with self._lock:
            known = self._paths.get(digest)
            if known is not None:
                return known
            folder = self._ensure_folder()
            cert_file = folder / f"{digest}.crt"
            key_file = folder / f"{digest}.key"
            cert_file.write_bytes(cert_pem)
            key_file.touch(mode=0o600)
            key_file.write_bytes(key_pem)
            try:
                ssl.create_default_context().load_cert_chain(cert_file, key_file)
            except (ssl.SSLError, OSError) as error:
                cert_file.unlink()
                key_file.unlink()
                raise CredentialError(
                    f"{what}: not a usable certificate and key ({error})"
                ) from None
            self._paths[digest] = paths = (str(cert_file), str(key_file))
            return paths


class CertFiles:
    """A kubeconfig user's ``client-certificate`` and ``client-key`` files, re-read every
    five minutes; a pair that does not load keeps the last good one in use."""

    def __init__(self, cert: Path, key: Path, store: PemStore, clock: ThreadClock) -> None:
        self.cert = cert
        self.key = key
        self.store = store
        self.clock = clock
        self._lock = threading.Lock()
        self._paths = self._load()
        self._read_at = clock.monotonic()

    def _load(self) -> tuple[str, str]:
        try:
            cert_pem, key_pem = self.cert.read_bytes(), self.key.read_bytes()
        except OSError as error:
            raise CredentialError(
                f"client certificate {error.filename}: {error.strerror or error}"
            ) from None
        return self.store.put(cert_pem, key_pem, f"client-certificate {self.cert}")

    def paths(self) -> tuple[str, str]:
        """The current pair's paths (what new connections present)."""
        if self.clock.monotonic() < self._read_at + CERT_FILE_PERIOD:
            return self._paths
        with self._lock:
            now = self.clock.monotonic()
            if now >= self._read_at + CERT_FILE_PERIOD:
                try:
                    self._paths = self._load()
                except CredentialError as error:
                    log.error("unable to rotate client certificate", error=str(error))
                self._read_at = now
            return self._paths
