"""Bootstrap tokens: how a new VM's kubelet is allowed to join the cluster.

A token is ``<id>.<secret>`` (6 and 16 characters of ``[a-z0-9]``). The id is derived from the
machine's namespace and name, so every retry of a creation reuses the same Secret; the secret
part comes from the OS's CSPRNG and is never logged. The token expires with the machine's
creation timeout.

MCM takes the id from the hex of the name's last five bytes, cut to six characters — i.e. only
three bytes of the name — so "pool-0001" and "pool-0002" share one token, and the first machine
to join deletes the token the other still needs. A hash of the whole name keeps the id stable
per machine without that collision.
"""

from __future__ import annotations

import hashlib
import secrets
import string
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from kubetrio.api.meta import format_time

PLACEHOLDER = "<<BOOTSTRAP_TOKEN>>"
TOKEN_NAMESPACE = "kube-system"
TOKEN_SECRET_TYPE = "bootstrap.kubernetes.io/token"
# Marks the token Secrets this controller made, so it caches only those, not every Secret.
TOKEN_LABEL = "machine.sapcloud.io/bootstrap-token"
TOKEN_MACHINE_ANNOTATION = "machine.sapcloud.io/machine"
_ALPHABET = string.ascii_lowercase + string.digits


def token_id(machine_name: str, namespace: str = "") -> str:
    """Six hex characters of a hash of the machine's namespace and name."""
    return hashlib.sha256(f"{namespace}/{machine_name}".encode()).hexdigest()[:6]


def token_secret_name(machine_name: str, namespace: str = "") -> str:
    return f"bootstrap-token-{token_id(machine_name, namespace)}"


def new_token_secret() -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(16))


def token_secret(
    machine_name: str, secret: str, expires: datetime, namespace: str = ""
) -> dict[str, Any]:
    """The ``bootstrap.kubernetes.io/token`` Secret a joining kubelet authenticates with."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": TOKEN_SECRET_TYPE,
        "metadata": {
            "name": token_secret_name(machine_name, namespace),
            "namespace": TOKEN_NAMESPACE,
            "labels": {TOKEN_LABEL: "true"},
            "annotations": {TOKEN_MACHINE_ANNOTATION: f"{namespace}/{machine_name}"},
        },
        "stringData": {
            "token-id": token_id(machine_name, namespace),
            "token-secret": secret,
            "expiration": format_time(expires),
            "usage-bootstrap-authentication": "true",
            "usage-bootstrap-signing": "true",
            "auth-extra-groups": "system:bootstrappers:machine-controller-manager",
        },
    }


def expiry(now: datetime, creation_timeout: float) -> datetime:
    return now + timedelta(seconds=creation_timeout)


def render_user_data(user_data: bytes, token: str) -> bytes:
    """Put ``token`` where the class's user data asks for it (plain or URL-encoded marker).
    Bytes in, bytes out: user data may be binary (gzip-compressed cloud-init) and must pass
    through untouched where it has no marker."""
    value = token.encode()
    return user_data.replace(PLACEHOLDER.encode(), value).replace(
        quote(PLACEHOLDER, safe="").encode(), value
    )
