"""client-go credential plugins (a kubeconfig user's ``exec``), run once and cached.

pykube-ng runs the plugin before every request: a manager making hundreds of requests a second
would start hundreds of processes a second (cloud CLIs take ~0.3 s each). As client-go does, the
plugin's ``ExecCredential`` is kept until its ``status.expirationTimestamp`` has passed (no early
refresh: client-go has none), or until the API server answers 401 with it. One lock covers the
cache and the run, so requests that need fresh credentials together start the plugin once.

The plugin reads ``KUBERNETES_EXEC_INFO`` (an ExecCredential with ``spec.interactive`` and, when
asked, ``spec.cluster``), writes its status to stdout and speaks to the user on stderr, which is
passed through. Every way its output can be wrong is one line naming the field.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubetrio.runtime.client.threadclock import ThreadClock
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.credentials")

GROUP = "client.authentication.k8s.io"
API_VERSIONS = (f"{GROUP}/v1", f"{GROUP}/v1beta1")
EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO"
# The key of a cluster's extension handed to the plugin as spec.cluster.config.
CLUSTER_CONFIG_EXTENSION = f"{GROUP}/exec"
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
# client-go's rest_client_exec_plugin_call_total call_status values.
NO_ERROR = "no_error"
PLUGIN_EXECUTION_ERROR = "plugin_execution_error"
PLUGIN_NOT_FOUND_ERROR = "plugin_not_found_error"
CLIENT_INTERNAL_ERROR = "client_internal_error"


class CredentialError(ValueError):
    """Credentials could not be had: a bad configuration or a plugin that failed."""


@dataclass(frozen=True, slots=True)
class IssuedCredential:
    """What a plugin (or a file) gave: a token and/or a client certificate, until ``expires``
    (Unix seconds; None: until the server refuses it)."""

    token: str = ""
    cert_pem: bytes = b""
    key_pem: bytes = b""
    expires: float | None = None


@dataclass(frozen=True, slots=True)
class ExecConfig:
    """A kubeconfig user's ``exec`` section (client-go's credential plugin), validated once at
    load so a mistake names its field before the first request."""

    api_version: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    install_hint: str = ""
    interactive_mode: str = "IfAvailable"
    provide_cluster_info: bool = False

    @classmethod
    def parse(cls, raw: Any, where: str) -> ExecConfig:
        """A kubeconfig ``exec`` stanza; ``where`` prefixes errors (e.g. ``users[dev].exec``)."""
        if not isinstance(raw, Mapping):
            raise CredentialError(f"{where}: must be a mapping")
        api_version = raw.get("apiVersion")
        if not api_version:
            raise CredentialError(f"{where}.apiVersion: required")
        if api_version not in API_VERSIONS:
            raise CredentialError(
                f"{where}.apiVersion: {api_version!r} is not supported (use {API_VERSIONS[0]})"
            )
        command = raw.get("command")
        if not isinstance(command, str) or not command:
            raise CredentialError(f"{where}.command: required")
        args = raw.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise CredentialError(f"{where}.args: must be a list of strings")
        env: list[tuple[str, str]] = []
        for i, entry in enumerate(raw.get("env") or []):
            if not isinstance(entry, Mapping) or not entry.get("name"):
                raise CredentialError(f"{where}.env[{i}].name: required")
            env.append((str(entry["name"]), str(entry.get("value", ""))))
        mode = raw.get("interactiveMode")
        if mode is None:
            if api_version == API_VERSIONS[0]:  # v1 makes it required, v1beta1 defaults it
                raise CredentialError(f"{where}.interactiveMode: required for {api_version}")
            mode = "IfAvailable"
        if mode not in INTERACTIVE_MODES:
            raise CredentialError(
                f"{where}.interactiveMode: {mode!r} is not one of {', '.join(INTERACTIVE_MODES)}"
            )
        return cls(
            api_version=api_version,
            command=command,
            args=tuple(args),
            env=tuple(env),
            install_hint=str(raw.get("installHint") or ""),
            interactive_mode=mode,
            provide_cluster_info=bool(raw.get("provideClusterInfo")),
        )


def _timestamp(value: Any, field: str) -> float:
    if not isinstance(value, str):
        raise CredentialError(f"exec plugin output: {field}: not an RFC 3339 time: {value!r}")
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise CredentialError(
            f"exec plugin output: {field}: not an RFC 3339 time: {value!r}"
        ) from None
    if moment.tzinfo is None:
        raise CredentialError(f"exec plugin output: {field}: has no time zone: {value!r}")
    return moment.timestamp()


def parse_exec_credential(stdout: bytes, api_version: str) -> IssuedCredential:
    """The plugin's stdout, checked as client-go checks it (with the field named)."""
    try:
        doc = json.loads(stdout)
    except ValueError as error:
        raise CredentialError(f"exec plugin output: not JSON ({error})") from None
    if not isinstance(doc, dict):
        raise CredentialError("exec plugin output: not a JSON object")
    if doc.get("apiVersion") != api_version:
        raise CredentialError(
            f"exec plugin output: apiVersion: the plugin is configured to use {api_version}, "
            f"it returned {doc.get('apiVersion')!r}"
        )
    if doc.get("kind") != "ExecCredential":
        raise CredentialError(
            f"exec plugin output: kind: want 'ExecCredential', got {doc.get('kind')!r}"
        )
    status = doc.get("status")
    if status is None:
        raise CredentialError("exec plugin output: status: missing")
    if not isinstance(status, dict):
        raise CredentialError("exec plugin output: status: not an object")
    strings = {}
    for key in ("token", "clientCertificateData", "clientKeyData"):
        value = status.get(key) or ""
        if not isinstance(value, str):
            raise CredentialError(f"exec plugin output: status.{key}: not a string")
        strings[key] = value
    token, cert, key = strings["token"], strings["clientCertificateData"], strings["clientKeyData"]
    if not (token or cert or key):
        raise CredentialError(
            "exec plugin output: status: has neither token nor clientCertificateData and "
            "clientKeyData"
        )
    if bool(cert) != bool(key):
        missing = "clientKeyData" if cert else "clientCertificateData"
        raise CredentialError(
            f"exec plugin output: status.{missing}: missing (a certificate needs both)"
        )
    raw_expiry = status.get("expirationTimestamp")
    expires = None if raw_expiry is None else _timestamp(raw_expiry, "status.expirationTimestamp")
    return IssuedCredential(token, cert.encode(), key.encode(), expires)


def _one_line(text: str) -> str:
    return " ".join(text.split())


class ExecPlugin:
    """One kubeconfig user's plugin and its cached credential (thread-safe)."""

    def __init__(
        self,
        config: ExecConfig,
        *,
        cluster: Mapping[str, Any] | None = None,
        clock: ThreadClock | None = None,
        environ: Callable[[], Mapping[str, str]] = lambda: os.environ,
        stdin_is_terminal: Callable[[], bool] = lambda: (
            sys.stdin is not None and sys.stdin.isatty()
        ),
    ) -> None:
        """``cluster``: what ``provideClusterInfo`` hands the plugin as ``spec.cluster``."""
        self.config = config
        self.cluster = cluster
        self.clock = clock or ThreadClock()
        self._environ = environ
        self._stdin_is_terminal = stdin_is_terminal
        self._lock = threading.Lock()
        self._cached: IssuedCredential | None = None
        self.runs = 0  # how many times the plugin was started
        # Told (exit code, call status) of every run, as client-go's call metric counts them.
        self.on_call: Callable[[int, str], None] = lambda code, status: None

    def credential(self) -> IssuedCredential:
        """The cached credential while it has not expired; else the plugin's fresh one."""
        with self._lock:
            cached = self._cached
            if cached is not None and (
                cached.expires is None or self.clock.wall() <= cached.expires
            ):
                return cached
            self._cached = self._run()
            return self._cached

    def refresh_after_unauthorized(self, used: IssuedCredential) -> bool:
        """The server refused ``used``: run the plugin again unless another request already
        did. True when there is now a different credential worth retrying with."""
        with self._lock:
            if self._cached is not used:  # another request already ran it
                return self._cached is not None and self._cached != used
            try:
                self._cached = self._run()
            except CredentialError as error:
                log.warning("refreshing exec credentials failed", error=str(error))
                return False
            return self._cached != used

    def _interactive(self) -> bool:
        mode = self.config.interactive_mode
        if mode == "Never":
            return False
        if mode == "IfAvailable":
            return self._stdin_is_terminal()
        if not self._stdin_is_terminal():
            raise CredentialError(
                f"exec plugin {self.config.command}: interactiveMode Always, but standard "
                "input is not a terminal"
            )
        return True

    def exec_info(self, interactive: bool) -> str:
        spec: dict[str, Any] = {"interactive": interactive}
        if self.config.provide_cluster_info and self.cluster is not None:
            spec["cluster"] = dict(self.cluster)
        doc = {"kind": "ExecCredential", "apiVersion": self.config.api_version, "spec": spec}
        return json.dumps(doc, separators=(",", ":"))

    def _run(self) -> IssuedCredential:
        interactive = self._interactive()
        env = {**self._environ(), **dict(self.config.env)}
        env[EXEC_INFO_ENV] = self.exec_info(interactive)
        command = self.config.command
        self.runs += 1
        try:
            done = subprocess.run(
                [command, *self.config.args],
                env=env,
                stdin=None if interactive else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=None,  # the plugin's messages are for the user: passed through
                check=False,
            )
        except (FileNotFoundError, PermissionError) as error:
            self.on_call(1, PLUGIN_NOT_FOUND_ERROR)
            if isinstance(error, PermissionError):
                raise CredentialError(f"exec plugin {command}: {error.strerror}") from None
            hint = _one_line(self.config.install_hint)
            raise CredentialError(
                f"exec plugin: executable {command} not found"
                + (f"; {hint}" if hint else " (is the client-go credential plugin installed?)")
            ) from None
        except OSError as error:
            self.on_call(1, CLIENT_INTERNAL_ERROR)
            raise CredentialError(f"exec plugin {command}: {error.strerror or error}") from None
        if done.returncode != 0:
            self.on_call(done.returncode, PLUGIN_EXECUTION_ERROR)
            raise CredentialError(
                f"exec plugin: executable {command} failed with exit code {done.returncode}"
            )
        self.on_call(0, NO_ERROR)
        return parse_exec_credential(done.stdout, self.config.api_version)


def cluster_info(cluster: Mapping[str, Any], ca_pem: bytes | None) -> dict[str, Any]:
    """A kubeconfig cluster as ExecCredential's ``spec.cluster`` (client-go's field names)."""
    info: dict[str, Any] = {"server": cluster.get("server", "")}
    if cluster.get("tls-server-name"):
        info["tls-server-name"] = cluster["tls-server-name"]
    if cluster.get("insecure-skip-tls-verify"):
        info["insecure-skip-tls-verify"] = True
    if ca_pem:
        info["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    if cluster.get("proxy-url"):
        info["proxy-url"] = cluster["proxy-url"]
    for entry in cluster.get("extensions") or []:
        if isinstance(entry, Mapping) and entry.get("name") == CLUSTER_CONFIG_EXTENSION:
            info["config"] = entry.get("extension")
    return info
