"""Bootstrap tokens: how a new VM's kubelet is allowed to join the cluster.

A token is ``<id>.<secret>`` (6 and 16 characters of ``[a-z0-9]``). The id is derived from the
machine's name, so every retry of a creation reuses the same Secret; the secret part comes from
the OS's CSPRNG and is never logged. The token expires with the machine's creation timeout.
"""

from __future__ import annotations

import secrets
import string
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from kubetrio.api.meta import format_time

PLACEHOLDER = "<<BOOTSTRAP_TOKEN>>"
TOKEN_NAMESPACE = "kube-system"
TOKEN_SECRET_TYPE = "bootstrap.kubernetes.io/token"
_ALPHABET = string.ascii_lowercase + string.digits


def token_id(machine_name: str) -> str:
    """MCM's id: hex of the name's last five bytes, first six characters."""
    return machine_name.encode()[-5:].hex()[:6].ljust(6, "0")


def token_secret_name(machine_name: str) -> str:
    return f"bootstrap-token-{token_id(machine_name)}"


def new_token_secret() -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(16))


def token_secret(machine_name: str, secret: str, expires: datetime) -> dict[str, Any]:
    """The ``bootstrap.kubernetes.io/token`` Secret a joining kubelet authenticates with."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": TOKEN_SECRET_TYPE,
        "metadata": {"name": token_secret_name(machine_name), "namespace": TOKEN_NAMESPACE},
        "stringData": {
            "token-id": token_id(machine_name),
            "token-secret": secret,
            "expiration": format_time(expires),
            "usage-bootstrap-authentication": "true",
            "usage-bootstrap-signing": "true",
            "auth-extra-groups": "system:bootstrappers:machine-controller-manager",
        },
    }


def expiry(now: datetime, creation_timeout: float) -> datetime:
    return now + timedelta(seconds=creation_timeout)


def render_user_data(user_data: str, token: str) -> str:
    """Put ``token`` where the class's user data asks for it (plain or URL-encoded marker)."""
    return user_data.replace(PLACEHOLDER, token).replace(quote(PLACEHOLDER, safe=""), token)
