"""The Kubernetes REST API over the store, one module per verb as kube-apiserver's
``endpoints/handlers`` are (get.go, create.go, update.go, patch.go, delete.go, watch.go): a
verb's rules can be read, and compared with kube's, in one place.

``KubeApi`` (``kubeapi``) is what the emulator's server mounts: audit, errors as Status, the
non-resource paths and access reviews; ``requestinfo`` names the target and verb of a URL,
``dispatch`` counts, faults and hands a resource request to its verb. What the verbs share is
in small modules of its own: ``scope`` (the request's target and the backend every handler
works against), ``params`` (query parameters), ``body`` (request bodies), ``response`` (content
negotiation of answers), ``versions`` (CRD version conversion) and ``admit`` (admission
webhooks)."""

from kubetrio.emulator.handlers.kubeapi import KubeApi
from kubetrio.emulator.handlers.scope import ApiSettings

__all__ = ["ApiSettings", "KubeApi"]
