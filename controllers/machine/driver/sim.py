"""The ``sim`` driver: an ordinary HTTP client of the simulated cloud the emulator serves at
``/_cloud/v1/``. It holds no state of its own, so a restarted manager finds every VM where it was
left, exactly as with a real provider.

Every request carries the class's ``providerSpec`` (the cloud's script) and ``nodeTemplate``
(the node its VMs become) and the machine's name and providerID; never the class secret. Errors
come back as ``metav1.Status`` bodies whose reason is an MCM code name; a body without one falls
back on the HTTP status, and a request that got no response at all is ``Unavailable``. Each
request is one request to the cloud's ``compute`` service in MCM's cloud API metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

import msgspec

from kubetrio.api.core import PersistentVolume
from kubetrio.api.machine import Machine, MachineClass
from kubetrio.controllers.clusters import TARGET
from kubetrio.controllers.machine.driver.codes import Code, MachineError
from kubetrio.controllers.machine.driver.driver import CreateResult, SecretData, StatusResult
from kubetrio.controllers.machine.driver.registry import DriverRegistry
from kubetrio.controllers.machine.provider_metrics import ProviderMetrics, provider_metrics
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager

PROVIDER = "sim"
CSI_DRIVER = "sim.csi.kubetrio.io"
SERVICE = "compute"  # the cloud API service, in mcm_cloud_api_* metrics
DEFAULT_PREFIX = "/_cloud/v1"
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


class SimDriver:
    """Implements ``Driver`` against the simulated cloud reachable through ``client``."""

    def __init__(
        self, client: Client, prefix: str = DEFAULT_PREFIX, metrics: ProviderMetrics | None = None
    ) -> None:
        self.client = client
        self.prefix = prefix.rstrip("/")
        self.metrics = metrics

    async def create_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> CreateResult:
        answer = await self._vm("create", machine, machine_class)
        return CreateResult(provider_id=answer.provider_id, node_name=answer.node_name)

    async def initialize_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        answer = await self._vm("initialize", machine, machine_class)
        return StatusResult(provider_id=answer.provider_id, node_name=answer.node_name)

    async def delete_machine(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> str:
        await self._vm("delete", machine, machine_class)
        return ""

    async def get_machine_status(
        self, machine: Machine, machine_class: MachineClass, secret_data: SecretData
    ) -> StatusResult:
        answer = await self._vm("status", machine, machine_class)
        return StatusResult(provider_id=answer.provider_id, node_name=answer.node_name)

    async def list_machines(
        self, machine_class: MachineClass, secret_data: SecretData
    ) -> dict[str, str]:
        payload = await self._call("list", {"machineClass": _class_body(machine_class)})
        return _decode(payload, _ListAnswer, "list").machines

    async def get_volume_ids(self, pvs: Sequence[PersistentVolume]) -> dict[str, str]:
        """The sim cloud owns the CSI volumes of its own driver; the answer is keyed by PV name,
        so unrelated volumes simply do not appear."""
        return {
            pv.name: pv.spec.csi.volume_handle
            for pv in pvs
            if pv.spec.csi is not None and pv.spec.csi.driver == CSI_DRIVER
        }

    async def _vm(self, op: str, machine: Machine, machine_class: MachineClass) -> _VmAnswer:
        body = {
            "machine": {
                "name": machine.name,
                "namespace": machine.namespace,
                "providerID": machine.spec.provider_id,
            },
            "machineClass": _class_body(machine_class),
        }
        return _decode(await self._call(op, body), _VmAnswer, op)

    async def _call(self, op: str, body: dict[str, Any]) -> bytes:
        recorded: AbstractContextManager[None] = (
            nullcontext() if self.metrics is None else self.metrics.request(PROVIDER, SERVICE)
        )
        with recorded:
            try:
                return await self.client.request(
                    "POST", f"{self.prefix}/{op}", body=msgspec.json.encode(body)
                )
            except ApiError as error:
                raise machine_error(error) from None


def machine_error(error: ApiError) -> MachineError:
    """The MCM code of a failed cloud request: the reason when it names a code, else the HTTP
    status; no response at all (status 0) is ``Unavailable``."""
    if error.status == 0:
        return MachineError(Code.Unavailable, "the cloud API did not respond")
    try:
        code = Code.from_name(error.reason)
    except ValueError:
        code = _BY_HTTP_STATUS.get(
            error.status, Code.Internal if error.status >= 500 else Code.Unknown
        )
    return MachineError(code, error.message or f"cloud API answered {error.status}")


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
    client: Client,
    prefix: str = DEFAULT_PREFIX,
    metrics: ProviderMetrics | None = None,
) -> None:
    """Register the ``sim`` driver, talking to the cloud behind ``client``'s API server URL."""
    registry.register(PROVIDER, SimDriver(client, prefix, metrics))


def register_for_manager(registry: DriverRegistry, manager: Manager) -> None:
    """The ``sim`` plug-in: the simulated cloud behind the target cluster's API server URL (its
    VMs join that cluster). Its calls share the connection pool but not the Kubernetes client's
    rate limit (a cloud's API has its own), nor its ``rest_client_*`` metrics."""
    target = manager.cluster(TARGET).client
    cloud = Client(target.wire, qps=0, timeout=target.timeout)
    if manager.fence is not None:
        cloud = cloud.fenced(manager.fence)  # VM changes leave only while the lease is proven
    registry.register(PROVIDER, SimDriver(cloud, metrics=provider_metrics(manager.registry)))
