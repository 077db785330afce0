"""How one kubeconfig user authenticates, resolved per request and refreshed after a 401.

client-go's rules, which pykube-ng does not keep: a token file wins over a static token once
readable; a password (HTTP basic authentication) is sent when there is no token; an exec plugin
is used only when the user has no token, password or client certificate of its own; credentials
that can be renewed (a plugin, a token file) are renewed when the server answers 401 with them —
and then, unlike client-go, which only fixes the next request, the refused request is sent once
more (a 401 comes before the server acts on anything, so this is safe for writes too).

The legacy ``auth-provider`` plugins are refused when they would be what authenticates, with one
line naming the user and the exec plugin that replaces them: client-go removed ``gcp`` and
``azure`` in 1.26, and ``oidc`` refreshes only by rewriting the kubeconfig with a library
kubetrio does not ship — a long-running controller would start failing once its first ID token
expired. ``kubelogin`` does the same OIDC flow as an exec plugin, which is served in full here.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pykube

from kubetrio.runtime.client.execplugin import (
    CredentialError,
    ExecConfig,
    ExecPlugin,
    IssuedCredential,
    cluster_info,
)
from kubetrio.runtime.client.filecreds import CertFiles, FileToken, PemStore
from kubetrio.runtime.client.threadclock import ThreadClock


@dataclass(frozen=True, slots=True)
class Sent:
    """The credentials one request went out with (compared after a 401); ``cert`` is the
    client certificate and key files to present, if any."""

    token: str
    at: float  # monotonic
    issued: IssuedCredential | None = None
    cert: tuple[str, str] | None = None


# The exec plugins that replace the legacy auth-provider plugins (client-go's advice for gcp and
# azure; kubelogin's oidc-login for oidc).
_AUTH_PROVIDER_SUCCESSORS = {
    "gcp": "gke-gcloud-auth-plugin",
    "azure": "kubelogin (Azure)",
    "oidc": "kubelogin (kubectl oidc-login get-token)",
}


def _raw_user(config: pykube.KubeConfig) -> tuple[str, dict[str, Any]]:
    name = config.contexts[config.current_context].get("user") or ""
    for entry in config.doc.get("users") or []:
        if isinstance(entry, Mapping) and entry.get("name") == name:
            user = entry.get("user")
            return str(name), dict(user) if isinstance(user, Mapping) else {}
    return str(name), {}


def _path(value: Any, config: pykube.KubeConfig, field: str) -> Path:
    """A kubeconfig file reference: relative ones are relative to the kubeconfig's folder."""
    if not isinstance(value, str) or not value:
        raise CredentialError(f"{field}: must be a file path")
    path = Path(value).expanduser()
    if not path.is_absolute() and config.kubeconfig_path is not None:
        path = Path(config.kubeconfig_path).parent / path
    return path


def _data(value: Any, field: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise CredentialError(f"{field}: not base64") from None


def _ca_pem(config: pykube.KubeConfig) -> bytes | None:
    ca = config.cluster.get("certificate-authority")  # pykube's BytesOrFile: file or data
    return bytes(ca.bytes()) if ca is not None else None


class Credentials:
    """A user's token, password, client certificate or exec plugin. Thread-safe: an exec
    plugin's lookups run in worker threads."""

    def __init__(
        self,
        *,
        token: str = "",
        basic: str = "",
        token_file: FileToken | None = None,
        exec_plugin: ExecPlugin | None = None,
        cert: CertFiles | tuple[str, str] | None = None,
        store: PemStore | None = None,
        clock: ThreadClock | None = None,
    ) -> None:
        self.static_token = token
        self.basic = basic  # the base64 of "username:password"
        self.token_file = token_file
        self.exec_plugin = exec_plugin
        self.cert = cert
        self.store = store or PemStore()
        self.clock = clock or ThreadClock()

    @classmethod
    def for_user(cls, config: pykube.KubeConfig, clock: ThreadClock) -> Credentials:
        """The current context's user. Raises ``CredentialError`` naming the field."""
        name, user = _raw_user(config)
        where = f"users[{name}]"
        token = str(user.get("token") or "")
        has_cert = bool(user.get("client-certificate") or user.get("client-certificate-data"))
        basic = ""
        if not (token or user.get("tokenFile")):
            if user.get("username"):
                pair = f"{user['username']}:{user.get('password') or ''}"
                basic = base64.b64encode(pair.encode()).decode("ascii")
            elif "auth-provider" in user:
                raise _auth_provider_refused(user["auth-provider"], where)
        store = PemStore()
        token_file = None
        if user.get("tokenFile"):
            path = _path(user["tokenFile"], config, f"{where}.tokenFile")
            token_file = FileToken(path, clock, initial=token)
        cert: CertFiles | tuple[str, str] | None = None
        if has_cert:
            cert = cls._client_cert(user, config, store, clock, where)
        plugin = None
        # client-go: a plugin is not consulted when the user has credentials of its own.
        if "exec" in user and not (token or token_file or basic or cert):
            exec_config = ExecConfig.parse(user["exec"], f"{where}.exec")
            if "/" in exec_config.command:  # client-go: a path, not a name looked up in PATH
                resolved = _path(exec_config.command, config, f"{where}.exec.command")
                exec_config = dataclasses.replace(exec_config, command=str(resolved))
            cluster = None
            if exec_config.provide_cluster_info:
                cluster = cluster_info(config.cluster, _ca_pem(config))
            plugin = ExecPlugin(exec_config, cluster=cluster, clock=clock)
        return cls(
            token=token,
            basic=basic,
            token_file=token_file,
            exec_plugin=plugin,
            cert=cert,
            store=store,
            clock=clock,
        )

    @staticmethod
    def _client_cert(
        user: Mapping[str, Any],
        config: pykube.KubeConfig,
        store: PemStore,
        clock: ThreadClock,
        where: str,
    ) -> CertFiles | tuple[str, str]:
        cert_file, key_file = user.get("client-certificate"), user.get("client-key")
        cert_data, key_data = user.get("client-certificate-data"), user.get("client-key-data")
        if not (key_file or key_data):
            raise CredentialError(f"{where}.client-key: required with a client certificate")
        if cert_file and key_file:
            return CertFiles(
                _path(cert_file, config, f"{where}.client-certificate"),
                _path(key_file, config, f"{where}.client-key"),
                store,
                clock,
            )
        cert_pem = (
            _data(cert_data, f"{where}.client-certificate-data")
            if cert_data
            else _path(cert_file, config, f"{where}.client-certificate").read_bytes()
        )
        key_pem = (
            _data(key_data, f"{where}.client-key-data")
            if key_data
            else _path(key_file, config, f"{where}.client-key").read_bytes()
        )
        return store.put(cert_pem, key_pem, f"{where}.client-certificate")

    def apply(self, headers: MutableMapping[str, str]) -> Sent:
        """Put the current credentials on a request's headers; the certificate to present is
        the returned ``Sent``'s."""
        issued = None
        cert: tuple[str, str] | None = None
        token = self.static_token
        if self.token_file is not None:
            token = self.token_file.token()
        elif self.exec_plugin is not None:
            issued = self.exec_plugin.credential()
            token = issued.token
            if issued.cert_pem:
                cert = self.store.put(issued.cert_pem, issued.key_pem, "exec plugin output: status")
        if isinstance(self.cert, CertFiles):
            cert = self.cert.paths()
        elif self.cert is not None:
            cert = self.cert
        if token:
            headers["Authorization"] = f"Bearer {token}"
        elif self.basic:
            headers["Authorization"] = f"Basic {self.basic}"
        else:  # a retry after a token gave way to a certificate
            headers.pop("Authorization", None)
        return Sent(token, self.clock.monotonic(), issued, cert)

    def refresh_after_unauthorized(self, sent: Sent) -> bool:
        """After a 401 for ``sent``: renew what can be renewed; True if a retry is worth it."""
        if self.token_file is not None:
            return self.token_file.refresh_after_unauthorized(sent.token, sent.at)
        if self.exec_plugin is not None and sent.issued is not None:
            return self.exec_plugin.refresh_after_unauthorized(sent.issued)
        return False


def _auth_provider_refused(provider: Any, where: str) -> CredentialError:
    name = provider.get("name") if isinstance(provider, Mapping) else None
    successor = _AUTH_PROVIDER_SUCCESSORS.get(str(name), "the provider's credential plugin")
    return CredentialError(
        f"{where}.auth-provider {name!r} is not supported: authenticate with an exec "
        f"credential plugin instead, such as {successor}"
    )
