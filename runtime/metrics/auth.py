"""Who may read ``/metrics``: the API server decides, as controller-runtime's
``filters.WithAuthenticationAndAuthorization`` has it decide.

Each scrape's bearer token goes to a TokenReview; the user it names goes to a
SubjectAccessReview for the non-resource URL (``path``, and the HTTP method in lower case as
the verb). So Prometheus needs a ClusterRole granting ``get`` on ``nonResourceURLs: [/metrics]``
(``METRICS_READER_RULES``), and the manager one to create both reviews (``METRICS_AUTH_RULES``).

The answers are those of k8s.io/apiserver's delegating authenticator and authorizer with
controller-runtime's settings:

- token answers are cached 1 min, authenticated or not; a review that failed, or answered with
  ``status.error``, is not cached (the next scrape asks again);
- access answers are cached 5 min when allowed, 30 s when denied;
- a failed review call is retried on the apiserver webhook's schedule (0.5 s, factor 1.5, 20 %
  jitter, 5 attempts) when the failure looks transient (no answer, 500, 504, 429); a
  TokenReview has 10 s in all.

Responses: no token 401 ``Unauthorized``; denied 403 ``Authorization denied for user <name>``;
a review that could not be made 500. One deliberate difference: controller-runtime answers a
token the TokenReview rejects with 500 (the apiserver's bearer-token authenticator turns a
rejection into an error, and the filter maps every error to 500); we answer 401, as
kube-apiserver does for the same token, so a scraper with an expired token reads "re-authenticate"
and not "the server is broken".

The reviews go through the manager's unfenced client: they change nothing, so every replica,
leading or not, must be able to make them (a fenced client would refuse these POSTs on a
replica that does not hold the lease, and standby replicas would be unscrapable). They skip its
client-side rate limit, as the apiserver's webhook clients do: a scrape must not wait behind
the controllers' request budget, nor spend it.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple, TypeVar, cast

import msgspec
import trio
from cachetools import TLRUCache

from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.util.log import get_logger

__all__ = [
    "METRICS_AUTH_RULES",
    "METRICS_READER_RULES",
    "Denial",
    "MetricsAuthorizer",
    "ReviewBackoff",
]

log = get_logger("kubetrio.metricsauth")

# What the manager's ServiceAccount needs for this (ClusterRole kubetrio-metrics-auth-role).
METRICS_AUTH_RULES: Final[tuple[dict[str, list[str]], ...]] = (
    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
    {
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["subjectaccessreviews"],
        "verbs": ["create"],
    },
)
# What a scraper needs (ClusterRole kubetrio-metrics-reader).
METRICS_READER_RULES: Final[tuple[dict[str, list[str]], ...]] = (
    {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
)

TOKEN_CACHE_TTL: Final = 60.0  # controller-runtime's CacheTTL
ALLOW_CACHE_TTL: Final = 300.0  # AllowCacheTTL
DENY_CACHE_TTL: Final = 30.0  # DenyCacheTTL
TOKEN_REVIEW_TIMEOUT: Final = 10.0  # TokenAccessReviewTimeout
# The apiserver's caches: 32 stripes of 128 tokens; 8192 access answers.
TOKEN_CACHE_SIZE: Final = 4096
ACCESS_CACHE_SIZE: Final = 8192
# Larger request-controlled attributes are not cached (k8s: maxControlledAttrCacheSize).
MAX_CACHED_ATTRIBUTES: Final = 10000

AUTHENTICATED: Final = "system:authenticated"
_ANONYMOUS: Final = "system:anonymous"
_UNAUTHENTICATED: Final = "system:unauthenticated"
_RETRYABLE_STATUS: Final = frozenset({0, 429, 500, 504})


class Denial(NamedTuple):
    """A refused request: the status and the one-line body to answer with."""

    status: int
    text: str


@dataclass(frozen=True, slots=True)
class ReviewBackoff:
    """k8s.io/apiserver's webhook retry: ``steps`` attempts, waits growing by ``factor``."""

    initial: float = 0.5
    factor: float = 1.5
    jitter: float = 0.2
    steps: int = 5

    def waits(self, rng: random.Random) -> list[float]:
        delay, out = self.initial, []
        for _ in range(self.steps - 1):
            out.append(delay + rng.random() * self.jitter * delay)
            delay *= self.factor
        return out


class _User(msgspec.Struct, omit_defaults=True):
    username: str = ""
    uid: str = ""
    groups: list[str] = msgspec.field(default_factory=list)
    extra: dict[str, list[str]] = msgspec.field(default_factory=dict)


class _TokenStatus(msgspec.Struct, omit_defaults=True):
    authenticated: bool = False
    user: _User = msgspec.field(default_factory=_User)
    error: str = ""


class _TokenReview(msgspec.Struct):
    status: _TokenStatus = msgspec.field(default_factory=_TokenStatus)


class _AccessStatus(msgspec.Struct, omit_defaults=True):
    allowed: bool = False
    denied: bool = False
    reason: str = ""
    evaluation_error: str = msgspec.field(default="", name="evaluationError")


class _AccessReview(msgspec.Struct):
    status: _AccessStatus = msgspec.field(default_factory=_AccessStatus)


class _ReviewFailed(Exception):
    """The review could not be made (or its answer said it could not decide)."""


@dataclass(slots=True)
class _Flight:
    """A review in progress, and how it ended for those who waited on it."""

    done: trio.Event = field(default_factory=trio.Event)
    finished: bool = False
    value: object = None
    error: str | None = None


T = TypeVar("T")

_TOKEN_REVIEWS: Final = "/apis/authentication.k8s.io/v1/tokenreviews"
_ACCESS_REVIEWS: Final = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


class MetricsAuthorizer:
    """Authenticates and authorizes requests to the metrics endpoint through the API server."""

    def __init__(
        self,
        client: Client,
        *,
        backoff: ReviewBackoff | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client.unthrottled()
        self.backoff = backoff or ReviewBackoff()
        self._rng = rng or random.Random()
        # Keyed by a hash: a cache holds no bearer token in the clear.
        self._tokens: TLRUCache[bytes, _User | None] = TLRUCache(
            TOKEN_CACHE_SIZE, _token_expiry, timer=trio.current_time
        )
        self._access: TLRUCache[bytes, _AccessStatus] = TLRUCache(
            ACCESS_CACHE_SIZE, _access_expiry, timer=trio.current_time
        )
        self._in_flight: dict[bytes, _Flight] = {}

    async def check(self, method: str, path: str, authorization: str) -> Denial | None:
        """None when the request may go on, else the answer that refuses it."""
        token = bearer_token(authorization)
        if token is None:
            return Denial(401, "Unauthorized")
        try:
            user = await self._authenticate(token)
        except _ReviewFailed as exc:
            log.error("authentication failed", path=path, error=str(exc))
            return Denial(500, "Authentication failed")
        if user is None:
            return Denial(401, "Unauthorized")
        spec = {
            "user": user.username,
            "uid": user.uid,
            "groups": _with_authenticated(user),
            "extra": user.extra,
            "nonResourceAttributes": {"path": path, "verb": method.lower()},
        }
        try:
            cacheable = len(path) + len(method) < MAX_CACHED_ATTRIBUTES
            status = await self._authorize(spec, cacheable=cacheable)
        except _ReviewFailed as exc:
            log.error("authorization failed", user=user.username, path=path, error=str(exc))
            return Denial(500, f"Authorization for user {user.username} failed")
        if status.allowed and not status.denied:
            return None
        log.debug("authorization denied", user=user.username, path=path, reason=status.reason)
        return Denial(403, f"Authorization denied for user {user.username}")

    async def _authenticate(self, token: str) -> _User | None:
        key = hashlib.sha256(token.encode()).digest()

        async def review() -> _User | None:
            body = {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            }
            with trio.move_on_after(TOKEN_REVIEW_TIMEOUT) as scope:
                answer = await self._review(_TOKEN_REVIEWS, body, _TokenReview)
            if scope.cancelled_caught:
                raise _ReviewFailed(f"no TokenReview answer within {TOKEN_REVIEW_TIMEOUT:g}s")
            status = answer.status
            if status.authenticated:
                self._tokens[key] = status.user
                return status.user
            if status.error:  # "could not decide": an error upstream, so never cached
                log.debug("token rejected", error=status.error)
                return None
            self._tokens[key] = None
            return None

        return await self._once(key, self._tokens, review)

    async def _authorize(self, spec: dict[str, Any], *, cacheable: bool) -> _AccessStatus:
        key = msgspec.json.encode(spec)

        async def review() -> _AccessStatus:
            body = {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": spec,
            }
            status = (await self._review(_ACCESS_REVIEWS, body, _AccessReview)).status
            if status.evaluation_error and not (status.allowed or status.denied):
                log.info("access review could not evaluate", error=status.evaluation_error)
            if cacheable:
                self._access[key] = status
            return status

        return await self._once(key, self._access, review)

    async def _once(
        self,
        key: bytes,
        cache: TLRUCache[bytes, T],
        compute: Callable[[], Awaitable[T]],
    ) -> T:
        """The cached answer, or one computed now. Concurrent askers of one key share the
        call and its outcome, a failure included, as the apiserver's cache lets them join a
        lookup in progress; only if it was cancelled do they ask again themselves."""
        while True:
            if key in cache:
                return cache[key]
            flight = self._in_flight.get(key)
            if flight is None:
                break
            await flight.done.wait()
            if flight.error is not None:
                raise _ReviewFailed(flight.error)
            if flight.finished:
                return cast(T, flight.value)
        flight = self._in_flight[key] = _Flight()
        try:
            value = await compute()
        except _ReviewFailed as exc:
            flight.error = str(exc)
            raise
        else:
            flight.value, flight.finished = value, True
            return value
        finally:
            del self._in_flight[key]
            flight.done.set()

    async def _review(self, path: str, body: Mapping[str, Any], kind: type[T]) -> T:
        payload = msgspec.json.encode(body)
        waits = self.backoff.waits(self._rng)
        while True:
            try:
                answer = await self.client.request("POST", path, body=payload)
            except ApiError as exc:
                retryable = exc.status in _RETRYABLE_STATUS or exc.retry_after is not None
                if not retryable or not waits:
                    raise _ReviewFailed(str(exc)) from None
                await trio.sleep(waits.pop(0))
                continue
            try:
                return msgspec.json.decode(answer, type=kind)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise _ReviewFailed(f"unreadable answer from {path}: {exc}") from None


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, as the apiserver reads it:
    the scheme in any case, one space, a non-empty token; anything else is no token."""
    parts = authorization.strip().split(" ")
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


def _with_authenticated(user: _User) -> list[str]:
    """The groups with ``system:authenticated``, which the apiserver's authenticator adds."""
    groups = list(user.groups)
    if user.username != _ANONYMOUS and not {AUTHENTICATED, _UNAUTHENTICATED} & set(groups):
        groups.append(AUTHENTICATED)
    return groups


def _token_expiry(_key: bytes, _user: _User | None, now: float) -> float:
    return now + TOKEN_CACHE_TTL


def _access_expiry(_key: bytes, status: _AccessStatus, now: float) -> float:
    return now + (ALLOW_CACHE_TTL if status.allowed else DENY_CACHE_TTL)
