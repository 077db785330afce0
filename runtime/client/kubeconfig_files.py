"""The files a kubeconfig points at (client certificate and key, CA bundle), checked at load.

They are otherwise opened lazily, by the first connection, where a missing or broken file
becomes a traceback in the middle of a request (or, for a bad PEM, an SSL error that looks like
an unreachable server). Loading them once up front names the kubeconfig, the field and the
file.
"""

from __future__ import annotations

import ssl
from typing import Any

import pykube

__all__ = ["credential_file_problem"]


def credential_file_problem(config: pykube.KubeConfig) -> str | None:
    """What makes a file the current context refers to unusable, naming the field; None when
    every one of them loads."""
    try:
        user: dict[str, Any] = config.user
        cluster: dict[str, Any] = config.cluster
    except pykube.exceptions.PyKubeError as error:  # a referenced file does not exist
        return str(error)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if (authority := cluster.get("certificate-authority")) is not None:
        try:
            context.load_verify_locations(cafile=authority.filename())
        except (OSError, ssl.SSLError) as error:
            return (
                f"{_field('certificate-authority', authority)} is not a readable PEM CA bundle "
                f"({_reason(error)})"
            )
    certificate, key = user.get("client-certificate"), user.get("client-key")
    if certificate is None and key is None:
        return None
    if certificate is None or key is None:
        # Worded as kubetrio.runtime.client.credentials words it (which checks inline data too).
        where = f"users[{config.contexts[config.current_context].get('user')}]"
        if key is None:
            return f"{where}.client-key: required with a client certificate"
        return f"{where}.client-certificate: required with a client key"
    try:
        context.load_cert_chain(certificate.filename(), key.filename())
    except (OSError, ssl.SSLError) as error:
        return (
            f"{_field('client-certificate', certificate)} and {_field('client-key', key)} are "
            f"not a readable PEM certificate and its key ({_reason(error)})"
        )
    return None


def _field(name: str, value: Any) -> str:
    """``client-key /path`` for a file, ``client-key-data`` for inline data (never the data)."""
    path = getattr(value, "_path", None)
    return f"{name} {path}" if path is not None else f"{name}-data"


def _reason(error: OSError | ssl.SSLError) -> str:
    if isinstance(error, ssl.SSLError):
        return str(error.reason or error)
    return error.strerror or str(error)
