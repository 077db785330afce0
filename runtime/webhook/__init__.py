"""Admission and conversion webhooks served by the manager (controller-runtime's ``webhook``).

    async def default_machine(obj: Machine, request: AdmissionRequest) -> Machine:
        if not obj.spec.provider_id:
            ...  # fill in defaults on the typed object
        return obj

    class MachineValidator:
        async def validate_create(self, obj: Machine, request: AdmissionRequest) -> list[str]:
            if obj.metadata.name.startswith("tmp-"):
                raise Denied("metadata.name: tmp- names are reserved", code=422)
            return ["spec.class.name: consider a class per zone"]  # warnings
        async def validate_update(self, old, new, request): return None
        async def validate_delete(self, obj, request): return None

    manager = Manager(client, webhook_cert_path=Path("/tmp/k8s-webhook-server/serving-certs"))
    manager.webhook(Machine).defaulter(default_machine).validator(MachineValidator())
    await manager.run()  # serves https://:9443/mutate-machine-sapcloud-io-v1alpha1-machine, …

``admission`` has the handler semantics (typed objects, ``Denied``, warnings, dry-run),
``patch`` how a defaulter's result becomes a JSON patch without dropping unknown fields,
``conversion`` the CRD converters, ``server`` serving (TLS, timeouts, metrics, ``/readyz``),
``review`` the wire types.
"""

from kubetrio.runtime.webhook.admission import Defaulter, Denied, Validator
from kubetrio.runtime.webhook.builder import WebhookBuilder, mutating_path, validating_path
from kubetrio.runtime.webhook.conversion import Converter
from kubetrio.runtime.webhook.review import AdmissionRequest, AdmissionResponse
from kubetrio.runtime.webhook.server import WebhookServer

__all__ = [
    "AdmissionRequest",
    "AdmissionResponse",
    "Converter",
    "Defaulter",
    "Denied",
    "Validator",
    "WebhookBuilder",
    "WebhookServer",
    "mutating_path",
    "validating_path",
]
