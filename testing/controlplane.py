"""A real Kubernetes control plane for tests, as controller-runtime's envtest starts one.

etcd and kube-apiserver (and, when asked, kube-controller-manager with chosen controllers) run
as child processes on free loopback ports, from the binaries in ``KUBEBUILDER_ASSETS`` — the
folder ``setup-envtest`` fills for controller-runtime users, so they have it already — with a
per-binary override in ``TEST_ASSET_ETCD``, ``TEST_ASSET_KUBE_APISERVER`` and
``TEST_ASSET_KUBE_CONTROLLER_MANAGER``. Each control plane has a fresh data folder, an admin
(``system:masters``) bearer token, a kubeconfig with the server's CA, and stops cleanly:
controller manager, then API server, then etcd, each waited for (an API server whose etcd is
already gone keeps retrying, so it is killed after a grace period).

This is the server the emulator is a double of: a behaviour of kubetrio counts as proven once
it also holds here.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

__all__ = [
    "ASSETS_HINT",
    "ControlPlane",
    "ControlPlaneError",
    "ControlPlaneUnavailable",
    "find_assets",
]

ASSETS_HINT: Final = (
    "set KUBEBUILDER_ASSETS to a folder holding etcd, kube-apiserver and kube-controller-manager "
    "(controller-runtime's setup-envtest fills one; in this project `../shared/kube/install` "
    "unpacks them and prints the folder)"
)
_BINARIES: Final = ("etcd", "kube-apiserver", "kube-controller-manager")
START_TIMEOUT: Final = 90.0  # etcd + kube-apiserver take ~5 s here; a loaded machine, more
STOP_GRACE: Final = 20.0
_CONTEXT: Final = "kubetrio-control-plane"
ADMIN_TOKEN_USER: Final = "kubetrio-admin"
# Every request at Metadata level (no bodies), logged once answered.
AUDIT_POLICY: Final = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata"}],
}


class ControlPlaneUnavailable(Exception):
    """The binaries are not where the environment says; ``str`` says how to get them."""


class ControlPlaneError(Exception):
    """A control plane process did not start or died; ``str`` names it with its log's tail."""


def find_assets(environ: os._Environ[str] | dict[str, str] | None = None) -> dict[str, Path]:
    """The three binaries by name, from ``TEST_ASSET_*`` or ``KUBEBUILDER_ASSETS``;
    ``ControlPlaneUnavailable`` naming what is missing."""
    env = os.environ if environ is None else environ
    folder = env.get("KUBEBUILDER_ASSETS")
    found: dict[str, Path] = {}
    missing: list[str] = []
    for name in _BINARIES:
        override = env.get("TEST_ASSET_" + name.upper().replace("-", "_"))
        path = Path(override) if override else (Path(folder) / name if folder else None)
        if path is None or not (path.is_file() and os.access(path, os.X_OK)):
            missing.append(str(path) if path is not None else name)
        else:
            found[name] = path
    if missing:
        where = f"KUBEBUILDER_ASSETS={folder}" if folder else "KUBEBUILDER_ASSETS is unset"
        raise ControlPlaneUnavailable(
            f"no real control plane ({where}; missing {', '.join(missing)}): {ASSETS_HINT}"
        )
    return found


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


@dataclass
class ControlPlane:
    """etcd + kube-apiserver (+ kube-controller-manager running ``controllers``) on loopback.

    ``with ControlPlane() as cp:`` starts it and stops it; ``cp.url`` (https), ``cp.token``
    (the admin's, ``system:masters``), ``cp.ca_pem``, ``cp.kubeconfig_path`` are set once it
    serves. ``apiserver_flags`` are added to kube-apiserver's command line (for example
    ``--audit-policy-file=...``); ``controllers`` are kube-controller-manager's ``--controllers``
    (none: it does not run). ``audit`` has the server log every request's metadata (who, verb,
    resource, answer; one JSON event per line, once answered) to ``audit_log_path``: what a
    test asserts on to know what a controller did to the server. ``etcd_url`` is etcd's client
    URL: ``compact_etcd`` drops its history as etcd's periodic compaction would, so a watch
    from before answers 410 Gone."""

    controllers: Sequence[str] = ()
    apiserver_flags: Sequence[str] = ()
    audit: bool = False
    assets: dict[str, Path] | None = None
    workdir: Path | None = None
    url: str = ""
    etcd_url: str = ""
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    ca_pem: bytes = b""
    kubeconfig_path: Path = field(default_factory=Path)
    _processes: list[_Process] = field(default_factory=list)
    _own_workdir: bool = False

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start every process and return once the API server is ready (``/readyz``)."""
        assets = self.assets if self.assets is not None else find_assets()
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="kubetrio-control-plane-"))
            self._own_workdir = True
        work = self.workdir
        try:
            self.etcd_url = self._start_etcd(assets["etcd"], work)
            self._start_apiserver(assets["kube-apiserver"], work, self.etcd_url)
            if self.controllers:
                self._start_controller_manager(assets["kube-controller-manager"], work)
        except BaseException:
            self.stop()
            raise

    def _spawn(self, name: str, argv: list[str]) -> _Process:
        assert self.workdir is not None
        log = self.workdir / f"{name}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        process = _Process(name, popen, log)
        self._processes.append(process)
        return process

    def _start_etcd(self, binary: Path, work: Path) -> str:
        client, peer = f"http://127.0.0.1:{_free_port()}", f"http://127.0.0.1:{_free_port()}"
        process = self._spawn(
            "etcd",
            [
                str(binary),
                f"--data-dir={work / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=default={peer}",
            ],
        )
        self._await_ready(process, f"{client}/health", None)
        return client

    def _start_apiserver(self, binary: Path, work: Path, etcd_url: str) -> None:
        port = _free_port()
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        (work / "sa.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        (work / "sa.pub").write_bytes(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        (work / "tokens.csv").write_text(
            f"{self.token},{ADMIN_TOKEN_USER},{ADMIN_TOKEN_USER},system:masters\n"
        )
        self.url = f"https://127.0.0.1:{port}"
        process = self._spawn(
            "kube-apiserver",
            [
                str(binary),
                f"--etcd-servers={etcd_url}",
                f"--cert-dir={work / 'certs'}",
                f"--secure-port={port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--authorization-mode=RBAC",
                f"--token-auth-file={work / 'tokens.csv'}",
                f"--service-account-issuer={self.url}",
                f"--service-account-key-file={work / 'sa.pub'}",
                f"--service-account-signing-key-file={work / 'sa.key'}",
                "--allow-privileged=true",
                *self._audit_flags(work),
                *self.apiserver_flags,
            ],
        )
        # kube-apiserver writes its self-signed serving certificate before it serves.
        self._await_ready(process, f"{self.url}/readyz", work / "certs" / "apiserver.crt")
        self.ca_pem = (work / "certs" / "apiserver.crt").read_bytes()
        self.kubeconfig_path = work / "kubeconfig"
        self.kubeconfig_path.write_text(yaml.safe_dump(self.kubeconfig()))

    @property
    def audit_log_path(self) -> Path:
        """The audit log (``audit=True``): one JSON ``audit.k8s.io/v1`` Event a line."""
        assert self.workdir is not None, "the control plane is not started"
        return self.workdir / "audit.log"

    def _audit_flags(self, work: Path) -> list[str]:
        if not self.audit:
            return []
        (work / "audit-policy.yaml").write_text(yaml.safe_dump(AUDIT_POLICY))
        return [
            f"--audit-policy-file={work / 'audit-policy.yaml'}",
            f"--audit-log-path={self.audit_log_path}",
            "--audit-log-format=json",
        ]

    def _start_controller_manager(self, binary: Path, work: Path) -> None:
        port = _free_port()
        process = self._spawn(
            "kube-controller-manager",
            [
                str(binary),
                f"--kubeconfig={self.kubeconfig_path}",
                f"--authentication-kubeconfig={self.kubeconfig_path}",
                f"--authorization-kubeconfig={self.kubeconfig_path}",
                f"--service-account-private-key-file={work / 'sa.key'}",
                "--use-service-account-credentials=false",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={work / 'kcm-certs'}",
                f"--controllers={','.join(self.controllers)}",
            ],
        )
        self._await_ready(process, f"https://127.0.0.1:{port}/healthz", None, verify=False)

    def kubeconfig(self) -> dict[str, object]:
        """The admin's kubeconfig (the server's CA, the admin token, namespace default)."""
        ca = base64.b64encode(self.ca_pem).decode()
        cluster = {"server": self.url, "certificate-authority-data": ca}
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": _CONTEXT, "cluster": cluster}],
            "users": [{"name": _CONTEXT, "user": {"token": self.token}}],
            "contexts": [
                {
                    "name": _CONTEXT,
                    "context": {"cluster": _CONTEXT, "user": _CONTEXT, "namespace": "default"},
                }
            ],
            "current-context": _CONTEXT,
        }

    def _etcd(self, call: str, body: dict[str, object]) -> dict[str, Any]:
        """One call to etcd's v3 JSON gateway (``/v3/kv/...`` on the client URL)."""
        request = urllib.request.Request(
            f"{self.etcd_url}/v3/kv/{call}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            answer: dict[str, Any] = json.load(response)
        return answer

    def etcd_revision(self) -> int:
        """etcd's current revision (what the API server calls the latest resourceVersion)."""
        # A range over one key no object has: the answer's header carries the revision.
        answer = self._etcd("range", {"key": base64.b64encode(b"\0").decode()})
        return int(answer["header"]["revision"])

    def compact_etcd(self, revision: int | None = None) -> int:
        """Compact etcd's history up to ``revision`` (default: the current one) and return it:
        watches and exact reads from before it then answer 410 Gone, as in a cluster whose
        API server or etcd compacts every few minutes."""
        if revision is None:
            revision = self.etcd_revision()
        self._etcd("compaction", {"revision": revision, "physical": True})
        return revision

    def _await_ready(
        self, process: _Process, url: str, ca_file: Path | None, *, verify: bool = True
    ) -> None:
        """Until ``url`` answers 200 (checked whenever the process has not exited within a
        tenth of a second); ControlPlaneError with the log's tail if it exits or the time
        runs out."""
        deadline = time.monotonic() + START_TIMEOUT
        last = "no answer yet"
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = process.popen.wait(timeout=0.1)
                raise ControlPlaneError(
                    f"{process.name} exited with {code} before it was ready:\n{process.tail()}"
                )
            if ca_file is not None and not ca_file.exists():
                continue
            try:
                self._get(url, ca_file, verify=verify)
                return
            except (OSError, urllib.error.URLError) as error:
                last = str(error)
        raise ControlPlaneError(
            f"{process.name} was not ready within {START_TIMEOUT:g}s ({last}):\n{process.tail()}"
        )

    def _get(self, url: str, ca_file: Path | None, *, verify: bool = True) -> None:
        context: ssl.SSLContext | None = None
        if url.startswith("https:"):
            context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
            if not verify:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            if response.status != 200:
                raise OSError(f"{url} answered {response.status}")

    def stop(self) -> None:
        """Stop the processes, newest first, each waited for; remove the data folder made."""
        for process in reversed(self._processes):
            if process.popen.poll() is None:
                process.popen.send_signal(signal.SIGTERM)
                try:
                    process.popen.wait(timeout=STOP_GRACE)
                except subprocess.TimeoutExpired:
                    process.popen.kill()
                    process.popen.wait()
        self._processes.clear()
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
