"""Typed async Kubernetes client.

pykube-ng supplies what it does well: kubeconfig parsing; credentials (tokens, passwords, exec
plugins, rotating token and certificate files) are ``kubetrio.runtime.client.credentials``'s.
Requests and watches go out from trio itself over kept-alive HTTP/1.1 connections, through a
proxy when one is configured (``kubetrio.runtime.client.wire``: a fraction of the CPU per
request of pykube-ng's requests session in a worker thread). Everything above the raw HTTP
exchange is ours: paths from the kind registry, typed (de)serialisation with msgspec straight
from bytes, one ``ApiError`` for every failure, client-side rate limiting, bounded retries on
429, metrics, and prompt cancellation.

``fenced(fence)`` is the same client for leader-only work: a write leaves only if the elector
still proves the lease held, checked twice as late as possible (before the request is queued,
and right before its bytes are written, on a connection already open). Each fenced write
carries the instant of that last check in its ``Audit-ID`` (kube-apiserver keeps a client's
Audit-ID as the audit event's ``auditID``), so an audit log shows when each accepted write was
last allowed.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import secrets
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import urlencode, urlsplit

import msgspec
import pykube
import trio
from prometheus_client import CollectorRegistry, Counter, Histogram

from kubetrio.api.meta import KubeObject, ListMeta, ObjectList, Status, kind_of
from kubetrio.api.registry import KindInfo
from kubetrio.runtime.cache.undecodable import Undecodable, undecodable
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.execplugin import CredentialError
from kubetrio.runtime.client.incluster import in_cluster_config
from kubetrio.runtime.client.kubeconfig import KubeconfigError, load_kubeconfig
from kubetrio.runtime.client.unreachable import transport_problem
from kubetrio.runtime.client.useragent import user_agent
from kubetrio.runtime.client.wire import Wire
from kubetrio.runtime.controller.ratelimit import BucketRateLimiter
from kubetrio.runtime.http.errors import NoResponse
from kubetrio.runtime.leaderelection.fence import Fence, NotLeader
from kubetrio.runtime.util.inflight import request_in_flight

T = TypeVar("T", bound=KubeObject)
# What a watch event carries: a typed object, or a plain dict from ``watch_dicts``.
Carried = TypeVar("Carried")

PatchType = Literal["merge", "json", "strategic", "apply"]
PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
JSON = "application/json"

# Methods that change something; a fenced client refuses them once the lease is not proven.
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
FENCED_AUDIT_ID_PREFIX = "fenced-"
# ApiError.reason of a request never sent for want of credentials (status 0).
CREDENTIALS_UNAVAILABLE = "CredentialsUnavailable"

# client-go's rest_client_request_duration_seconds buckets.
REQUEST_LATENCY_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


class RestClientMetrics:
    """client-go's ``rest_client_*`` families in one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=registry,
        )
        self.duration = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=REQUEST_LATENCY_BUCKETS,
            registry=registry,
        )
        self.exec_plugin_calls = Counter(
            "rest_client_exec_plugin_call_total",
            "Number of calls to an exec plugin, partitioned by the type of event encountered "
            "(no_error, plugin_execution_error, plugin_not_found_error, client_internal_error) "
            "and an optional exit code. The exit code will be set to 0 if and only if the "
            "plugin call was successful.",
            ["code", "call_status"],
            registry=registry,
        )

    def exec_plugin_call(self, code: int, call_status: str) -> None:
        self.exec_plugin_calls.labels(str(code), call_status).inc()


_rest_metrics: weakref.WeakKeyDictionary[CollectorRegistry, RestClientMetrics] = (
    weakref.WeakKeyDictionary()
)


def rest_client_metrics(registry: CollectorRegistry) -> RestClientMetrics:
    metrics = _rest_metrics.get(registry)
    if metrics is None:
        metrics = _rest_metrics[registry] = RestClientMetrics(registry)
    return metrics


class Preconditions(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Delete only if the object still has this UID / resourceVersion (else 409)."""

    uid: str | None = None
    resource_version: str | None = None


def object_path(
    kind: KindInfo, namespace: str | None = None, name: str = "", subresource: str = ""
) -> str:
    """The REST path of a collection, an object, or an object's subresource."""
    base = f"/apis/{kind.api_version}" if kind.group else f"/api/{kind.api_version}"
    parts = [base]
    if kind.namespaced and namespace:
        parts.append(f"/namespaces/{namespace}")
    parts.append(f"/{kind.plural}")
    if name:
        parts.append(f"/{name}")
        if subresource:
            parts.append(f"/{subresource}")
    return "".join(parts)


class Client:
    """Async typed access to one API server.

    Create it with one of the ``from_*`` constructors, or on another client's ``wire`` to share
    its connections and credentials. All methods are safe to call from many tasks at once; at
    most ``max_concurrency`` requests are in flight.
    """

    def __init__(
        self,
        wire: Wire,
        *,
        qps: float = 20.0,
        burst: int = 30,
        timeout: float = 30.0,
        max_concurrency: int = 40,
        max_throttle_retries: int = 5,
        registry: CollectorRegistry | None = None,
        component: str = "kubetrio",
    ) -> None:
        """``component`` ends the User-Agent (a manager passes its identity), so the API
        server's audit log attributes every request to the process that sent it."""
        self.wire = wire
        self.user_agent = user_agent(component)
        self.fence: Fence | None = None
        self.base_url = wire.url
        self.host = urlsplit(self.base_url).netloc
        self.timeout = timeout
        self.max_throttle_retries = max_throttle_retries
        self._limiter = trio.CapacityLimiter(max_concurrency)
        self._bucket = BucketRateLimiter(qps=qps, burst=burst) if qps > 0 else None
        self._metrics = rest_client_metrics(registry) if registry is not None else None
        plugin = wire.credentials.exec_plugin
        if plugin is not None and self._metrics is not None:
            plugin.on_call = self._metrics.exec_plugin_call
        self._decoders: dict[Any, msgspec.json.Decoder[Any]] = {}
        self._metric_children: dict[tuple[str, str], tuple[Any, Any]] = {}

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_config(cls, config: pykube.KubeConfig, **options: Any) -> Client:
        """For the current context of a loaded kubeconfig. Raises ``CredentialError`` when its
        user's credentials are unusable, ``KubeconfigError`` when its server or proxy is."""
        return cls(Wire.from_config(config), **options)

    @classmethod
    def from_kubeconfig(
        cls,
        path: str | None = None,
        context: str | None = None,
        server: str | None = None,
        **options: Any,
    ) -> Client:
        """From a kubeconfig file (``$KUBECONFIG`` or ``~/.kube/config`` when ``path`` is None);
        ``server`` overrides its cluster's URL, as ``--master`` does.

        Raises ``KubeconfigError`` naming the file and the field when it is unusable.
        """
        config = load_kubeconfig(path, context, server)
        try:
            return cls.from_config(config, **options)
        except (CredentialError, KubeconfigError) as error:
            raise KubeconfigError(f"kubeconfig {config.filepath}: {error}") from None

    @classmethod
    def from_url(cls, url: str, token: str | None = None, **options: Any) -> Client:
        """Straight at an API server URL, optionally with a bearer token."""
        user: dict[str, Any] = {"token": token} if token else {}
        doc = {
            "clusters": [{"name": "target", "cluster": {"server": url}}],
            "users": [{"name": "target", "user": user}],
            "contexts": [{"name": "target", "context": {"cluster": "target", "user": "target"}}],
            "current-context": "target",
        }
        return cls.from_config(pykube.KubeConfig(doc), **options)

    @classmethod
    def in_cluster(
        cls,
        service_account_dir: str | None = None,
        environ: Mapping[str, str] | None = None,
        **options: Any,
    ) -> Client:
        """From the pod's service account (token, CA and KUBERNETES_SERVICE_HOST/PORT) as
        client-go's InClusterConfig; the rotating token is re-read as it changes.

        Raises ``KubeconfigError`` (one line) when not in a cluster or the token is unreadable.
        """
        try:
            return cls.from_config(in_cluster_config(service_account_dir, environ), **options)
        except CredentialError as error:
            raise KubeconfigError(str(error)) from None

    def fenced(self, fence: Fence) -> Client:
        """This client for leader-only work: writes need ``fence`` to pass (else
        ``NotLeader``), reads do not. Connections, concurrency limit, rate limit and metrics
        are shared with this one."""
        view = copy.copy(self)
        view.fence = fence
        return view

    def with_own_limits(
        self, *, qps: float = 5.0, burst: int = 10, max_concurrency: int = 4
    ) -> Client:
        """This client with a rate limit and a concurrency limit of its own (connections,
        credentials and metrics shared): for a Lease's renewals, which must never wait behind
        a controller's burst of requests, as client-go's leader election gets a client of its
        own."""
        view = copy.copy(self)
        view._limiter = trio.CapacityLimiter(max_concurrency)
        view._bucket = BucketRateLimiter(qps=qps, burst=burst) if qps > 0 else None
        return view

    def unthrottled(self) -> Client:
        """This client without the client-side rate limit, for calls made on behalf of an
        incoming request (the reviews of a metrics scrape): like the apiserver's webhook
        clients (QPS -1), they must neither wait behind the controllers' budget nor spend it.
        Connections, concurrency limit and metrics are shared."""
        view = copy.copy(self)
        view._bucket = None
        return view

    # -- the raw exchange -----------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str = JSON,
        read_timeout: float | None = None,
    ) -> bytes:
        """One request with rate limiting, 429 retries and metrics; the response body."""
        attempt = 0
        while True:
            await self._throttle()
            status, reason, headers, payload = await self._exchange(
                method, path, params, body, content_type, read_timeout
            )
            if status < 400:
                return payload
            error = ApiError.from_response(
                status,
                payload,
                http_reason=reason,
                retry_after_header=headers.get("retry-after"),
                method=method,
                path=path,
            )
            if status == 429 and error.retry_after and attempt < self.max_throttle_retries:
                attempt += 1
                await trio.sleep(error.retry_after)
                continue
            raise error

    async def _throttle(self) -> None:
        if self._bucket is not None:
            delay = self._bucket.when(None)
            if delay > 0:
                await trio.sleep(delay)

    async def _exchange(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: bytes | None,
        content_type: str,
        read_timeout: float | None,
    ) -> tuple[int, str, Mapping[str, str], bytes]:
        headers = {"Accept": JSON, "User-Agent": self.user_agent}
        if body is not None:
            headers["Content-Type"] = content_type
        fence = self.fence if method in WRITE_METHODS else None
        if fence is not None:
            fence.check(f"{method} {path}")  # before waiting for a connection, too

        def last_check(headers: MutableMapping[str, str]) -> None:
            # Right before the bytes leave; its instant goes in the Audit-ID.
            assert fence is not None
            checked_at = fence.last_check(f"{method} {path}")
            headers["Audit-ID"] = f"{FENCED_AUDIT_ID_PREFIX}{checked_at}-{secrets.token_hex(6)}"

        target = f"{path}?{urlencode(params)}" if params else path
        started = time.perf_counter()
        code = "<error>"
        try:
            with request_in_flight():
                async with self._limiter:
                    result = await self.wire.exchange(
                        method,
                        target,
                        headers,
                        body,
                        read_timeout=self.timeout if read_timeout is None else read_timeout,
                        before_send=last_check if fence is not None else None,
                    )
            code = str(result[0])
            return result
        except NotLeader:
            code = ""  # refused by the fence: no request was made
            raise
        except NoResponse as error:
            raise ApiError(
                0, "Unreachable", transport_problem(error), method=method, path=path
            ) from error
        except CredentialError as error:
            raise _no_credentials(error, method, path) from error
        finally:
            if self._metrics is not None and code:
                self._observe(self._metrics, code, method, time.perf_counter() - started)

    def _observe(self, metrics: RestClientMetrics, code: str, method: str, took: float) -> None:
        """Count one request; the labelled children are looked up once per (code, method),
        not once per request (``labels()`` takes a lock and builds a key each time)."""
        children = self._metric_children.get((code, method))
        if children is None:
            children = self._metric_children[(code, method)] = (
                metrics.requests.labels(code, method, self.host),
                metrics.duration.labels(method, self.host),
            )
        children[0].inc()
        children[1].observe(took)

    def decoder(self, type_: Any) -> msgspec.json.Decoder[Any]:
        """The JSON decoder for ``type_``, built once per client: building one costs far more
        than a decode."""
        decoder = self._decoders.get(type_)
        if decoder is None:
            decoder = self._decoders[type_] = msgspec.json.Decoder(type_)
        return decoder

    def decode(self, type_: type[T], payload: bytes, where: str) -> T:
        """Decode a typed object; a malformed one is a clear ApiError, not a traceback."""
        try:
            result: T = self.decoder(type_).decode(payload)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise ApiError(
                200, "BadResponse", f"cannot decode {kind_of(type_).kind} from {where}: {error}"
            ) from error
        return result

    # -- typed verbs ----------------------------------------------------------------------

    async def get(self, kind: type[T], name: str, *, namespace: str = "") -> T:
        """Read one object from the API server (not the cache); a missing one raises
        ``ApiError`` with status 404."""
        path = object_path(kind_of(kind), namespace, name)
        return self.decode(kind, await self.request("GET", path), path)

    async def get_or_none(self, kind: type[T], name: str, *, namespace: str = "") -> T | None:
        """``get``, with ``None`` for an object that does not exist."""
        try:
            return await self.get(kind, name, namespace=namespace)
        except ApiError as error:
            if error.status == 404:
                return None
            raise

    async def list(
        self,
        kind: type[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        limit: int = 500,
        on_undecodable: Callable[[Undecodable], None] | None = None,
        each: Callable[[T], T] | None = None,
    ) -> ObjectList[T]:
        """Every matching object, following ``continue`` tokens; the first page's RV.

        Only one page's body is held at a time, so a large list costs its decoded items plus
        ``limit`` objects of JSON, never the whole response. A continue token the server has
        compacted away (410 Expired on page 2 or later) falls back to one full, unpaged list
        at the requested resourceVersion, as client-go's pager does (``FullListIfExpired``):
        the pages already read may be inconsistent with the rest, so they are dropped.

        With ``on_undecodable``, items are decoded one by one and an item that does not fit
        ``kind`` goes there instead of failing the whole list (an informer must not be wedged
        by one poison object); without it, any undecodable item fails the call.

        ``each`` is applied to every item right after it is decoded, before the next one is
        (an informer's interning and transform): what it drops is freed while the allocator
        can reuse the memory for the next item, instead of leaving holes between the items
        kept (``kubetrio.runtime.cache.intern``). The list holds what ``each`` returns.
        """
        path = object_path(kind_of(kind), namespace)
        params: dict[str, str] = {}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        if resource_version is not None:
            params["resourceVersion"] = resource_version
        if limit:
            params["limit"] = str(limit)
        list_type = ObjectList[kind]  # type: ignore[valid-type]
        result: ObjectList[T] | None = None
        first = dict(params)
        while True:
            try:
                payload = await self.request("GET", path, params=params)
            except ApiError as error:
                if error.status != 410 or "continue" not in params:
                    raise
                first.pop("limit", None)
                params, result = dict(first), None
                continue
            try:
                page: ObjectList[T] = (
                    self.decoder(list_type).decode(payload)
                    if on_undecodable is None and each is None
                    else self._decode_items(kind, payload, on_undecodable, each)
                )
            except (msgspec.DecodeError, msgspec.ValidationError) as error:
                raise ApiError(
                    200, "BadResponse", f"cannot decode {kind_of(kind).kind} list: {error}"
                ) from error
            if result is None:
                result = page
            else:
                result.items.extend(page.items)
            if not page.metadata.continue_:
                result.metadata.continue_ = ""
                return result
            params["continue"] = page.metadata.continue_
            params.pop("resourceVersion", None)

    def _decode_items(
        self,
        kind: type[T],
        payload: bytes,
        on_undecodable: Callable[[Undecodable], None] | None,
        each: Callable[[T], T] | None,
    ) -> ObjectList[T]:
        """One item at a time: a poison item goes to ``on_undecodable`` (raises without it)."""
        page = _raw_list_decoder.decode(payload)
        decoder = self.decoder(kind)
        items: builtins.list[T] = []
        for raw in page.items:
            try:
                obj = decoder.decode(raw)
            except msgspec.ValidationError as error:
                if on_undecodable is None:
                    raise
                on_undecodable(undecodable(raw, error))
                continue
            items.append(obj if each is None else each(obj))
        return ObjectList(metadata=page.metadata, items=items)

    async def create(
        self,
        kind: type[T],
        body: T | Mapping[str, Any],
        *,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> T:
        """Create an object from a typed view or a plain dict (apiVersion and kind are filled
        in); ``namespace`` defaults to the body's. Returns the object as stored."""
        document = _with_type_meta(kind_of(kind), body)
        ns = namespace if namespace is not None else document.get("metadata", {}).get("namespace")
        path = object_path(kind_of(kind), ns)
        params = {"dryRun": "All"} if dry_run else None
        payload = await self.request(
            "POST", path, params=params, body=msgspec.json.encode(document)
        )
        return self.decode(kind, payload, path)

    async def patch(
        self,
        kind: type[T],
        name: str,
        patch: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        namespace: str = "",
        patch_type: PatchType = "merge",
        subresource: str = "",
        field_manager: str | None = None,
    ) -> T:
        """Patch an object; ``json`` patches may carry a ``test`` op on resourceVersion."""
        path = object_path(kind_of(kind), namespace, name, subresource)
        params = {"fieldManager": field_manager} if field_manager else None
        payload = await self.request(
            "PATCH",
            path,
            params=params,
            body=msgspec.json.encode(patch),
            content_type=PATCH_CONTENT_TYPES[patch_type],
        )
        return self.decode(kind, payload, path)

    async def delete(
        self,
        kind: type[T] | KindInfo,
        name: str,
        *,
        namespace: str = "",
        grace_period_seconds: int | None = None,
        preconditions: Preconditions | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
        missing_ok: bool = False,
    ) -> None:
        """Delete an object (kube's DeleteOptions: grace period, preconditions, propagation);
        ``missing_ok`` treats an object already gone as deleted."""
        info = kind if isinstance(kind, KindInfo) else kind_of(kind)
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if preconditions is not None:
            options["preconditions"] = msgspec.to_builtins(preconditions)
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        try:
            await self.request(
                "DELETE", object_path(info, namespace, name), body=msgspec.json.encode(options)
            )
        except ApiError as error:
            if not (missing_ok and error.status == 404):
                raise

    async def evict(
        self, name: str, *, namespace: str, grace_period_seconds: int | None = None
    ) -> None:
        """POST a policy/v1 Eviction; 429 means a disruption budget forbids it right now."""
        eviction: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if grace_period_seconds is not None:
            eviction["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"
        await self.request("POST", path, body=msgspec.json.encode(eviction))

    async def watch(
        self,
        kind: type[T],
        send: trio.MemorySendChannel[builtins.list[WatchEvent[T]]],
        *,
        namespace: str | None = None,
        resource_version: str = "",
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
        send_initial_events: bool = False,
    ) -> None:
        """Stream events into ``send`` in batches (whatever arrived together), then close it.

        Never raises except on cancellation: a failure to start or a broken stream arrives as
        a final ERROR event, so the consumer handles every outcome in one loop. The stream
        ends by itself after ``timeout_seconds``.

        ``send_initial_events`` asks for a streaming list: every object existing at (or after)
        ``resource_version`` as an ADDED event, then a bookmark with ``initial_events_end``,
        then the watch goes on. A server without streaming lists refuses the request (400).
        """
        await self._watch_to_channel(
            send,
            kind_of(kind),
            self.decoder(kind),
            namespace=namespace,
            resource_version=resource_version,
            label_selector=label_selector,
            field_selector=field_selector,
            timeout_seconds=timeout_seconds,
            allow_bookmarks=allow_bookmarks,
            send_initial_events=send_initial_events,
        )

    async def watch_batches(
        self,
        kind: type[T],
        deliver: Callable[[builtins.list[WatchEvent[T]]], bool],
        *,
        namespace: str | None = None,
        resource_version: str = "",
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
        send_initial_events: bool = False,
    ) -> ApiError | None:
        """``watch`` without the channel: each batch is handed to ``deliver`` in the reading
        task, which stops the watch by returning True. Returns None when the watch ended (or
        was stopped), else what ended it.

        Why: an informer applies events synchronously anyway. Through a channel every batch
        cost two task switches (the reader's send, the consumer's wake-up) — a good share of
        a watched event's CPU when events arrive one at a time.
        """

        async def relay(batch: builtins.list[WatchEvent[T]]) -> bool:
            return deliver(batch)

        return await self._watch(
            kind_of(kind),
            self.decoder(kind),
            relay,
            namespace=namespace,
            resource_version=resource_version,
            label_selector=label_selector,
            field_selector=field_selector,
            timeout_seconds=timeout_seconds,
            allow_bookmarks=allow_bookmarks,
            send_initial_events=send_initial_events,
        )

    async def watch_dicts(
        self,
        kind: KindInfo,
        send: trio.MemorySendChannel[builtins.list[WatchEvent[dict[str, Any]]]],
        *,
        namespace: str | None = None,
        resource_version: str = "",
        label_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> None:
        """``watch`` for any kind, its objects as plain JSON dicts (what client-go's dynamic
        client hands out): for code that keeps whole objects, fields no typed view holds
        included."""
        await self._watch_to_channel(
            send,
            kind,
            self.decoder(dict[str, Any]),
            namespace=namespace,
            resource_version=resource_version,
            label_selector=label_selector,
            timeout_seconds=timeout_seconds,
        )

    async def list_dicts(
        self, kind: KindInfo, *, namespace: str | None = None, limit: int = 500
    ) -> tuple[builtins.list[dict[str, Any]], str]:
        """Every object of ``kind`` as a plain JSON dict, page by page (consistent: the pages
        after the first follow its continue token), and the list's resourceVersion."""
        path = object_path(kind, namespace)
        params = {"limit": str(limit)} if limit else {}
        decoder = self.decoder(_DictList)
        items: builtins.list[dict[str, Any]] = []
        version = ""
        while True:
            payload = await self.request("GET", path, params=params)
            try:
                page: _DictList = decoder.decode(payload)
            except (msgspec.DecodeError, msgspec.ValidationError) as error:
                raise ApiError(
                    200, "BadResponse", f"cannot decode {kind.kind} list: {error}"
                ) from error
            version = version or page.metadata.resource_version
            items.extend(page.items)
            if not page.metadata.continue_:
                return items, version
            params["continue"] = page.metadata.continue_

    async def _watch_to_channel(
        self,
        send: trio.MemorySendChannel[builtins.list[WatchEvent[Any]]],
        kind: KindInfo,
        decoder: msgspec.json.Decoder[Any],
        **options: Any,
    ) -> None:
        """``_watch`` into a channel: its batches, then its failure as a final ERROR event;
        the channel is closed at the end. A consumer that went away stops the reading."""

        async def deliver(batch: builtins.list[WatchEvent[Any]]) -> bool:
            await send.send(batch)
            return False

        async with send:
            try:
                failure = await self._watch(kind, decoder, deliver, **options)
            except trio.BrokenResourceError:
                return
            if failure is not None:
                with contextlib.suppress(trio.BrokenResourceError):
                    await send.send([WatchEvent("ERROR", error=failure)])

    async def _watch(
        self,
        kind: KindInfo,
        decoder: msgspec.json.Decoder[Any],
        deliver: Callable[[builtins.list[WatchEvent[Any]]], Awaitable[bool]],
        *,
        namespace: str | None,
        resource_version: str,
        label_selector: str | None,
        timeout_seconds: int,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        send_initial_events: bool = False,
    ) -> ApiError | None:
        path = object_path(kind, namespace)
        params = {"watch": "true", "timeoutSeconds": str(timeout_seconds)}
        if resource_version:
            params["resourceVersion"] = resource_version
        if allow_bookmarks or send_initial_events:
            params["allowWatchBookmarks"] = "true"
        if send_initial_events:
            params["sendInitialEvents"] = "true"
            params["resourceVersionMatch"] = "NotOlderThan"
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        target = f"{path}?{urlencode(params)}"
        failure: ApiError | None = None
        await self._throttle()
        started = time.perf_counter()
        headers = {"Accept": JSON, "User-Agent": self.user_agent}
        try:
            # Given up ``self.timeout`` after the server should have ended it.
            with trio.fail_after(timeout_seconds + self.timeout):
                failure = await self._read_watch(target, path, headers, decoder, deliver)
        except trio.TooSlowError:
            failure = ApiError(0, WATCH_CUT, f"watch {path} broke: timed out")
        if self._metrics is not None:
            code = str(failure.status) if failure is not None else "200"
            self._metrics.requests.labels(code, "WATCH", self.host).inc()
            self._metrics.duration.labels("WATCH", self.host).observe(time.perf_counter() - started)
        return failure

    async def _read_watch(
        self,
        target: str,
        path: str,
        headers: dict[str, str],
        decoder: msgspec.json.Decoder[T],
        deliver: Callable[[builtins.list[WatchEvent[T]]], Awaitable[bool]],
    ) -> ApiError | None:
        """Each chunk that arrives is decoded and delivered as one batch; ``deliver``
        returning True ends the watch."""
        connect_timeout = min(10.0, self.timeout)
        try:
            async with self.wire.stream(target, headers, connect_timeout=connect_timeout) as answer:
                if answer.status >= 400:
                    return ApiError.from_response(
                        answer.status,
                        await answer.read(),
                        http_reason=answer.reason,
                        method="WATCH",
                        path=path,
                    )
                pending = b""
                try:
                    async for chunk in answer.chunks():
                        lines = (pending + chunk).split(b"\n")
                        pending = lines.pop()
                        batch = [decode_watch_line(line, decoder) for line in lines if line]
                        if batch and await deliver(batch):
                            return None
                        del chunk, lines, batch  # not held while the watch waits for more
                except (msgspec.DecodeError, msgspec.ValidationError) as error:
                    return ApiError(200, "BadResponse", f"watch {path}: undecodable event: {error}")
                except NoResponse as error:
                    # Cut mid-stream (a load balancer, a restarting server): not an error of
                    # the request, so the consumer may resume at once from its last RV.
                    return ApiError(0, WATCH_CUT, f"watch {path} broke: {error}")
        except NoResponse as error:
            return ApiError(0, "Unreachable", f"watch {path}: {error}", method="WATCH")
        except CredentialError as error:
            return _no_credentials(error, "WATCH", path)
        return None


def _no_credentials(error: CredentialError, method: str, path: str) -> ApiError:
    """Not sent: no usable credentials (a failing plugin may recover, so callers retry)."""
    return ApiError(
        0, CREDENTIALS_UNAVAILABLE, f"getting credentials: {error}", method=method, path=path
    )


def _with_type_meta(kind: KindInfo, body: KubeObject | Mapping[str, Any]) -> dict[str, Any]:
    """The object as a dict carrying apiVersion and kind, which typed views leave out."""
    document: dict[str, Any] = (
        msgspec.to_builtins(body) if isinstance(body, KubeObject) else dict(body)
    )
    document.setdefault("apiVersion", kind.api_version)
    document.setdefault("kind", kind.kind)
    return document


WATCH_CUT = "WatchCut"  # the reason of a watch that was established and then broke
# The annotation of the bookmark that ends a streaming list's initial events.
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


class WatchEvent(Generic[Carried]):
    """One event of a watch stream.

    ``type`` is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR. ``obj`` is set for the first three;
    ``resource_version`` for all but ERROR; ``error`` for ERROR (a 410 means the requested
    history is gone and the caller must relist).
    """

    __slots__ = ("error", "initial_events_end", "obj", "resource_version", "type", "undecodable")

    def __init__(
        self,
        type: str,
        obj: Carried | None = None,
        resource_version: str = "",
        error: ApiError | None = None,
        undecodable: Undecodable | None = None,
        initial_events_end: bool = False,
    ) -> None:
        self.type = type
        self.obj = obj
        self.resource_version = resource_version
        self.error = error
        self.undecodable = undecodable  # set instead of ``obj`` when the object does not fit
        # The bookmark of a streaming list that says every existing object has been sent.
        self.initial_events_end = initial_events_end

    def __repr__(self) -> str:
        what = self.error if self.error else self.resource_version
        return f"WatchEvent({self.type}, {what})"


class _RawWatchEvent(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _BookmarkMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    annotations: dict[str, str] = {}


class _Bookmark(msgspec.Struct):
    metadata: _BookmarkMeta = msgspec.field(default_factory=_BookmarkMeta)


class _DictList(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[dict[str, Any]] = []


class _RawList(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[msgspec.Raw] = []


_raw_list_decoder = msgspec.json.Decoder(_RawList)
_raw_event_decoder = msgspec.json.Decoder(_RawWatchEvent)
_bookmark_decoder = msgspec.json.Decoder(_Bookmark)


class _TypedWatchEvent(msgspec.Struct, Generic[T]):
    type: str
    object: T


_OBJECT_EVENTS = frozenset({"ADDED", "MODIFIED", "DELETED"})
_typed_event_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def decode_watch_line(line: bytes, decoder: msgspec.json.Decoder[T]) -> WatchEvent[T]:
    """Decode one line of a watch stream straight into a typed event (no dicts on the way).

    The common line (an object that fits) is decoded in one pass; anything else (ERROR,
    BOOKMARK, a poison object) goes the careful way: envelope first, then its object.
    """
    typed = _typed_event_decoders.get(decoder.type)
    if typed is None:
        typed = _typed_event_decoders[decoder.type] = msgspec.json.Decoder(
            _TypedWatchEvent[decoder.type]  # type: ignore[name-defined]
        )
    try:
        event = typed.decode(line)
    except msgspec.ValidationError:
        pass
    else:
        if event.type in _OBJECT_EVENTS:
            obj = event.object
            return WatchEvent(event.type, obj, _resource_version(obj))
    raw = _raw_event_decoder.decode(line)
    if raw.type == "ERROR":
        status = msgspec.json.decode(raw.object, type=Status)
        error = ApiError(status.code or 500, status.reason or "Unknown", status.message)
        return WatchEvent("ERROR", error=error)
    if raw.type == "BOOKMARK":
        meta = _bookmark_decoder.decode(raw.object).metadata
        end = meta.annotations.get(INITIAL_EVENTS_END) == "true"
        return WatchEvent(
            "BOOKMARK", resource_version=meta.resource_version, initial_events_end=end
        )
    try:
        obj = decoder.decode(raw.object)
    except msgspec.ValidationError as error:
        # One poison object must not end the stream: the consumer decides what to do with it.
        poison = undecodable(raw.object, error)
        return WatchEvent(raw.type, resource_version=poison.resource_version, undecodable=poison)
    return WatchEvent(raw.type, obj, _resource_version(obj))


def _resource_version(obj: Any) -> str:
    """A typed object's or a plain dict's resourceVersion."""
    if isinstance(obj, dict):
        return str((obj.get("metadata") or {}).get("resourceVersion") or "")
    return str(obj.metadata.resource_version)
