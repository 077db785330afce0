"""EC2 clients for the ``aws`` driver: one per region and credential, made once and reused, and
every request sent from a worker thread.

boto3 is blocking; the machine controller is a trio program, so each request runs in a worker
thread (``trio.to_thread``) under the driver's own limiter — a slow EC2 never stalls the
controller's other work, and a burst of creations never takes every thread trio has. A request
abandoned by its caller (a reconcile cancelled at shutdown) returns at once; its thread finishes
on its own, bounded by the client's timeouts.

Credentials come from the class secret, as provider-aws reads them: an access key pair (either
spelling), or a workload-identity token file with a role to assume through STS. A client is cached
under a digest of the credential, never the credential itself, so a rotated key gets a new client
and the old one ages out.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import trio
from botocore.config import Config
from botocore.credentials import (
    AssumeRoleWithWebIdentityCredentialFetcher,
    CredentialProvider,
    Credentials,
    DeferredRefreshableCredentials,
)
from botocore.utils import FileWebIdentityTokenLoader

from kubetrio.controllers.machine.driver.aws.validation import (
    ACCESS_KEY_ID,
    ALT_ACCESS_KEY_ID,
    ALT_SECRET_ACCESS_KEY,
    ROLE_ARN,
    SECRET_ACCESS_KEY,
    TOKEN_FILE,
)
from kubetrio.controllers.machine.driver.driver import SecretData
from kubetrio.controllers.machine.provider_metrics import ProviderMetrics
from kubetrio.runtime.util.inflight import request_in_flight

PROVIDER = "aws"  # the provider label of the mcm_cloud_api_* metrics
SESSION_NAME = "kubetrio-machine-controller"
# aws-sdk-go-v2's retryer, which provider-aws runs with: standard mode, three attempts.
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 3},
    connect_timeout=10,
    read_timeout=60,
    user_agent_extra="kubetrio",
)
CACHED_CLIENTS = 64
# The service models, read once per process: EC2's takes seconds to load, and every session
# would otherwise load its own.
_MODELS = botocore.loaders.create_loader()
WORKER_THREADS = 16


def _first(secret: SecretData, *keys: str) -> str:
    """The first of ``keys`` the secret has, trimmed (provider-aws's extractCredentialsFromData)."""
    for key in keys:
        if key in secret:
            return secret[key].decode().strip()
    return ""


class _WebIdentity(CredentialProvider):
    """Credentials assumed through STS with the token in a file, refreshed before they expire."""

    METHOD = "assume-role-with-web-identity"
    CANONICAL_NAME = "kubetrio-web-identity"

    def __init__(
        self,
        session: botocore.session.Session,
        token_file: str,
        role_arn: str,
        region: str,
        endpoint_url: str | None,
    ) -> None:
        super().__init__()
        self._fetcher = AssumeRoleWithWebIdentityCredentialFetcher(
            client_creator=partial(
                session.create_client, region_name=region, endpoint_url=endpoint_url
            ),
            web_identity_token_loader=FileWebIdentityTokenLoader(token_file),
            role_arn=role_arn,
            extra_args={"RoleSessionName": SESSION_NAME},
        )

    def load(self) -> Credentials:
        return DeferredRefreshableCredentials(
            refresh_using=self._fetcher.fetch_credentials, method=self.METHOD
        )


def credential_digest(secret: SecretData) -> str:
    """What identifies a credential in the cache, without holding it."""
    digest = hashlib.sha256()
    for key in (
        TOKEN_FILE,
        ROLE_ARN,
        ACCESS_KEY_ID,
        ALT_ACCESS_KEY_ID,
        SECRET_ACCESS_KEY,
        ALT_SECRET_ACCESS_KEY,
    ):
        digest.update(key.encode() + b"\0" + secret.get(key, b"") + b"\0")
    return digest.hexdigest()


def make_client(region: str, secret: SecretData, endpoint_url: str | None) -> Any:
    """A blocking EC2 client (run in a worker thread: loading the service model takes a while).
    Each gets its own session, as boto3 sessions are not thread-safe."""
    core = botocore.session.Session()
    core.register_component("data_loader", _MODELS)
    if TOKEN_FILE in secret:
        resolver = core.get_component("credential_provider")
        provider = _WebIdentity(
            core, secret[TOKEN_FILE].decode(), secret[ROLE_ARN].decode(), region, endpoint_url
        )
        resolver.insert_before("env", provider)
        session = boto3.Session(botocore_session=core, region_name=region)
    else:
        session = boto3.Session(
            botocore_session=core,
            region_name=region,
            aws_access_key_id=_first(secret, ACCESS_KEY_ID, ALT_ACCESS_KEY_ID),
            aws_secret_access_key=_first(secret, SECRET_ACCESS_KEY, ALT_SECRET_ACCESS_KEY),
        )
    return session.client("ec2", endpoint_url=endpoint_url, config=CLIENT_CONFIG)


class Ec2:
    """One region's EC2 for one credential. ``call`` sends one API request from a worker thread
    and counts it in the ``mcm_cloud_api_*`` metrics under its EC2 operation name."""

    def __init__(
        self, client: Any, limiter: trio.CapacityLimiter, metrics: ProviderMetrics | None
    ) -> None:
        self.client = client
        self.limiter = limiter
        self.metrics = metrics

    async def call(self, operation: str, **params: Any) -> dict[str, Any]:
        method = getattr(self.client, botocore.xform_name(operation))
        recorded: AbstractContextManager[None] = (
            nullcontext() if self.metrics is None else self.metrics.request(PROVIDER, operation)
        )
        with recorded, request_in_flight():
            answer: dict[str, Any] = await trio.to_thread.run_sync(
                partial(method, **params), abandon_on_cancel=True, limiter=self.limiter
            )
        return answer


class Clients:
    """The driver's EC2 clients by region and credential, the least recently used dropped past
    ``size``."""

    def __init__(
        self,
        endpoint_url: str | None = None,
        metrics: ProviderMetrics | None = None,
        size: int = CACHED_CLIENTS,
        threads: int = WORKER_THREADS,
    ) -> None:
        self.endpoint_url = endpoint_url
        self.metrics = metrics
        self.size = size
        self.limiter = trio.CapacityLimiter(threads)
        self._clients: OrderedDict[tuple[str, str], Ec2] = OrderedDict()

    async def ec2(self, region: str, secret: SecretData) -> Ec2:
        key = (region, credential_digest(secret))
        ec2 = self._clients.get(key)
        if ec2 is None:
            client = await trio.to_thread.run_sync(
                partial(make_client, region, secret, self.endpoint_url), limiter=self.limiter
            )
            ec2 = self._clients.setdefault(key, Ec2(client, self.limiter, self.metrics))
            while len(self._clients) > self.size:
                self._clients.popitem(last=False)
        self._clients.move_to_end(key)
        return ec2
