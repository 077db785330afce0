"""The ``sim`` driver: an ordinary HTTP client of the simulated cloud, at an address of its own
as a real provider's API is: the class secret's ``simCloudURL``, else the manager's
``machine.simCloudURL`` (``--sim-cloud-url``); never the API server's. It holds no state of its
own, so a restarted manager finds every VM where it was left, exactly as with a real provider.

Every request carries the class's ``providerSpec`` (the cloud's script) and ``nodeTemplate``
(the node its VMs become) and the machine's name and providerID; never the class secret. Errors
come back as ``metav1.Status`` bodies whose reason is an MCM code name; a body without one falls
back on the HTTP status, and a request that got no response at all is ``Unavailable``. Each
request is one request to the cloud's ``compute`` service in MCM's cloud API metrics. The
requests go over kept-alive connections of the driver's own (``kubetrio.runtime.http``), with
neither the Kubernetes client's rate limit nor its ``rest_client_*`` metrics: a cloud's API has
its own.
"""

from __future__ import annotations

import copy
from collections.abc import MutableMapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit

import msgspec

from kubetrio.api.core import PersistentVolume
from kubetrio.api.machine import Machine, MachineClass
from kubetrio.controllers.clusters import TARGET
from kubetrio.controllers.machine.driver.codes import Code, MachineError
from kubetrio.controllers.machine.driver.driver import CreateResult, SecretData, StatusResult
from kubetrio.controllers.machine.driver.registry import DriverRegistry
from kubetrio.controllers.machine.provider_metrics import ProviderMetrics, provider_metrics
from kubetrio.controllers.sharding import writes
from kubetrio.runtime.http.errors import NoResponse
from kubetrio.runtime.http.pool import ConnectionPool
from kubetrio.runtime.leaderelection.fence import Fence
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.util.inflight import request_in_flight

PROVIDER = "sim"
CSI_DRIVER = "sim.csi.kubetrio.io"
SERVICE = "compute"  # the cloud API service, in mcm_cloud_api_* metrics
API_VERSION: Final = "v1"  # every operation is POST <endpoint>/v1/<operation>
# The class secret's key naming the cloud's address, as a real provider's secret carries its
# endpoint beside the credentials (OpenStack's authURL, metal-stack's metalAPIURL).
ENDPOINT_KEY: Final = "simCloudURL"
DEFAULT_TIMEOUT = 30.0
# The operations that change VMs: their bytes leave only while the leader fence holds.
_CHANGES: Final = frozenset({"create", "initialize", "delete"})
# The operations that only read: sent again when a kept-alive connection was found closed.
_READS: Final = frozenset({"status", "list"})
A = TypeVar("A")

_BY_HTTP_STATUS: dict[int, Code] = {
    400: Code.InvalidArgument,
    401: Code.Unauthenticated,
    403: Code.PermissionDenied,
    404: Code.NotFound,
    409: Code.AlreadyExists,
    412: Code.FailedPrecondition,
    429: Code.ResourceExhausted,
    499: Code.Canceled,
    501: Code.Unimplemented,
    503: Code.Unavailable,
    504: Code.DeadlineExceeded,
}


class _VmAnswer(msgspec.Struct, rename="camel"):
    provider_id: str = msgspec.field(name="providerID")
    node_name: str = ""


class _ListAnswer(msgspec.Struct):
    machines: dict[str, str] = {}


class _Status(msgspec.Struct):
    """What a refusal says: an MCM code name as ``reason``, and the message."""

    reason: str = ""
    message: str = ""


class SimDriver:
    """Implements ``Driver`` against the simulated cloud at ``endpoint`` (None: only classes
    whose secret names one), each request given up after ``timeout`` seconds."""

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        metrics: ProviderMetrics | None = None,
    ) -> None:
        if endpoint is not None and not _is_http_url(endpoint):
            raise ValueError(f"simCloudURL: expected an http(s) URL, got {endpoint!r}")
        self.endpoint = endpoint
        self.timeout = timeout
        self.metrics = metrics
        self.fence: Fence | None = None
        self._pools: dict[str, ConnectionPool] = {}  # by endpoint, shared with fenced twins

    def fenced(self, fence: Fence) -> SimDriver:
        """The same driver, whose VM-changing requests leave only while ``fence`` proves the
        lease held (checked right before the bytes are sent)."""
        twin = copy.copy(self)
        twin.fence = fence
        return twin

    async def create_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> CreateResult:
        answer = await self._vm("create", machine, machine_class, secret_data)
        return CreateResult(provider_id=answer.provider_id, node_name=answer.node_name)

    async def initialize_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        answer = await self._vm("initialize", machine, machine_class, secret_data)
        return StatusResult(provider_id=answer.provider_id, node_name=answer.node_name)

    async def delete_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> str:
        await self._vm("delete", machine, machine_class, secret_data)
        return ""

    async def get_machine_status(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        answer = await self._vm("status", machine, machine_class, secret_data)
        return StatusResult(provider_id=answer.provider_id, node_name=answer.node_name)

    async def list_machines(
        self, machine_class: MachineClass, secret_data: SecretData
    ) -> dict[str, str]:
        payload = await self._call(
            "list", {"machineClass": _class_body(machine_class)}, secret_data
        )
        return _decode(payload, _ListAnswer, "list").machines

    async def get_volume_ids(self, pvs: Sequence[PersistentVolume]) -> dict[str, str]:
        """The sim cloud owns the CSI volumes of its own driver; the answer is keyed by PV name,
        so unrelated volumes simply do not appear."""
        return {
            pv.name: pv.spec.csi.volume_handle
            for pv in pvs
            if pv.spec.csi is not None and pv.spec.csi.driver == CSI_DRIVER
        }

    async def _vm(
        self, op: str, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> _VmAnswer:
        body = {
            "machine": {
                "name": machine.name,
                "namespace": machine.namespace,
                "providerID": machine.spec.provider_id,
            },
            "machineClass": _class_body(machine_class),
        }
        return _decode(await self._call(op, body, secret_data), _VmAnswer, op)

    async def _call(self, op: str, body: dict[str, Any], secret_data: SecretData) -> bytes:
        pool = self._pool(self._endpoint(secret_data))
        fence = self.fence if op in _CHANGES else None

        def last_check(_headers: MutableMapping[str, str]) -> None:
            assert fence is not None
            fence.last_check(f"{op} at the simulated cloud")

        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        recorded: AbstractContextManager[None] = (
            nullcontext() if self.metrics is None else self.metrics.request(PROVIDER, SERVICE)
        )
        with recorded:
            try:
                with request_in_flight():
                    status, _, _, payload = await pool.exchange(
                        "POST",
                        f"/{API_VERSION}/{op}",
                        headers,
                        msgspec.json.encode(body),
                        read_timeout=self.timeout,
                        connect_timeout=self.timeout,
                        before_send=last_check if fence is not None else None,
                        repeat_if_stale=op in _READS,
                    )
            except NoResponse as error:
                # Without the address: it may be the class secret's.
                raise MachineError(
                    Code.Unavailable, f"the cloud API did not respond: {error}"
                ) from None
            if status >= 400:
                raise machine_error(status, payload)
            return payload

    def _endpoint(self, secret_data: SecretData) -> str:
        """The class secret's endpoint, else the manager's; the value is never shown (it is
        secret data)."""
        given = secret_data.get(ENDPOINT_KEY)
        if given is not None:
            endpoint = given.decode(errors="replace").strip()
            if not _is_http_url(endpoint):
                raise MachineError(
                    Code.InvalidArgument,
                    f"the class secret's {ENDPOINT_KEY}: expected an http(s) URL",
                )
            return endpoint
        if self.endpoint is None:
            raise MachineError(
                Code.InvalidArgument,
                f"no simulated cloud to call: set the class secret's {ENDPOINT_KEY} or the "
                "manager's machine.simCloudURL (--sim-cloud-url)",
            )
        return self.endpoint

    def _pool(self, endpoint: str) -> ConnectionPool:
        pool = self._pools.get(endpoint)
        if pool is None:
            pool = self._pools[endpoint] = ConnectionPool(endpoint)
        return pool


def machine_error(status: int, payload: bytes) -> MachineError:
    """The MCM code of a refused cloud request: the body's reason when it names a code, else
    the HTTP status."""
    try:
        refusal = msgspec.json.decode(payload, type=_Status)
    except (msgspec.DecodeError, msgspec.ValidationError):
        refusal = _Status()
    try:
        code = Code.from_name(refusal.reason)
    except ValueError:
        code = _BY_HTTP_STATUS.get(status, Code.Internal if status >= 500 else Code.Unknown)
    return MachineError(code, refusal.message or f"cloud API answered {status}")


def _is_http_url(url: str) -> bool:
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not 0-65535
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _class_body(machine_class: MachineClass) -> dict[str, Any]:
    return {
        "name": machine_class.name,
        "namespace": machine_class.namespace,
        "providerSpec": machine_class.provider_spec,
        "nodeTemplate": machine_class.node_template,
    }


def _decode(payload: bytes, type_: type[A], op: str) -> A:
    try:
        return msgspec.json.decode(payload, type=type_)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise MachineError(Code.Internal, f"undecodable answer from the cloud to {op}") from None


def register_sim(
    registry: DriverRegistry,
    endpoint: str | None,
    metrics: ProviderMetrics | None = None,
) -> None:
    """Register the ``sim`` driver, talking to the cloud at ``endpoint``."""
    registry.register(PROVIDER, SimDriver(endpoint, metrics=metrics))


def register_for_manager(registry: DriverRegistry, manager: Manager) -> None:
    """The ``sim`` plug-in: the simulated cloud at the configured ``machine.simCloudURL``
    (``registry.options``), its requests timed out as the target cluster's client's are."""
    driver = SimDriver(
        registry.options.sim_cloud_url,
        timeout=manager.cluster(TARGET).client.timeout,
        metrics=provider_metrics(manager.registry),
    )
    fence = writes(manager).fence  # the shard Lease's when the manager shards
    if fence is not None:
        driver = driver.fenced(fence)  # VM changes leave only while the lease is proven
    registry.register(PROVIDER, driver)
